//! The host and printk prefixes of a console line, read by hand (the patterns in each doc, with
//! ASCII classes): printk's `[ 1.234567]` with its optional level and caller id, grabserial's
//! -t (elapsed time and delta) and -T (wall clock) stamps, journalctl's short-monotonic host and
//! identifier. The one reader of each: the framing pass (frame.rs `frame_line`) and, exposed to
//! Python, bootlens/lines.py and framings.py (`printk_prefix`, `grabserial_sys_prefix`,
//! `detect_framing`) and quirks.py (`grabserial_t_delta`).

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::num::{digits, num};

/// `\[ *` at p: the end, or None.
fn open_bracket(b: &[u8], p: usize) -> Option<usize> {
    if b.get(p) != Some(&b'[') {
        return None;
    }
    Some(p + 1 + b[p + 1..].iter().take_while(|c| **c == b' ').count())
}

/// `\[ *[TC]\d+\]` at p: the CONFIG_PRINTK_CALLER id. Returns the end or None.
fn caller_id(b: &[u8], p: usize) -> Option<usize> {
    let mut q = open_bracket(b, p)?;
    if !matches!(b.get(q), Some(b'T') | Some(b'C')) {
        return None;
    }
    q += 1;
    let d = digits(b, q);
    if d == 0 {
        return None;
    }
    q += d;
    if b.get(q) != Some(&b']') {
        return None;
    }
    Some(q + 1)
}

/// `\[ *(\d{1,10})\.(\d{6})` at p: the seconds part shared by printk and grabserial stamps
/// (both print exactly six decimals). Returns (end, nanoseconds), exact: ten digits of seconds
/// fit a u64 in ns; whether the time is in range is for the Python pass after framing
/// (quirks.settle), the same for both framings.
fn seconds(b: &[u8], p: usize) -> Option<(usize, u64)> {
    let mut q = open_bracket(b, p)?;
    let d = digits(b, q);
    if d == 0 || d > 10 {
        return None;
    }
    let sec = num(&b[q..q + d]);
    q += d;
    if b.get(q) != Some(&b'.') {
        return None;
    }
    q += 1;
    let f = digits(b, q);
    if f != 6 {
        return None;
    }
    let mut frac = num(&b[q..q + f]);
    for _ in f..9 {
        frac *= 10;
    }
    Some((q + f, sec * 1_000_000_000 + frac))
}

/// `\[ *(\d{1,10})\.(\d{6})(?:@\d{1,4})?\](?:\[ *[TC]\d+\])? ?` at p (the bracket part of a printk prefix).
fn stamp(b: &[u8], p: usize) -> Option<(usize, u64)> {
    let (mut q, ns) = seconds(b, p)?;
    // Amlogic's kernels print the CPU after the time: `[    5.434249@0]`
    if b.get(q) == Some(&b'@') {
        let d = digits(b, q + 1);
        if (1..=4).contains(&d) {
            q += 1 + d;
        }
    }
    if b.get(q) != Some(&b']') {
        return None;
    }
    q += 1;
    if let Some(e) = caller_id(b, q) {
        q = e;
    }
    if b.get(q) == Some(&b' ') {
        q += 1;
    }
    Some((q, ns))
}

/// `[ \t]*(?:<\d{1,3}>)?` + stamp: a printk prefix at the start of `b[p..]`.
fn printk(b: &[u8], p: usize) -> Option<(usize, u64)> {
    let mut q = p;
    while matches!(b.get(q), Some(b' ') | Some(b'\t')) {
        q += 1;
    }
    if b.get(q) == Some(&b'<') {
        let d = digits(b, q + 1);
        if (1..=3).contains(&d) && b.get(q + 1 + d) == Some(&b'>') {
            q += d + 2;
        }
    }
    stamp(b, q)
}

/// grabserial -t: `\[ *(\d{1,10})\.(\d{6}) +-?\d+\.\d{6}\] ?` at the start.
fn grabserial_t(b: &[u8]) -> Option<(usize, u64)> {
    grabserial_t_parts(b).map(|(e, ns, ..)| (e, ns))
}

