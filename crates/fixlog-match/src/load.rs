//! Reading graph files: edge lists and node-label lists, plain or gzip.
//!
//! * Edges: one edge a line, `src dst [type]`, fields separated by tabs or spaces (SNAP
//!   files load as distributed). Lines whose first non-blank character is `#` are
//!   comments; blank lines are skipped.
//! * Nodes: `id labels` with the labels separated by commas (`7<TAB>Person,Admin`); a
//!   line with only an id declares a node without labels.
//!
//! Node ids are non-negative decimal integers below 2^64. Every malformed line is an
//! error naming `file:line:column`. Files are read whole and parsed in parallel chunks
//! of lines (the edge list of a large graph is most of the loading time).

use crate::graph::{Graph, GraphBuilder};
use rayon::prelude::*;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A graph file that cannot be read or has a malformed line.
#[derive(Debug)]
pub enum GraphError {
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// 1-based line and character column.
    Line {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The graph as a whole is unusable (too many nodes).
    Graph(String),
}

impl std::fmt::Display for GraphError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GraphError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            GraphError::Line {
                path,
                line,
                column,
                message,
            } => write!(f, "{}:{line}:{column}: {message}", path.display()),
            GraphError::Graph(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for GraphError {}

/// How to read a graph.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Every edge is undirected (stored both ways).
    pub undirected: bool,
}

/// The file's text, gunzipped when it starts with the gzip magic (every member of a
/// multi-member file).
pub fn read_text(path: &Path) -> Result<String, GraphError> {
    let err = |source| GraphError::Read {
        path: path.to_path_buf(),
        source,
    };
    let raw = std::fs::read(path).map_err(err)?;
    let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
        gunzip(&raw).map_err(err)?
    } else {
        raw
    };
    String::from_utf8(bytes).map_err(|e| {
        let (line, column) = line_col(e.as_bytes(), e.utf8_error().valid_up_to());
        GraphError::Line {
            path: path.to_path_buf(),
            line,
            column,
            message: "the file is not UTF-8 text".to_string(),
        }
    })
}

/// Gunzips `raw`: a file of one gzip member in one call to libdeflate
/// ([`gunzip_one_member`]), any other (several members, 4 GiB or more, corrupt) with
/// flate2's streaming decoder, which also reports what is wrong.
fn gunzip(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    if let Some(out) = gunzip_one_member(raw) {
        return Ok(out);
    }
    let mut out = Vec::with_capacity(raw.len().saturating_mul(4));
    flate2::read::MultiGzDecoder::new(raw).read_to_end(&mut out)?;
    Ok(out)
}

/// `raw` gunzipped in one call to libdeflate, when it is exactly one gzip member whose
/// trailer gives the size (the size modulo 2^32: a larger file does not fit the buffer
/// and fails). Inflating a whole buffer into a buffer of the final size, libdeflate is
/// about 1.5 times as fast as zlib-rs streaming. `None` for anything else: the caller
/// then decodes with flate2.
fn gunzip_one_member(raw: &[u8]) -> Option<Vec<u8>> {
    use libdeflate_sys::{
        libdeflate_alloc_decompressor, libdeflate_free_decompressor, libdeflate_gzip_decompress_ex,
        libdeflate_result_LIBDEFLATE_SUCCESS,
    };
    let trailer: [u8; 4] = raw.get(raw.len().checked_sub(4)?..)?.try_into().ok()?;
    let size = u32::from_le_bytes(trailer) as usize;
    // DEFLATE expands at most about 1032 times: a larger size is no trailer of this
    // file, and must not reserve memory.
    if size > raw.len().saturating_mul(1032) {
        return None;
    }
    // Reserved, not zeroed: libdeflate writes every byte before they count (and a
    // size the system refuses is a fallback to flate2, not an abort).
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(size).ok()?;
    // SAFETY: the decompressor is checked non-null, used once and freed once.
    let decompressor = unsafe { libdeflate_alloc_decompressor() };
    if decompressor.is_null() {
        return None;
    }
    let (mut read, mut written) = (0usize, 0usize);
    // SAFETY: the pointers and lengths are those of `raw` and of `out`'s reserved
    // capacity (`size` bytes), which outlive the call; libdeflate reads at most
    // `raw.len()` bytes, writes at most `size` bytes there, and writes the two counts.
    let result = unsafe {
        libdeflate_gzip_decompress_ex(
            decompressor,
            raw.as_ptr().cast(),
            raw.len(),
            out.spare_capacity_mut().as_mut_ptr().cast(),
            size,
            &mut read,
            &mut written,
        )
    };
    // SAFETY: allocated above, not used after.
    unsafe { libdeflate_free_decompressor(decompressor) };
    // The whole input must be that one member (not the first of several).
    if result != libdeflate_result_LIBDEFLATE_SUCCESS || read != raw.len() || written != size {
        return None;
    }
    // SAFETY: libdeflate succeeded and wrote `written == size` bytes from the start of
    // the capacity reserved above.
    unsafe { out.set_len(size) };
    Some(out)
}

