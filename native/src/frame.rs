//! Framing: peel grabserial and printk prefixes off each line and index keywords, in one pass.
//! Reference: `frame_text_py` in bootlens/lines.py (regexes compiled with re.ASCII).

use std::mem::MaybeUninit;

use memchr::memmem::Finder;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::columns::{buf_of, SpanSlots, Spans, TextColumn, TimeColumn};
use crate::index::IndexColumn;
use crate::{digits, num};

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

/// `\[ *(\d{1,10})\.(\d{6})\](?:\[ *[TC]\d+\])? ?` at p (the bracket part of a printk prefix).
fn stamp(b: &[u8], p: usize) -> Option<(usize, u64)> {
    let (mut q, ns) = seconds(b, p)?;
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
fn frame_line(b: &[u8], framing: u8) -> (usize, Option<u64>, Option<u64>) {
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

const BLOCK_BYTES: usize = 64 * 1024;
const BLOCK_LINES: usize = 2048;

/// The lines framed since the last needle search: (line, text start, text end) in the buffer.
#[derive(Default)]
struct Block {
    from: usize,
    lines: Vec<(usize, usize, usize)>,
}

impl Block {
    fn push(&mut self, i: usize, start: usize, end: usize) {
        if self.lines.is_empty() {
            self.from = start;
        }
        self.lines.push((i, start, end));
    }

    /// Add to hits[n] each line of the block whose text holds needles[n] (as memmem on the
    /// line's text alone: a match must start at or after the text start, after any prefix,
    /// and end by the line's end), in line order; then empty the block.
    fn search<N: LineNo>(&mut self, body: &[u8], finders: &[Finder], hits: &mut [Vec<N>]) {
        let (from, to) = match (self.lines.first(), self.lines.last()) {
            (Some(first), Some(last)) => (first.1, last.2),
            _ => return,
        };
        for (n, f) in finders.iter().enumerate() {
            let m = f.needle().len();
            if m == 0 {
                hits[n].extend(self.lines.iter().map(|l| N::of(l.0)));
                continue;
            }
            let mut pos = from;
            let mut j = 0usize;
            while pos < to {
                let p = match f.find(&body[pos..to]) {
                    Some(x) => pos + x,
                    None => break,
                };
                while self.lines[j].2 < p {
                    j += 1;
                }
                let (line, start, end) = self.lines[j];
                if p >= start && p + m <= end {
                    hits[n].push(N::of(line));
                    pos = end + 1;
                    j += 1;
                    if j == self.lines.len() {
                        break;
                    }
                } else {
                    pos = p + 1;
                }
            }
        }
        self.lines.clear();
    }
}

/// Below this many bytes `frame` runs on one thread: starting a second (twice) costs ~100 µs
/// (a 4 MiB input frames in ~8 ms).
const SPLIT_MIN: usize = 4 << 20;

/// A line number in the keyword index: u32 while the buffer is under 4 GiB (it then has fewer
/// lines than that), else usize. The index is gathered in its final width: gathered as usize
/// and narrowed after, it cost 12 bytes a hit in fresh pages, not 4 (7.6M hits at 10M lines).
trait LineNo: Copy + Send {
    fn of(i: usize) -> Self;
    fn column(v: Vec<Self>) -> IndexColumn;
}

impl LineNo for u32 {
    fn of(i: usize) -> u32 {
        i as u32
    }

    fn column(v: Vec<u32>) -> IndexColumn {
        IndexColumn::narrow(v)
    }
}

impl LineNo for usize {
    fn of(i: usize) -> usize {
        i
    }

    fn column(v: Vec<usize>) -> IndexColumn {
        IndexColumn::new(v)
    }
}

/// The columns of a run of lines, numbered from 0 within the run.
struct Part<N> {
    spans: Spans,
    kernel: Vec<i64>,
    host: Vec<i64>,
    max_len: usize,
    hits: Vec<Vec<N>>,
    starts: Vec<Vec<N>>,
}

/// What every part of one `frame` call shares: the framing and the keyword tables.
struct Keys<'a> {
    code: u8,
    finders: Vec<Finder<'a>>,
    prefixes: &'a [String],
    by_first: Vec<Vec<usize>>,
}

/// Where `frame_run` puts each line's span and times, in order.
trait Sink {
    fn put(&mut self, start: usize, end: usize, kernel: i64, host: i64);
}

/// The columns grown line by line (one thread: the line count is a guess, 64 bytes a line).
struct Grow {
    spans: Spans,
    kernel: Vec<i64>,
    host: Vec<i64>,
}

impl Sink for Grow {
    fn put(&mut self, start: usize, end: usize, kernel: i64, host: i64) {
        self.spans.push(start, end);
        self.kernel.push(kernel);
        self.host.push(host);
    }
}

/// A run's own slots in columns allocated for every line (two threads: each half writes its
/// lines in place).
struct Slots<'o> {
    spans: SpanSlots<'o>,
    kernel: &'o mut [MaybeUninit<i64>],
    host: &'o mut [MaybeUninit<i64>],
    at: usize,
}

