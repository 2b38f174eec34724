//! User-defined functors (`.functor f(x: number): number`, called as `@f(x)`): their
//! implementations are C functions of shared libraries (`-l NAME` loads `libNAME.so`
//! from the `-L` directories, then the working directory; Soufflé's default is `-l
//! functors`). The ABI is Soufflé's, described in `include/fixlog_functors.h`:
//!
//! - a stateless functor takes `number` as `int32_t`, `unsigned` as `uint32_t`, `float`
//!   as `float`, `symbol` as `const char*` (valid during the call), and returns one of
//!   these (a returned `const char*` is copied; NULL makes the rule not fire);
//! - a `stateful` one takes `(fixlog_symbol_table*, void* records, RamDomain...)`: every
//!   value as its 32-bit id, symbols decoded and encoded through the table's function
//!   pointers (the record table pointer is NULL: records cannot be passed).
//!
//! Calls are made with one signature whatever the declaration: up to 6 integer-class
//! arguments (integers, pointers) in the integer argument registers and up to 8 floats
//! in the vector registers, which on x86-64 (System V) and AArch64 (AAPCS64) are
//! assigned independently of each other, so a function with fewer parameters reads
//! exactly its own. Larger functors are rejected at their declaration.

use fixlog_logical::symbols::FunctorFn;
use fixlog_logical::{ColType, FunctorDecl, Program, SymbolTable};
use fixlog_syntax::{Diagnostic, Diagnostics};
use libloading::Library;
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where user-defined functors are loaded from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctorLibraries {
    /// Directories searched for libraries (`-L`), before the working directory.
    pub dirs: Vec<PathBuf>,
    /// Library names (`-l NAME` for `libNAME.so`; a name containing `/` or ending in
    /// `.so` is a path). Empty: `functors`, as Soufflé.
    pub libs: Vec<String>,
}

/// Most integer-class (integer, symbol, pointer) arguments of a call.
pub const MAX_INT_ARGS: usize = 6;
/// Most `float` arguments of a call.
pub const MAX_FLOAT_ARGS: usize = 8;

type IntFn = unsafe extern "C" fn(
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    f32,
    f32,
    f32,
    f32,
    f32,
    f32,
    f32,
    f32,
) -> u64;
type FloatFn = unsafe extern "C" fn(
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    f32,
    f32,
    f32,
    f32,
    f32,
    f32,
    f32,
    f32,
) -> f32;

/// The symbol table as a stateful functor sees it (`fixlog_symbol_table` in the header).
#[repr(C)]
struct CSymbolTable {
    ctx: *const c_void,
    decode: extern "C" fn(*const c_void, i32) -> *const c_char,
    encode: extern "C" fn(*const c_void, *const c_char) -> i32,
}

struct CallCtx<'s> {
    symbols: &'s SymbolTable,
    /// Decoded texts, kept until the call returns.
    keep: RefCell<Vec<CString>>,
}

fn c_string(s: &str) -> CString {
    let bytes: Vec<u8> = s.bytes().take_while(|&b| b != 0).collect();
    CString::new(bytes).unwrap_or_default()
}

extern "C" fn decode(ctx: *const c_void, id: i32) -> *const c_char {
    std::panic::catch_unwind(|| {
        // SAFETY: `ctx` is the `CallCtx` of the call in progress (see `call`).
        let ctx = unsafe { &*(ctx as *const CallCtx) };
        let s = c_string(&ctx.symbols.resolve(id as u32));
        let p = s.as_ptr();
        ctx.keep.borrow_mut().push(s);
        p
    })
    .unwrap_or(c"".as_ptr())
}

extern "C" fn encode(ctx: *const c_void, text: *const c_char) -> i32 {
    std::panic::catch_unwind(|| {
        // SAFETY: as in `decode`; `text` is a NUL-terminated string from the functor.
        let ctx = unsafe { &*(ctx as *const CallCtx) };
        if text.is_null() {
            return ctx.symbols.intern("") as i32;
        }
        let s = unsafe { CStr::from_ptr(text) }.to_string_lossy();
        ctx.symbols.intern(&s) as i32
    })
    .unwrap_or(0)
}

/// Finds, loads and binds the program's user-defined functors (nothing to do without
/// `.functor` declarations). Errors name the functor and the libraries.
pub fn bind(program: &mut Program, libraries: &FunctorLibraries) -> Result<(), Diagnostics> {
    if program.functors.is_empty() {
        return Ok(());
    }
    let first = program.functors[0].span;
    let names: Vec<String> = if libraries.libs.is_empty() {
        vec!["functors".into()]
    } else {
        libraries.libs.clone()
    };
    let mut libs: Vec<(String, Arc<Library>)> = Vec::new();
    let mut errors = Vec::new();
    for name in &names {
        match find_library(name, &libraries.dirs) {
            Err(searched) => errors.push(
                Diagnostic::error(
                    format!("cannot find the functor library `{}`", lib_file(name)),
                    first,
                )
                .with_note(format!("searched: {searched}"))
                .with_help("give its directory with `-L DIR` and its name with `-l NAME`"),
            ),
            // SAFETY: loading a library runs its initialisers; the user asked for it.
            Ok(path) => match unsafe { Library::new(&path) } {
                Ok(lib) => libs.push((path.display().to_string(), Arc::new(lib))),
                Err(e) => errors.push(Diagnostic::error(
                    format!("cannot load the functor library `{}`: {e}", path.display()),
                    first,
                )),
            },
        }
    }
    if !errors.is_empty() {
        return Err(Diagnostics(errors));
    }
    let mut bound: Vec<Arc<FunctorFn>> = Vec::new();
    for decl in &program.functors {
        match bind_one(decl, &libs) {
            Ok(f) => bound.push(f),
            Err(d) => errors.push(d),
        }
    }
    if !errors.is_empty() {
        return Err(Diagnostics(errors));
    }
    program.symbols.set_functors(bound);
    Ok(())
}