fn line_col(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, column)
}

/// Splits `text` into pieces of whole lines of about 1 MiB: `(byte offset, text)`.
/// Line numbers are not counted here (a pass over the whole text on one thread): only
/// an error needs one, and [`add_edges`] counts the lines before its piece then.
fn chunks(text: &str) -> Vec<(usize, &str)> {
    const CHUNK: usize = 1 << 20;
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0usize;
    while start < bytes.len() {
        let mut end = (start + CHUNK).min(bytes.len());
        while end < bytes.len() && bytes[end - 1] != b'\n' {
            end += 1;
        }
        out.push((start, &text[start..end]));
        start = end;
    }
    out
}

/// A line's fields with their byte offsets (separated by runs of spaces and tabs).
fn fields(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = line.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() && (bytes[at] == b' ' || bytes[at] == b'\t') {
            at += 1;
        }
        if at >= bytes.len() {
            return None;
        }
        let start = at;
        while at < bytes.len() && bytes[at] != b' ' && bytes[at] != b'\t' {
            at += 1;
        }
        Some((start, &line[start..at]))
    })
}

/// A node id: decimal digits, below 2^64.
pub fn parse_node_id(field: &str) -> Result<u64, String> {
    let shown = || field.chars().take(40).collect::<String>();
    if field.is_empty() {
        return Err("node ids are non-negative integers, found nothing".to_string());
    }
    let mut value: u64 = 0;
    for b in field.bytes() {
        if !b.is_ascii_digit() {
            return Err(format!(
                "node ids are non-negative integers, found `{}`",
                shown()
            ));
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or_else(|| {
                format!(
                    "node id `{}` is too large (at most 18446744073709551615)",
                    shown()
                )
            })?;
    }
    Ok(value)
}

/// A chunk's edges `(src, dst, type number)` and the type names its numbers index
/// (`u32::MAX`: no type).
pub(crate) type EdgeChunk<'a> = (Vec<(u64, u64, u32)>, Vec<&'a str>);

struct LineError {
    line: usize,
    at: usize,
    line_text_start: usize,
    message: String,
}