impl<'o> Sink for Slots<'o> {
    fn put(&mut self, start: usize, end: usize, kernel: i64, host: i64) {
        // bounds-checked: a run never writes past its slots (its lines were counted)
        self.spans.put(self.at, start, end);
        self.kernel[self.at].write(kernel);
        self.host[self.at].write(host);
        self.at += 1;
    }
}

/// What a run found besides its columns: the longest text, its keyword index (line numbers
/// from the run's `shift`) and its line count.
struct Found<N> {
    max_len: usize,
    hits: Vec<Vec<N>>,
    starts: Vec<Vec<N>>,
    lines: usize,
}

/// Frame the lines of `body[from..to]` (`to` is body's end or a '\n': the run holds whole
/// lines, and at least one, as a split of body on '\n' would) into `out`; spans are positions
/// in `body`, the run's first line is line `shift`.
fn frame_run<N: LineNo>(body: &[u8], from: usize, to: usize, keys: &Keys, out: &mut impl Sink, shift: usize) -> Found<N> {
    let (finders, prefixes, by_first) = (&keys.finders, keys.prefixes, &keys.by_first);
    let mut hits: Vec<Vec<N>> = (0..finders.len()).map(|_| Vec::new()).collect();
    let mut starts: Vec<Vec<N>> = (0..prefixes.len()).map(|_| Vec::new()).collect();
    let mut max_len = 0usize;  // in characters, as Python's len()
    // The needles are searched a block of lines at a time over the block's bytes, not line by
    // line: seven memmem calls a line were half the pass (1M lines: 0.154 s with the needles,
    // 0.081 s without); one search over 64 KiB costs a call per hit instead.
    let mut block = Block::default();
    let mut at = from;
    let mut i = shift;
    loop {
        // memchr, not split(|c| ..): a SIMD scan for the line end
        let end = memchr::memchr(b'\n', &body[at..to]).map_or(to, |x| at + x);
        let line = &body[at..end];
        let (start, k, h) = frame_line(line, keys.code);
        // start is always on a char boundary: every byte consumed above is ASCII
        let mb = &line[start..];
        if mb.len() > max_len {
            // UTF-8: the characters are the bytes that do not continue a character
            let chars = if mb.is_ascii() { mb.len() } else { mb.iter().filter(|c| (**c & 0xc0) != 0x80).count() };
            max_len = max_len.max(chars);
        }
        if let Some(&b) = mb.first() {
            for &n in &by_first[b as usize] {
                if mb.starts_with(prefixes[n].as_bytes()) {
                    starts[n].push(N::of(i));
                }
            }
        }
        if !finders.is_empty() {
            block.push(i, at + start, end);
            if end - block.from >= BLOCK_BYTES || block.lines.len() >= BLOCK_LINES {
                block.search(body, finders, &mut hits);
            }
        }
        // the time columns' own i64 slots, filled in place (a Vec<Option<u64>> first would cost
        // 16 bytes a line each and a copy)
        out.put(at + start, end, TimeColumn::slot_of(k), TimeColumn::slot_of(h));
        i += 1;
        if end == to {
            break;
        }
        at = end + 1;
    }
    block.search(body, finders, &mut hits);
    Found { max_len, hits, starts, lines: i - shift }
}