/// grabserial_t and the delta: (end, elapsed ns, the delta negative, where the delta's whole
/// part starts, where its point is). Nothing allocated: frame reads every line of a capture here.
fn grabserial_t_parts(b: &[u8]) -> Option<(usize, u64, bool, usize, usize)> {
    let (mut q, ns) = seconds(b, 0)?;
    let sp = b[q..].iter().take_while(|c| **c == b' ').count();
    if sp == 0 {
        return None;
    }
    q += sp;
    let neg = b.get(q) == Some(&b'-');
    if neg {
        q += 1;
    }
    let d2 = digits(b, q);
    if d2 == 0 {
        return None;
    }
    let whole = q;
    q += d2;
    if b.get(q) != Some(&b'.') || digits(b, q + 1) != 6 || b.get(q + 7) != Some(&b']') {
        return None;
    }
    let point = q;
    q += 8;
    if b.get(q) == Some(&b' ') {
        q += 1;
    }
    Some((q, ns, neg, whole, point))
}

/// grabserial_t_delta(text) -> (negative, microsecond digits) or None: the delta of a grabserial
/// -t prefix at the start of `text` (the time since the line before), for the host-restart
/// quirk (bootlens.read.quirks.host_restarts).
#[pyfunction]
pub(crate) fn grabserial_t_delta(text: &Bound<'_, PyString>) -> PyResult<Option<(bool, String)>> {
    let b = text.to_str()?.as_bytes();
    // the delta's digits without its point (ASCII digits: from_utf8 cannot fail)
    Ok(grabserial_t_parts(b).map(|(_, _, neg, whole, point)| {
        let digits = [&b[whole..point], &b[point + 1..point + 7]].concat();
        (neg, String::from_utf8(digits).unwrap_or_default())
    }))
}

/// grabserial -T: `\[(\d\d):(\d\d):(\d\d)\.(\d{6})(?: +-?\d+\.\d{6})?\] ?` at the start (the
/// wall clock and, unless turned off, the delta). Returns (end, ns since midnight).
fn grabserial_sys(b: &[u8]) -> Option<(usize, u64)> {
    let two = |q: usize| -> Option<u64> {
        (digits(b, q) >= 2).then(|| num(&b[q..q + 2]))
    };
    if b.first() != Some(&b'[') {
        return None;
    }
    let h = two(1)?;
    if b.get(3) != Some(&b':') {
        return None;
    }
    let m = two(4)?;
    if b.get(6) != Some(&b':') {
        return None;
    }
    let sec = two(7)?;
    if b.get(9) != Some(&b'.') || digits(b, 10) < 6 {
        return None;
    }
    let us = num(&b[10..16]);
    let mut q = 16;
    if b.get(q) == Some(&b' ') {
        // the delta, " +-?\d+\.\d{6}", or nothing of it (then the bracket must close here)
        let mut r = q + b[q..].iter().take_while(|c| **c == b' ').count();
        if b.get(r) == Some(&b'-') {
            r += 1;
        }
        let d = digits(b, r);
        if d > 0 && b.get(r + d) == Some(&b'.') && digits(b, r + d + 1) == 6 {
            q = r + d + 7;
        }
    }
    if b.get(q) != Some(&b']') {
        return None;
    }
    q += 1;
    if b.get(q) == Some(&b' ') {
        q += 1;
    }
    Some((q, ((h * 60 + m) * 60 + sec) * 1_000_000_000 + us * 1_000))
}

/// The byte offset of character `start` in `s` (`s.len()` past the end).
fn byte_at(s: &str, start: usize) -> usize {
    s.char_indices().nth(start).map_or(s.len(), |(i, _)| i)
}

/// printk_prefix(text, start=0) -> (end, ns) or None: the printk prefix at character `start`
/// of `text` (`[ \t]*(?:<\d{1,3}>)?\[ *(\d{1,10})\.(\d{6})\](?:\[ *[TC]\d+\])? ?`), as frame
/// reads it: the one reader of it, for the framings framed in Python (grabserial -T, dmesg -T,
/// the journals' console form). `end` is a character index (the prefix is ASCII).
#[pyfunction]
#[pyo3(signature = (text, start=0))]
pub(crate) fn printk_prefix(text: &Bound<'_, PyString>, start: usize) -> PyResult<Option<(usize, u64)>> {
    let s = text.to_str()?;
    let at = byte_at(s, start);
    Ok(printk(s.as_bytes(), at).map(|(e, ns)| (start + (e - at), ns)))
}