/// The common line `src<sep>dst` (`<sep>` spaces and tabs, at most 19 digits an id,
/// an optional `\r`) at `at`, read without splitting: the ids and where the next line
/// starts. `None` for anything else (comments, blank lines, a type, leading or trailing
/// blanks, errors): [`parse_edge_chunk`] then reads the line field by field, which
/// accepts the same lines and locates errors.
#[inline]
fn plain_edge(bytes: &[u8], at: usize) -> Option<(u64, u64, usize)> {
    #[inline]
    fn digits(bytes: &[u8], at: usize) -> Option<(u64, usize)> {
        let mut value = 0u64;
        let mut i = at;
        // 19 digits never overflow a u64; a 20th goes to the checked reader.
        while let Some(&b) = bytes.get(i) {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 || i - at == 19 {
                break;
            }
            value = value * 10 + u64::from(digit);
            i += 1;
        }
        let more = bytes.get(i).is_some_and(u8::is_ascii_digit);
        (i > at && !more).then_some((value, i))
    }
    let (src, mut at) = digits(bytes, at)?;
    let separator = at;
    while matches!(bytes.get(at), Some(b' ' | b'\t')) {
        at += 1;
    }
    if at == separator {
        return None;
    }
    let (dst, mut at) = digits(bytes, at)?;
    if bytes.get(at) == Some(&b'\r') {
        at += 1;
    }
    match bytes.get(at) {
        None => Some((src, dst, at)),
        Some(b'\n') => Some((src, dst, at + 1)),
        Some(_) => None,
    }
}

/// Parses one chunk of an edge list: plain `src dst` lines by [`plain_edge`], any
/// other line field by field.
fn parse_edge_chunk(first_line: usize, chunk: &str) -> Result<EdgeChunk<'_>, LineError> {
    let bytes = chunk.as_bytes();
    let mut edges = Vec::with_capacity(chunk.len() / 10);
    let mut types: Vec<&str> = Vec::new();
    let mut type_numbers: std::collections::HashMap<&str, u32> = Default::default();
    let mut line_start = 0;
    let mut i = 0;
    // Line `i` starts at `line_start`; past the end (after a final newline) is one more,
    // empty line, as `str::split` gives it.
    while line_start <= bytes.len() {
        if let Some((src, dst, next)) = plain_edge(bytes, line_start) {
            edges.push((src, dst, u32::MAX));
            line_start = next;
            i += 1;
            continue;
        }
        let this_start = line_start;
        let end = bytes[line_start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| line_start + p);
        let raw = &chunk[line_start..end];
        line_start = end + 1;
        let line_number = first_line + i;
        i += 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed = line.trim_start_matches([' ', '\t']);
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let error = |at: usize, message: String| LineError {
            line: line_number,
            at,
            line_text_start: this_start,
            message,
        };
        let mut parts = fields(line);
        let (Some((src_at, src)), Some((dst_at, dst))) = (parts.next(), parts.next()) else {
            return Err(error(
                line.len(),
                "expected `src dst` or `src dst type` (node ids separated by a tab or spaces)"
                    .to_string(),
            ));
        };
        let src = parse_node_id(src).map_err(|m| error(src_at, m))?;
        let dst = parse_node_id(dst).map_err(|m| error(dst_at, m))?;
        let edge_type = parts.next().map(|(_, t)| t);
        if let Some((extra_at, _)) = parts.next() {
            return Err(error(
                extra_at,
                "too many fields: an edge is `src dst` or `src dst type`".to_string(),
            ));
        }
        let t = match edge_type {
            None => u32::MAX,
            Some(name) => *type_numbers.entry(name).or_insert_with(|| {
                types.push(name);
                types.len() as u32 - 1
            }),
        };
        edges.push((src, dst, t));
    }
    Ok((edges, types))
}

fn locate(path: &Path, chunk: &str, e: LineError) -> GraphError {
    let line_text = &chunk[e.line_text_start.min(chunk.len())..];
    let column = line_text
        .get(..e.at.min(line_text.len()))
        .map_or(1, |s| s.chars().count() + 1);
    GraphError::Line {
        path: path.to_path_buf(),
        line: e.line,
        column,
        message: e.message,
    }
}

