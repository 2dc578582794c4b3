//! Kernel symbols as `%pS` prints them, `name+0xOFF/0xLEN [module]`: the one grammar of them
//! (`FN`, a regex, and `fast_fn`, its hand-written fast path for the common shape). Read by the
//! initcall_debug scan (initcall.rs) in `calling`, `returned` and fixup lines, and by
//! `initcall_func` in the fields of ftrace's initcall events (for bootlens/parsers/ftrace.py).

// once_cell, not std::sync::OnceLock: that needs Rust 1.70, and Debian 12 ships 1.63
use once_cell::sync::OnceCell;
use pyo3::prelude::*;
use regex::bytes::Regex;

/// A kernel symbol: the name (group 1, lazy: it ends where the rest matches), an optional
/// `+0x<hex>/0x<hex>` offset and length, an optional ` [module]` (group 2). ASCII classes
/// (`(?-u)`, as Python's `re.ASCII`).
pub(crate) const FN: &str = r"(\S+?)(?:\+0x[0-9a-f]+/0x[0-9a-f]+)?(?: \[([^\]\s]+)\])?";

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Fast path for `FN` followed by `tail` at the start of `b`, for the common shape only:
/// a name without '+' or '[', an optional `+0x<hex>/0x<hex>`, an optional ` [module]`.
/// Within that shape the lazy regex has exactly one way to match, so the captures are the
/// same; anything else returns None and the caller uses the regex.
#[allow(clippy::type_complexity)]
pub(crate) fn fast_fn<'a>(b: &'a [u8], tail: &[u8]) -> Option<(&'a [u8], Option<&'a [u8]>, usize)> {
    // one pass: the token's end, its first '+', whether it holds a '['
    let mut run = b.len();
    let mut plus = None;
    let mut bracket = false;
    for (k, &c) in b.iter().enumerate() {
        if is_space(c) {
            run = k;
            break;
        }
        if c == b'+' && plus.is_none() {
            plus = Some(k);
        }
        bracket |= c == b'[';
    }
    if run == 0 || bracket {
        return None;
    }
    let tok = &b[..run];
    let name_end = match plus {
        None => run,
        Some(p) => {
            let off = &tok[p..];
            // +0x<hex>/0x<hex>, exactly, to the end of the token
            if !off.starts_with(b"+0x") {
                return None;
            }
            let h1 = off[3..].iter().take_while(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')).count();
            let rest = &off[3 + h1..];
            if h1 == 0 || !rest.starts_with(b"/0x") {
                return None;
            }
            let h2 = rest[3..].iter().take_while(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')).count();
            if h2 == 0 || 3 + h2 != rest.len() {
                return None;
            }
            p
        }
    };
    let name = &tok[..name_end];
    if name.is_empty() {  // no '[' in the token, no '+' before plus
        return None;
    }
    let mut q = run;
    let mut module = None;
    if b[q..].starts_with(b" [") {
        let m = b[q + 2..].iter().take_while(|c| **c != b']' && !is_space(**c)).count();
        if m == 0 || b.get(q + 2 + m) != Some(&b']') {
            return None;
        }
        module = Some(&b[q + 2..q + 2 + m]);
        q += 3 + m;
    }
    if !b[q..].starts_with(tail) {
        return None;
    }
    Some((name, module, q + tail.len()))
}

/// The fields of ftrace's initcall:initcall_start and initcall_finish events (include/trace/
/// events/initcall.h: `func=%pS`, and ` ret=%d` for initcall_finish), then only whitespace.
fn initcall_fields() -> &'static Regex {
    static RX: OnceCell<Regex> = OnceCell::new();
    RX.get_or_init(|| Regex::new(&format!(r"(?-u)^func={FN}(?: ret=(-?\d+))?\s*$")).expect("static regex"))
}

/// initcall_func(fields) -> (name, module or None, ret or None) or None: the symbol of an
/// initcall event's fields (`func=fuse_init+0x0/0x30 [fuse] ret=0`), read by `FN` as the
/// initcall_debug lines are; `ret` as written (parsers/ftrace.py, which calls this, bounds it).
#[pyfunction]
pub(crate) fn initcall_func(fields: &str) -> Option<(String, Option<String>, Option<String>)> {
    let c = initcall_fields().captures(fields.as_bytes())?;
    // each group starts and ends at an ASCII byte or the text's end: whole UTF-8 sequences
    let text = |i: usize| c.get(i).map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned());
    Some((text(1).unwrap_or_default(), text(2), text(3)))
}
