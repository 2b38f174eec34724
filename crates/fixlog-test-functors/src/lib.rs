//! User-defined functors for Fixlog's tests (`crates/fixlog/tests/functors.rs`), with
//! Soufflé's ABI as `crates/fixlog/include/fixlog_functors.h` describes it. No
//! dependencies, so the tests can also build it with `rustc` alone.
#![allow(clippy::missing_safety_doc)]

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};

thread_local! {
    /// The last symbol returned on this thread (Fixlog copies it at once).
    static RESULT: RefCell<CString> = RefCell::new(CString::default());
}

fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: Fixlog passes NUL-terminated strings valid during the call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn give(s: String) -> *const c_char {
    RESULT.with(|r| {
        *r.borrow_mut() = CString::new(s).unwrap_or_default();
        r.borrow().as_ptr()
    })
}

/// `.functor add1(x: number): number`
#[no_mangle]
pub extern "C" fn add1(x: i32) -> i32 {
    x.wrapping_add(1)
}

/// `.functor umax(a: unsigned, b: unsigned): unsigned`
#[no_mangle]
pub extern "C" fn umax(a: u32, b: u32) -> u32 {
    a.max(b)
}

/// `.functor half(x: float): float`
#[no_mangle]
pub extern "C" fn half(x: f32) -> f32 {
    x / 2.0
}

/// `.functor greet(a: symbol, b: symbol): symbol` — `a` + ", " + `b`.
#[no_mangle]
pub extern "C" fn greet(a: *const c_char, b: *const c_char) -> *const c_char {
    give(format!("{}, {}", text(a), text(b)))
}

/// `.functor mixed(n: number, f: float, s: symbol, u: unsigned, g: float): float` —
/// n + f + strlen(s) + u + 10 * g (integer and float arguments interleaved).
#[no_mangle]
pub extern "C" fn mixed(n: i32, f: f32, s: *const c_char, u: u32, g: f32) -> f32 {
    n as f32 + f + text(s).len() as f32 + u as f32 + 10.0 * g
}

/// `.functor shout(s: symbol): symbol` — NULL (no result) for the empty string.
#[no_mangle]
pub extern "C" fn shout(s: *const c_char) -> *const c_char {
    let t = text(s);
    if t.is_empty() {
        return std::ptr::null();
    }
    give(t.to_uppercase())
}

/// `.functor slen(s: symbol): number`
#[no_mangle]
pub extern "C" fn slen(s: *const c_char) -> i32 {
    text(s).len() as i32
}

/// The symbol table a stateful functor receives (`fixlog_symbol_table`).
#[repr(C)]
pub struct SymbolTable {
    ctx: *const c_void,
    decode: extern "C" fn(*const c_void, i32) -> *const c_char,
    encode: extern "C" fn(*const c_void, *const c_char) -> i32,
}

/// `.functor tag(s: symbol, n: number): symbol stateful` — `s` + "#" + `n`.
#[no_mangle]
pub unsafe extern "C" fn tag(
    st: *const SymbolTable,
    _records: *const c_void,
    s: i32,
    n: i32,
) -> i32 {
    let st = &*st;
    let name = text((st.decode)(st.ctx, s));
    let out = CString::new(format!("{name}#{n}")).unwrap_or_default();
    (st.encode)(st.ctx, out.as_ptr())
}

/// `.functor twice(n: number): number stateful`
#[no_mangle]
pub extern "C" fn twice(_st: *const c_void, _records: *const c_void, n: i32) -> i32 {
    n.wrapping_mul(2)
}
