//! Kernel symbols as `%pS` prints them, `name+0xOFF/0xLEN [module]`: the one grammar of them
//! (`FN`, a regex, and `fast_fn`, its hand-written fast path for the common shape). Read by the
//! initcall_debug scan (initcall.rs) in `calling`, `returned` and fixup lines.

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