/// Reads a piece of plain edge list into `out` (see [`plain_edges`]): how many edges,
/// or `None` at the first line that is not an untyped edge with 32-bit ids, a comment
/// or blank.
fn plain_chunk(chunk: &str, out: &mut [(u32, u32, u32)]) -> Option<usize> {
    let bytes = chunk.as_bytes();
    let mut at = 0;
    let mut n = 0;
    while at <= bytes.len() {
        if let Some((src, dst, next)) = plain_edge(bytes, at) {
            let slot = out.get_mut(n)?;
            *slot = (u32::try_from(src).ok()?, u32::try_from(dst).ok()?, u32::MAX);
            n += 1;
            at = next;
            continue;
        }
        let end = bytes[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| at + p);
        let line = &chunk[at..end];
        let line = line.strip_suffix('\r').unwrap_or(line);
        let trimmed = line.trim_start_matches([' ', '\t']);
        if !(trimmed.is_empty() || trimmed.starts_with('#')) {
            // Blanks around the ids: read by fields.
            let mut parts = fields(line);
            let (Some((_, src)), Some((_, dst)), None) = (parts.next(), parts.next(), parts.next())
            else {
                return None;
            };
            let id = |field: &str| u32::try_from(parse_node_id(field).ok()?).ok();
            let slot = out.get_mut(n)?;
            *slot = (id(src)?, id(dst)?, u32::MAX);
            n += 1;
        }
        at = end + 1;
    }
    Some(n)
}

/// The edges of an edge list whose lines are all plain `src dst` lines with ids below
/// 2^32 (or comments and blank lines), as `(src, dst, u32::MAX)` in file order, parsed
/// in parallel pieces straight into one list (a line can hold at most one edge, so
/// each piece gets as many slots as it has lines; the gaps comments leave are closed
/// after). `None` when some line is anything else: a type, a larger id, an error.
fn plain_edges(pieces: &[(usize, &str)]) -> Option<Vec<(u32, u32, u32)>> {
    let slots: Vec<usize> = pieces
        .par_iter()
        .map(|&(_, chunk)| chunk.bytes().filter(|&b| b == b'\n').count() + 1)
        .collect();
    let mut edges = vec![(0u32, 0u32, 0u32); slots.iter().sum()];
    let mut parts = Vec::with_capacity(pieces.len());
    let mut rest = edges.as_mut_slice();
    for &n in &slots {
        let (part, tail) = rest.split_at_mut(n);
        parts.push(part);
        rest = tail;
    }
    let counts: Vec<Option<usize>> = parts
        .into_par_iter()
        .zip(pieces.par_iter())
        .map(|(part, &(_, chunk))| plain_chunk(chunk, part))
        .collect();
    let mut kept = 0;
    let mut start = 0;
    for (count, n) in counts.into_iter().zip(slots) {
        let count = count?;
        edges.copy_within(start..start + count, kept);
        kept += count;
        start += n;
    }
    edges.truncate(kept);
    Some(edges)
}

/// Adds the edges of edge-list text to `builder` (`path` names it in errors).
pub fn add_edges(builder: &mut GraphBuilder, text: &str, path: &Path) -> Result<(), GraphError> {
    let pieces = chunks(text);
    if let Some(edges) = plain_edges(&pieces) {
        builder.add_plain_edges(edges);
        return Ok(());
    }
    let parsed: Vec<Result<EdgeChunk<'_>, LineError>> = pieces
        .par_iter()
        .map(|&(_, chunk)| parse_edge_chunk(1, chunk))
        .collect();
    let mut edges = Vec::with_capacity(parsed.len());
    for (result, &(offset, chunk)) in parsed.into_iter().zip(&pieces) {
        match result {
            Ok(piece) => edges.push(piece),
            Err(mut e) => {
                // The first error: its piece's first line is the lines before it.
                e.line += text.as_bytes()[..offset]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count();
                return Err(locate(path, chunk, e));
            }
        }
    }
    builder.add_numbered_edges(edges);
    Ok(())
}