/// The lines of `b` as a split on '\n' gives them ('\n' bytes + 1), and when `check`, whether
/// it is UTF-8: None when it is not. One pass a 64 KiB stretch at a time, the count reading
/// what the UTF-8 check just read (a count on its own pass read the 746 MB of a 10M-line log
/// from memory a second time).
fn counted(b: &[u8], check: bool) -> Option<usize> {
    const STRETCH: usize = 64 * 1024;
    let mut n = 1usize;
    let mut at = 0usize;
    while at < b.len() {
        let mut to = (at + STRETCH).min(b.len());
        if check {
            if let Err(e) = std::str::from_utf8(&b[at..to]) {
                // a character cut by the stretch's end is checked with the next stretch
                if e.error_len().is_some() || to == b.len() {
                    return None;
                }
                to = at + e.valid_up_to();
            }
        }
        // memchr's count: AVX2 compares and popcounts (a loop of byte counters was 4x slower)
        n += memchr::memchr_iter(b'\n', &b[at..to]).count();
        at = to;
    }
    Some(n)
}

/// Whether this process may run on two cores or more (its CPU affinity and cgroup quota): a
/// second thread on one core only adds its start and the merge.
pub(crate) fn two_cores() -> bool {
    std::thread::available_parallelism().map_or(false, |n| n.get() >= 2)
}

/// Where to cut `body` for two threads: a '\n' near the middle, or None (one thread).
fn cut_of(body: &[u8], split: i64) -> Option<usize> {
    let at = match split {
        0 => return None,
        k if k > 0 => (k as usize).min(body.len()),
        _ if body.len() < SPLIT_MIN || !two_cores() => return None,
        _ => body.len() / 2,
    };
    memchr::memchr(b'\n', &body[at..]).map(|x| at + x).or_else(|| memchr::memrchr(b'\n', &body[..at]))
}

/// Frame `body` on one thread, or on two cut at `cut_of`; None when `check` and body is not
/// UTF-8. Two threads: each first counts its half's lines (and checks it is UTF-8: a cut at
/// '\n' is a character boundary), then the columns are allocated for every line and each half
/// frames its lines into its own part of them, its line numbers from the first half's count;
/// only the keyword index's second half is appended after. Framing is per line, so the columns
/// are those of one pass. (The second half framed into columns of its own and appended to the
/// first's cost a copy into fresh pages, 120 MB and ~29k page faults at 10M lines, on one
/// thread; the UTF-8 check was a pass of its own, on one thread.)
fn frame_body<N: LineNo>(body: &[u8], keys: &Keys, wide_len: usize, split: i64, check: bool) -> Option<Part<N>> {
    let c = match cut_of(body, split) {
        None => {
            if check && std::str::from_utf8(body).is_err() {
                return None;
            }
            let hint = body.len() / 64 + 1;
            let mut g = Grow {
                spans: Spans::for_buffer(wide_len, hint),
                kernel: Vec::with_capacity(hint),
                host: Vec::with_capacity(hint),
            };
            let f = frame_run(body, 0, body.len(), keys, &mut g, 0);
            return Some(Part { spans: g.spans, kernel: g.kernel, host: g.host, max_len: f.max_len, hits: f.hits, starts: f.starts });
        }
        Some(c) => c,
    };
    let (na, nb) = std::thread::scope(|s| {
        let later = s.spawn(|| counted(&body[c + 1..], check));
        (counted(&body[..c], check), later.join().expect("frame: the second thread panicked"))
    });
    let (na, nb) = (na?, nb?);
    let n = na + nb;
    let mut spans = Spans::for_buffer(wide_len, n);
    let mut kernel: Vec<i64> = Vec::with_capacity(n);
    let mut host: Vec<i64> = Vec::with_capacity(n);
    let (a, b) = {
        let (sa, sb) = spans.slots().split_at(na);
        let (ka, kb) = kernel.spare_capacity_mut()[..n].split_at_mut(na);
        let (ha, hb) = host.spare_capacity_mut()[..n].split_at_mut(na);
        let mut oa = Slots { spans: sa, kernel: ka, host: ha, at: 0 };
        let mut ob = Slots { spans: sb, kernel: kb, host: hb, at: 0 };
        std::thread::scope(|s| {
            let later = s.spawn(|| frame_run::<N>(body, c + 1, body.len(), keys, &mut ob, na));
            let a = frame_run::<N>(body, 0, c, keys, &mut oa, 0);
            (a, later.join().expect("frame: the second thread panicked"))
        })
    };
    // each run wrote as many lines as were counted, each in its own slots, none skipped
    assert!(a.lines == na && b.lines == nb, "frame: a half framed another line count than counted");
    // SAFETY: the first n slots of each column are written (the assert above)
    unsafe {
        spans.set_len(n);
        kernel.set_len(n);
        host.set_len(n);
    }
    let (mut hits, mut starts) = (a.hits, a.starts);
    for (x, y) in hits.iter_mut().chain(starts.iter_mut()).zip(b.hits.iter().chain(b.starts.iter())) {
        x.extend_from_slice(y);
    }
    Some(Part { spans, kernel, host, max_len: a.max_len.max(b.max_len), hits, starts })
}