/// grabserial_sys_prefix(text) -> (end, ns since midnight) or None: a grabserial -T prefix at
/// the start of `text` (`end` a character index: the prefix is ASCII).
#[pyfunction]
pub(crate) fn grabserial_sys_prefix(text: &Bound<'_, PyString>) -> PyResult<Option<(usize, u64)>> {
    Ok(grabserial_sys(text.to_str()?.as_bytes()))
}

/// detect_framing(sample) -> "grabserial-t", "grabserial-T", "journalctl" or None: the host
/// prefix most of the sample's (non-blank) lines carry, read by the matchers frame uses: half
/// the lines or more with a grabserial -t stamp, else with a grabserial -T one, else half or
/// more in journalctl's short-monotonic form (a printk stamp, then `host ident: `) with at
/// least one kernel line (`host kernel: `; a plain dmesg's "driver device: message" lines have
/// the user-space form's shape). None: for the Python framings (bootlens.read.framings.detect).
#[pyfunction]
pub(crate) fn detect_framing(sample: Vec<String>) -> Option<&'static str> {
    let n = sample.len();
    if n == 0 {
        return None;
    }
    let count = |f: &dyn Fn(&[u8]) -> bool| sample.iter().filter(|s| f(s.as_bytes())).count();
    if count(&|b| grabserial_t(b).is_some()) * 2 >= n {
        return Some("grabserial-t");
    }
    if count(&|b| grabserial_sys(b).is_some()) * 2 >= n {
        return Some("grabserial-T");
    }
    let (mut journal_lines, mut kernel_form) = (0usize, false);
    for s in &sample {
        let b = s.as_bytes();
        if let Some((e, _)) = printk(b, 0) {
            if journal(b, e).is_some() {
                journal_lines += 1;
                // `\S+ kernel: ` at e: the host's run, then " kernel: "
                let run = b[e..].iter().take_while(|c| !is_space(**c)).count();
                kernel_form |= b[e + run..].starts_with(b" kernel: ");
            }
        }
    }
    (journal_lines * 2 >= n && kernel_form).then_some("journalctl")
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// journalctl short-monotonic at p: `\S+ kernel: ` (the message follows), or `\S+ ` before
/// `[^\s\[:]+(?:\[\d+\])?: ` (an identifier, kept as text). ASCII whitespace, as lines._JOURNAL.
fn journal(b: &[u8], p: usize) -> Option<usize> {
    let run = b[p..].iter().take_while(|c| !is_space(**c)).count();
    if run == 0 || b.get(p + run) != Some(&b' ') {
        return None;
    }
    let host_end = p + run + 1;
    if b[host_end..].starts_with(b"kernel: ") {
        return Some(host_end + 8);
    }
    let ident = b[host_end..].iter().take_while(|c| !is_space(**c) && **c != b'[' && **c != b':').count();
    if ident == 0 {
        return None;
    }
    let mut q = host_end + ident;
    if b.get(q) == Some(&b'[') {
        let d = digits(b, q + 1);
        if d == 0 || b.get(q + 1 + d) != Some(&b']') {
            return None;
        }
        q += d + 2;
    }
    if b[q..].starts_with(b": ") {
        Some(host_end)
    } else {
        None
    }
}

/// Frame one line: (text start, kernel ns, host ns).
pub(crate) fn frame_line(b: &[u8], framing: u8) -> (usize, Option<u64>, Option<u64>) {
    let mut pos = 0;
    let mut host = None;
    if framing == b't' {
        if let Some((e, h)) = grabserial_t(b) {
            pos = e;
            host = Some(h);
        }
    }
    let mut kernel = None;
    if let Some((e, k)) = printk(b, pos) {
        pos = e;
        kernel = Some(k);
    }
    if framing == b'j' {
        if let Some(e) = journal(b, pos) {
            pos = e;
        }
    }
    // stamps elsewhere in the line (glued after console text, quoted by a test) are read by
    // the Python quirks pass after either framing (bootlens/quirks.py)
    (pos, kernel, host)
}