/// Adds the nodes and labels of node-list text to `builder`.
pub fn add_nodes(builder: &mut GraphBuilder, text: &str, path: &Path) -> Result<(), GraphError> {
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed = line.trim_start_matches([' ', '\t']);
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let error = |at: usize, message: String| GraphError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            column: line[..at.min(line.len())].chars().count() + 1,
            message,
        };
        let id_at = line.len() - trimmed.len();
        let id_end = trimmed.find([' ', '\t']).map_or(line.len(), |p| id_at + p);
        let id = parse_node_id(&line[id_at..id_end]).map_err(|m| error(id_at, m))?;
        builder.add_node(id);
        let rest = &line[id_end..];
        let labels_at = id_end + (rest.len() - rest.trim_start_matches([' ', '\t']).len());
        let labels = line[labels_at..].trim_end_matches([' ', '\t']);
        if labels.is_empty() {
            continue;
        }
        let mut at = labels_at;
        for label in labels.split(',') {
            let name = label.trim_matches([' ', '\t']);
            if name.is_empty() {
                return Err(error(
                    at,
                    "empty label (labels are separated by commas)".to_string(),
                ));
            }
            builder.add_label(id, name);
            at += label.len() + 1;
        }
    }
    Ok(())
}

impl Graph {
    /// Reads an edge list and, optionally, a node-label list (see the module docs).
    pub fn load(
        edges: &Path,
        nodes: Option<&Path>,
        options: &LoadOptions,
    ) -> Result<Graph, GraphError> {
        let mut builder = GraphBuilder::new(options.undirected);
        let text = read_text(edges)?;
        add_edges(&mut builder, &text, edges)?;
        drop(text);
        if let Some(nodes) = nodes {
            let text = read_text(nodes)?;
            add_nodes(&mut builder, &text, nodes)?;
        }
        builder.build().map_err(GraphError::Graph)
    }

