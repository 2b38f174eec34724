//! The preprocessor never panics, overflows its stack or hangs on any input: random
//! lines made of directives, macro definitions and uses, and random bytes.

use fixlog_syntax::preprocess::{preprocess, PreprocessOptions};
use fixlog_syntax::{parse_str, SourceMap, Span};
use proptest::prelude::*;

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("#define A B B\n".to_string()),
        Just("#define B A\n".to_string()),
        Just("#define F(x, y) F(x y, x) # x y ## x\n".to_string()),
        Just("#define G(...) __VA_ARGS__ G(__VA_ARGS__)\n".to_string()),
        Just("#undef A\n".to_string()),
        Just("#if A || defined(B) && (1 / 0)\n".to_string()),
        Just("#if ((((1 ? 2 : 3\n".to_string()),
        Just("#ifdef F\n".to_string()),
        Just("#ifndef\n".to_string()),
        Just("#elif 2 > 1\n".to_string()),
        Just("#else\n".to_string()),
        Just("#endif\n".to_string()),
        Just("#include \"nowhere.dl\"\n".to_string()),
        Just("#include <\n".to_string()),
        Just("#pragma once\n".to_string()),
        Just("#error x\n".to_string()),
        Just("#\n".to_string()),
        Just("# 12 \"x\"\n".to_string()),
        Just("A F(1, 2) G(a, (b, c)) F(\n".to_string()),
        Just("r(A, \"A /* F(1)\", __LINE__). // A\n".to_string()),
        Just("/* A\n".to_string()),
        Just("*/ \\\n".to_string()),
        "[ -~\\n#\\\\()\"/*,]{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn preprocessing_random_programs_never_panics(pieces in proptest::collection::vec(piece(), 0..40)) {
        let text: String = pieces.concat();
        let mut sm = SourceMap::new();
        let f = sm.add_text("t.dl", &text);
        match preprocess(&mut sm, f, &PreprocessOptions::default()) {
            Ok(id) => {
                // Every position of the output maps back into the original text.
                let n = sm.file(id).text.len();
                for at in [0, n / 2, n.saturating_sub(1), n] {
                    let s = sm.resolve(Span::new(id, at, at + 1));
                    prop_assert!(s.start as usize <= sm.file(s.file).text.len());
                    let _ = sm.location(s);
                }
            }
            Err(errors) => {
                for e in errors {
                    let _ = e.render(&sm);
                }
            }
        }
        let mut sm = SourceMap::new();
        if let Err(e) = parse_str("t.dl", &text, &mut sm) {
            let _ = e.render(&sm);
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let mut sm = SourceMap::new();
        if let Err(e) = parse_str("t.dl", &text, &mut sm) {
            let _ = e.render(&sm);
        }
    }
}