/// frame(text, framing, needles, prefixes, split=-1) -> [texts, kernel_ns, host_ns, max_len, hits,
/// starts] or None for an unsupported framing; texts is a TextColumn over `text` (held, not
/// copied), the times are TimeColumns (a time over i64 is kept as i64::MAX, out of range for
/// settle), hits[n] (an IndexColumn) holds the lines whose text contains needles[n] (as grep()),
/// starts[n] those whose text starts with prefixes[n].
///
/// `text` holds the cleaned input, a str, or bytes or a Pinned map (which must be UTF-8: checked); lines are
/// split on '\n' only, a final '\n' ends the last line. `split`: -1 frames on two threads from
/// SPLIT_MIN bytes (the GIL released), 0 on one, k > 0 on two cut at the first '\n' from byte k
/// (for tests: the columns must not depend on it).
#[pyfunction]
#[pyo3(signature = (text, framing, needles=Vec::new(), prefixes=Vec::new(), split=-1))]
pub(crate) fn frame<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
    framing: &str,
    needles: Vec<String>,
    prefixes: Vec<String>,
    split: i64,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let code = match framing {
        "plain" => b'p',
        "journalctl" => b'j',
        "grabserial-t" => b't',
        _ => return Ok(None),
    };
    // A few substrings: SIMD memmem each. Prefixes: a table by first byte, so a line costs
    // one lookup plus a starts_with per prefix sharing its first byte.
    let mut by_first: Vec<Vec<usize>> = vec![Vec::new(); 256];
    for (n, p) in prefixes.iter().enumerate() {
        if let Some(&b) = p.as_bytes().first() {
            by_first[b as usize].push(n);
        }
    }
    let keys = Keys { code, finders: needles.iter().map(|n| Finder::new(n.as_bytes())).collect(), prefixes: &prefixes, by_first };
    let whole = buf_of(text)?;
    // bytes must be UTF-8 (a str's are): checked as they are framed, the final '\n' being ASCII
    let check = text.downcast::<PyString>().is_err();
    // a final newline ends the last line
    let body = if whole.last() == Some(&b'\n') { &whole[..whole.len() - 1] } else { whole };
    // the buffer is immutable (bytes, or a str's UTF-8) and held by `text`: safe to read
    // without the GIL
    let not_utf8 = || pyo3::exceptions::PyValueError::new_err("frame: bytes that are not UTF-8");
    if whole.len() <= u32::MAX as usize {
        let part = py.allow_threads(|| frame_body::<u32>(body, &keys, whole.len(), split, check));
        columns(py, text, part.ok_or_else(not_utf8)?).map(Some)
    } else {
        let part = py.allow_threads(|| frame_body::<usize>(body, &keys, whole.len(), split, check));
        columns(py, text, part.ok_or_else(not_utf8)?).map(Some)
    }
}

/// frame's list: the columns of `text` in `part`.
fn columns<'py, N: LineNo>(py: Python<'py>, text: &Bound<'py, PyAny>, mut part: Part<N>) -> PyResult<Bound<'py, PyList>> {
    // one thread's line count was a guess (a line of 64 bytes): give the rest back (an in-place
    // mremap for the large ones; two threads' columns are allocated for their counted lines)
    part.spans.shrink();
    part.kernel.shrink_to_fit();
    part.host.shrink_to_fit();
    let out = PyList::empty(py);
    out.append(Bound::new(py, TextColumn::new(text.clone().unbind(), part.spans))?)?;
    out.append(Bound::new(py, TimeColumn::new(part.kernel))?)?;
    out.append(Bound::new(py, TimeColumn::new(part.host))?)?;
    out.append(part.max_len)?;
    for table in [part.hits, part.starts] {
        let h = PyList::empty(py);
        for v in table {
            h.append(Bound::new(py, N::column(v))?)?;
        }
        out.append(h)?;
    }
    Ok(out)
}