    /// A graph from edge-list text (and optional node-list text), as [`Graph::load`]
    /// reads files; errors name the file `edges` / `nodes`.
    pub fn from_text(
        edges: &str,
        nodes: Option<&str>,
        options: &LoadOptions,
    ) -> Result<Graph, GraphError> {
        let mut builder = GraphBuilder::new(options.undirected);
        add_edges(&mut builder, edges, Path::new("edges"))?;
        if let Some(nodes) = nodes {
            add_nodes(&mut builder, nodes, Path::new("nodes"))?;
        }
        builder.build().map_err(GraphError::Graph)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parser before [`plain_edge`]: every line split into fields.
    fn parse_by_fields(first_line: usize, chunk: &str) -> Result<EdgeChunk<'_>, LineError> {
        let mut edges = Vec::new();
        let mut types: Vec<&str> = Vec::new();
        let mut line_start = 0;
        for (i, raw) in chunk.split('\n').enumerate() {
            let this_start = line_start;
            line_start += raw.len() + 1;
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            let trimmed = line.trim_start_matches([' ', '\t']);
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let error = |at: usize, message: String| LineError {
                line: first_line + i,
                at,
                line_text_start: this_start,
                message,
            };
            let mut parts = fields(line);
            let (Some((src_at, src)), Some((dst_at, dst))) = (parts.next(), parts.next()) else {
                return Err(error(line.len(), "fields".to_string()));
            };
            let src = parse_node_id(src).map_err(|m| error(src_at, m))?;
            let dst = parse_node_id(dst).map_err(|m| error(dst_at, m))?;
            let edge_type = parts.next().map(|(_, t)| t);
            if let Some((extra_at, _)) = parts.next() {
                return Err(error(extra_at, "too many".to_string()));
            }
            let t = match edge_type {
                None => u32::MAX,
                Some(name) => match types.iter().position(|&t| t == name) {
                    Some(k) => k as u32,
                    None => {
                        types.push(name);
                        types.len() as u32 - 1
                    }
                },
            };
            edges.push((src, dst, t));
        }
        Ok((edges, types))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// The parser with the plain-line reader reads every text as reading every line
        /// by fields does: the same edges and types, or an error at the same place.
        #[test]
        fn plain_lines_parse_as_fields_do(
            tokens in proptest::collection::vec(0usize..16, 0..60),
        ) {
            const TOKENS: [&str; 16] = [
                "0", "7", "42", "1234567890123456789", "12345678901234567890",
                "18446744073709551615", "18446744073709551616", "00", " ", "\t",
                "\n", "\r", "\r\n", "#", "x", "T",
            ];
            let text: String = tokens.iter().map(|&t| TOKENS[t]).collect();
            let fast = parse_edge_chunk(3, &text);
            let slow = parse_by_fields(3, &text);
            match (fast, slow) {
                (Ok(a), Ok(b)) => proptest::prop_assert_eq!(a, b),
                (Err(a), Err(b)) => {
                    proptest::prop_assert_eq!(
                        (a.line, a.at, a.line_text_start),
                        (b.line, b.at, b.line_text_start)
                    );
                    if !a.message.starts_with("expected") && !a.message.starts_with("too many") {
                        proptest::prop_assert_eq!(a.message, b.message);
                    }
                }
                (a, b) => proptest::prop_assert!(
                    false,
                    "{text:?}: {:?} against {:?}",
                    a.map(|c| c.0.len()).map_err(|e| e.message),
                    b.map(|c| c.0.len()).map_err(|e| e.message)
                ),
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Plain edge lists are read into one list exactly as the general reader reads
        /// them (the same edges in the same order), and anything else is left to it.
        #[test]
        fn plain_edge_lists_read_as_the_general_reader(
            tokens in proptest::collection::vec(0usize..14, 0..60),
            plain_only in proptest::prelude::any::<bool>(),
        ) {
            const TOKENS: [&str; 14] = [
                "0", "7", "42", "4294967295", "4294967296", "12345678901234567890", " ",
                "\t", "\n", "\r\n", "#", "x", "T", "\n# c\n",
            ];
            let text: String = tokens
                .iter()
                .filter(|&&t| !plain_only || ![4, 5, 11, 12].contains(&t))
                .map(|&t| TOKENS[t])
                .collect();
            let plain = plain_edges(&chunks(&text));
            let general = parse_edge_chunk(1, &text);
            match (&plain, &general) {
                (Some(p), Ok((g, types))) => {
                    proptest::prop_assert!(types.is_empty());
                    let widened: Vec<(u64, u64, u32)> = p
                        .iter()
                        .map(|&(s, d, t)| (u64::from(s), u64::from(d), t))
                        .collect();
                    proptest::prop_assert_eq!(&widened, g);
                }
                (Some(_), Err(e)) => proptest::prop_assert!(false, "plain, but {}", e.message),
                (None, Ok((g, types))) => proptest::prop_assert!(
                    !types.is_empty() || g.iter().any(|&(s, d, _)| s.max(d) > u64::from(u32::MAX)),
                    "{text:?} is plain"
                ),
                (None, Err(_)) => {}
            }
        }
    }

    /// Plain lists over many pieces, with comments and blank lines leaving gaps in
    /// several of them, read as the general reader reads them.
    #[test]
    fn plain_edge_lists_across_pieces() {
        let mut text = String::from("# header\n");
        let mut i = 0u64;
        while text.len() < 5 << 20 {
            text.push_str(&format!("{}\t{}\n", i % 100_003, (i * 7) % 99_991));
            if i.is_multiple_of(77_777) {
                text.push_str("# a comment\n\n   \r\n");
            }
            i += 1;
        }
        let pieces = chunks(&text);
        assert!(pieces.len() > 3);
        let plain = plain_edges(&pieces).expect("a plain list");
        let general: Vec<(u64, u64, u32)> = pieces
            .iter()
            .flat_map(|&(_, c)| parse_edge_chunk(1, c).map(|p| p.0).unwrap_or_default())
            .collect();
        assert_eq!(plain.len() as u64, i);
        assert!(plain
            .iter()
            .zip(&general)
            .all(|(&(s, d, t), &(gs, gd, gt))| (u64::from(s), u64::from(d), t) == (gs, gd, gt)));
        let typed = format!("{text}1 2 T\n");
        assert!(plain_edges(&chunks(&typed)).is_none());
    }

    /// Gunzipping: one member through libdeflate, several members (also two identical
    /// ones, which a size check alone would take for one) and corrupt data through
    /// flate2, empty and tiny files.
    #[test]
    fn gunzip_single_and_multiple_members() {
        use std::io::Write;
        let gz = |text: &[u8]| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(text).expect("in memory");
            e.finish().expect("in memory")
        };
        let text: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{i}\t{}\n", i * 7 % 1000).into_bytes())
            .collect();
        let one = gz(&text);
        assert_eq!(gunzip_one_member(&one).as_deref(), Some(&text[..]));
        assert_eq!(gunzip(&one).expect("gzip"), text);
        let twice = [one.clone(), one.clone()].concat();
        assert!(gunzip_one_member(&twice).is_none());
        assert_eq!(
            gunzip(&twice).expect("gzip"),
            [&text[..], &text[..]].concat()
        );
        let mixed = [gz(b"1 2\n"), gz(b"3 4\n")].concat();
        assert_eq!(gunzip(&mixed).expect("gzip"), b"1 2\n3 4\n");
        assert_eq!(gunzip(&gz(b"")).expect("gzip"), b"");
        let mut corrupt = one.clone();
        let middle = corrupt.len() / 2;
        corrupt[middle] ^= 0xff;
        assert!(gunzip_one_member(&corrupt).is_none());
        assert!(gunzip(&corrupt).is_err());
        assert!(gunzip(&one[..one.len() - 3]).is_err());
        assert!(gunzip(b"\x1f\x8b").is_err());
    }

    /// Errors name the right line in any piece, and the first bad line of the file
    /// when several pieces have one.
    #[test]
    fn errors_name_lines_across_pieces() {
        let mut text = String::new();
        let mut line = 0;
        while text.len() < 3 << 20 {
            text.push_str("# a comment\n12 34\n\n");
            line += 3;
        }
        text.push_str("5 x\n");
        let bad = line + 1;
        text.push_str(&"1 2\n".repeat(300_000));
        text.push_str("7 8 T 9\n");
        let mut builder = GraphBuilder::new(false);
        let message = match add_edges(&mut builder, &text, Path::new("e.tsv")) {
            Err(e) => e.to_string(),
            Ok(()) => String::new(),
        };
        assert_eq!(
            message,
            format!("e.tsv:{bad}:3: node ids are non-negative integers, found `x`")
        );
        assert!(chunks(&text).len() > 3);
        let fine = text
            .replace("5 x\n", "5 6\n")
            .replace("7 8 T 9\n", "7 8 T\n");
        let graph = Graph::from_text(&fine, None, &LoadOptions::default()).expect("a graph");
        assert_eq!(graph.edge_count(), 4);
    }

    /// Type names numbered per piece by the parallel parser come out the same as
    /// typed edges added one by one.
    #[test]
    fn edge_types_across_pieces() {
        use crate::graph::{AdjacencyKey, Direction};
        let mut text = String::new();
        let mut builder = GraphBuilder::new(false);
        let mut i = 0u64;
        while text.len() < 3 << 20 {
            // Each piece meets the types in another order.
            let t = ["B", "A", "C"][((i / 50_000) + i) as usize % 3];
            text.push_str(&format!("{} {} {t}\n", i % 997, i % 991));
            builder.add_edge(i % 997, i % 991, Some(t));
            i += 1;
        }
        let read = Graph::from_text(&text, None, &LoadOptions::default()).expect("a graph");
        let added = builder.build().expect("a graph");
        for t in ["A", "B", "C"] {
            let key = |g: &Graph| AdjacencyKey {
                direction: Direction::Out,
                edge_type: g.edge_type_number(t),
            };
            let (a, b) = (read.adjacency(key(&read)), added.adjacency(key(&added)));
            assert_eq!(a.csr(), b.csr(), "type {t}");
            assert!(a.edge_count() > 0);
        }
    }
}