fn lib_file(name: &str) -> String {
    if name.contains('/') || name.ends_with(".so") || name.contains(".so.") {
        name.to_string()
    } else {
        format!("lib{name}.so")
    }
}

/// The library's path, or the places searched.
fn find_library(name: &str, dirs: &[PathBuf]) -> Result<PathBuf, String> {
    let file = lib_file(name);
    if file.contains('/') {
        let p = PathBuf::from(&file);
        return if p.is_file() { Ok(p) } else { Err(file) };
    }
    let candidates: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join(&file))
        .chain(std::iter::once(Path::new(".").join(&file)))
        .collect();
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| {
            candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        })
}

fn bind_one(
    decl: &FunctorDecl,
    libs: &[(String, Arc<Library>)],
) -> Result<Arc<FunctorFn>, Diagnostic> {
    let name = &decl.name;
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return Err(Diagnostic::error(
            format!(
                "functor `{name}`: user-defined functors are only supported on x86-64 and AArch64"
            ),
            decl.span,
        ));
    }
    let ints = if decl.stateful {
        2 + decl.params.len()
    } else {
        decl.params.iter().filter(|t| **t != ColType::Float).count()
    };
    let floats = if decl.stateful {
        0
    } else {
        decl.params.len() - ints
    };
    if ints > MAX_INT_ARGS || floats > MAX_FLOAT_ARGS {
        return Err(Diagnostic::error(
            format!(
                "functor `{name}` has too many parameters: Fixlog calls functors with at most {MAX_INT_ARGS} integer, symbol or pointer arguments{} and {MAX_FLOAT_ARGS} float ones",
                if decl.stateful { " (the two tables of a stateful functor included)" } else { "" }
            ),
            decl.span,
        ));
    }
    let symbol = c_string(name);
    let found = libs.iter().find_map(|(path, lib)| {
        // SAFETY: the symbol is used as a function of the declared signature, which
        // is the user's contract with the library (as in Soufflé).
        let f = unsafe { lib.get::<*const c_void>(symbol.as_bytes_with_nul()) }.ok()?;
        let p = *f;
        (!p.is_null()).then(|| (path.clone(), lib.clone(), p as usize))
    });
    let Some((_path, lib, addr)) = found else {
        let searched: Vec<&str> = libs.iter().map(|(p, _)| p.as_str()).collect();
        return Err(Diagnostic::error(
            format!(
                "user-defined functor `{name}` is not defined in {}",
                searched.join(", ")
            ),
            decl.span,
        )
        .with_help(format!(
            "export `{name}` from the library with C linkage (`extern \"C\"`)"
        )));
    };
    let params = decl.params.clone();
    let result = decl.result;
    let stateful = decl.stateful;
    Ok(Arc::new(move |args: &[u32], symbols: &SymbolTable| {
        let _keep_loaded = &lib;
        // SAFETY: `addr` is the library's function, kept loaded by `lib`; see the
        // module documentation for why one signature calls every declared one.
        unsafe { call(addr, stateful, &params, result, args, symbols) }
    }))
}

/// Calls the functor at `addr` with `args` (of the declared types `params`).
unsafe fn call(
    addr: usize,
    stateful: bool,
    params: &[ColType],
    result: ColType,
    args: &[u32],
    symbols: &SymbolTable,
) -> Option<u32> {
    let mut ints = [0u64; MAX_INT_ARGS];
    let mut floats = [0f32; MAX_FLOAT_ARGS];
    let (mut ni, mut nf) = (0, 0);
    let ctx = CallCtx {
        symbols,
        keep: RefCell::new(Vec::new()),
    };
    let table = CSymbolTable {
        ctx: &ctx as *const CallCtx as *const c_void,
        decode,
        encode,
    };
    let mut strings: Vec<CString> = Vec::new();
    if stateful {
        ints[0] = &table as *const CSymbolTable as u64;
        ints[1] = 0;
        ni = 2;
        for &a in args {
            ints[ni] = a as i32 as i64 as u64;
            ni += 1;
        }
    } else {
        for (&a, &t) in args.iter().zip(params) {
            match t {
                ColType::Float => {
                    floats[nf] = f32::from_bits(a);
                    nf += 1;
                }
                ColType::Symbol => {
                    let s = c_string(&symbols.resolve(a));
                    ints[ni] = s.as_ptr() as u64;
                    strings.push(s);
                    ni += 1;
                }
                ColType::Number => {
                    ints[ni] = a as i32 as i64 as u64;
                    ni += 1;
                }
                _ => {
                    ints[ni] = a as u64;
                    ni += 1;
                }
            }
        }
    }
    let [i0, i1, i2, i3, i4, i5] = ints;
    let [f0, f1, f2, f3, f4, f5, f6, f7] = floats;
    if result == ColType::Float && !stateful {
        let f: FloatFn = std::mem::transmute::<usize, FloatFn>(addr);
        return Some(f(i0, i1, i2, i3, i4, i5, f0, f1, f2, f3, f4, f5, f6, f7).to_bits());
    }
    let f: IntFn = std::mem::transmute::<usize, IntFn>(addr);
    let r = f(i0, i1, i2, i3, i4, i5, f0, f1, f2, f3, f4, f5, f6, f7);
    drop(strings);
    if result == ColType::Symbol && !stateful {
        let p = r as usize as *const c_char;
        if p.is_null() {
            return None;
        }
        let s = CStr::from_ptr(p).to_string_lossy();
        return Some(symbols.intern(&s));
    }
    Some(r as u32)
}
