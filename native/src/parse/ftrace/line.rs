//! function_graph line parsing: the columns and body of one line, without state (graph.rs keeps
//! the call-graph state machine). Pure functions of the line's bytes, so a reader thread can run
//! them ahead of the state machine (`parse`, called by mod.rs).

use memchr::{memchr, memmem};

use std::hash::Hasher;

use crate::fxhash::Fx;

/// Eight spaces as one word: columns and the call depth's indent are runs of spaces, stepped
/// over a word at a time before the byte loops that follow.
pub(crate) const SPACES: u64 = 0x2020_2020_2020_2020;

#[inline]
pub(crate) fn word(b: &[u8], p: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[p..p + 8]);
    u64::from_le_bytes(a)
}

#[inline]
pub(crate) fn spaces(b: &[u8], mut p: usize) -> usize {
    while p + 8 <= b.len() && word(b, p) == SPACES {
        p += 8;
    }
    p
}

/// The first `c` in b (memchr's call costs more than this on a column of 10-20 bytes).
#[inline]
pub(crate) fn find(b: &[u8], c: u8) -> Option<usize> {
    let pat = u64::from_le_bytes([c; 8]);
    let mut p = 0;
    while p + 8 <= b.len() {
        let x = word(b, p) ^ pat; // a zero byte where b holds c
        let z = x.wrapping_sub(0x0101_0101_0101_0101) & !x & 0x8080_8080_8080_8080;
        if z != 0 {
            return Some(p + (z.trailing_zeros() / 8) as usize);
        }
        p += 8;
    }
    b[p..].iter().position(|x| *x == c).map(|i| p + i)
}

#[inline]
pub(crate) fn skip(b: &[u8], p: usize) -> usize {
    let mut p = spaces(b, p);
    while p < b.len() && (b[p] == b' ' || b[p] == b'\t') {
        p += 1;
    }
    p
}

#[inline]
pub(crate) fn digits_at(b: &[u8], p: usize) -> usize {
    b[p..].iter().take_while(|c| c.is_ascii_digit()).count()
}

#[inline]
pub(crate) fn value(b: &[u8]) -> i64 {
    b.iter().take(18).fold(0i64, |a, c| a * 10 + (c - b'0') as i64)
}

/// `int.frac` at p as a count of 10^-9 of the unit: (value, end).
#[inline]
pub(crate) fn decimal(b: &[u8], p: usize) -> Option<(i64, usize)> {
    // one pass over the digits (twice a line: abstime and duration), value as they are counted
    let mut q = p;
    let mut v = 0i64;
    while q < b.len() && b[q].is_ascii_digit() {
        if q - p < 18 {
            v = v * 10 + (b[q] - b'0') as i64;
        }
        q += 1;
    }
    if q == p || q - p > 9 {
        return None; // 10^9 s (or us) at most: times 10^9 must fit an i64
    }
    v *= 1_000_000_000;
    if q < b.len() && b[q] == b'.' {
        q += 1;
        let s = q;
        let mut x = 0i64;
        while q < b.len() && b[q].is_ascii_digit() {
            if q - s < 9 {
                x = x * 10 + (b[q] - b'0') as i64; // digits past the 9th (below 1 ns of a s) dropped
            }
            q += 1;
        }
        for _ in (q - s).min(9)..9 {
            x *= 10;
        }
        v += x;
    }
    Some((v, q))
}

/// Byte equality for short slices (names, comm-pid), a word at a time: no call into libc's
/// memcmp, which two lookups a line paid for.
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i + 8 <= a.len() {
        let mut x = [0u8; 8];
        let mut y = [0u8; 8];
        x.copy_from_slice(&a[i..i + 8]);
        y.copy_from_slice(&b[i..i + 8]);
        if x != y {
            return false;
        }
        i += 8;
    }
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A name's hash for the interning table (FxHash: its high bits are well mixed).
#[inline]
pub(crate) fn name_hash(name: &[u8]) -> u64 {
    let mut h = Fx::default();
    h.write(name);
    h.finish()
}

#[inline]
pub(crate) fn trim(b: &[u8]) -> &[u8] {
    let w = spaces(b, 0);
    let s = b[w..].iter().position(|c| !c.is_ascii_whitespace()).map_or(b.len(), |s| w + s);
    let e = b.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(s, |e| e + 1);
    &b[s..e.max(s)]
}

/// A duration column (`  0.198 us `, `+ 12.1 us`, `$ 3594274 us`): Some(ns); blank: Some(None).
pub(crate) fn duration(seg: &[u8]) -> Option<Option<i64>> {
    duration_t(trim(seg))
}

/// `duration` of a trimmed segment.
#[inline]
pub(crate) fn duration_t(t: &[u8]) -> Option<Option<i64>> {
    if t.is_empty() {
        return Some(None);
    }
    let mut p = 0;
    if b"+!#*@$".contains(&t[0]) {
        p = skip(t, 1);
    }
    let (v, q) = decimal(t, p)?;
    let unit = trim(&t[q..]);
    let ns = match unit {
        b"us" => v / 1_000_000,
        b"ns" => v / 1_000_000_000,
        b"ms" => v / 1000,
        b"s" => v,
        _ => return None,
    };
    Some(Some(ns))
}

/// Whether a line starting with `#` is a graph line whose duration carries the `#` mark (1 ms
/// or more: `# 1102.448 us |  mutex_unlock();`, as trace-cmd report prints it) rather than a
/// header comment (`# tracer: function_graph`).
pub(crate) fn marked(t: &[u8]) -> bool {
    t.len() > 2 && t[1] == b' ' && t[2].is_ascii_digit()
        && memchr(b'|', t).map_or(false, |bar| matches!(duration(&t[..bar]), Some(Some(_))))
}

/// `comm-pid` (funcgraph-proc) or a latency-flags column (`d..1`), trimmed: a column to step over.
#[inline]
pub(crate) fn is_column_t(t: &[u8]) -> bool {
    // comms hold '/' and ':' (swapper/0, kworker/0:1); a body holds braces, parens or a comment
    if t.is_empty() || t.starts_with(b"/*") || t.iter().any(|c| matches!(c, b'(' | b'{' | b'}' | b';')) {
        return false;
    }
    if let Some(dash) = t.iter().rposition(|c| *c == b'-') {
        if dash + 1 < t.len() && t[dash + 1..].iter().all(|c| c.is_ascii_digit()) {
            return true;
        }
    }
    (4..=5).contains(&t.len()) && t.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'.')
}

/// What a graph line's body says.
pub(crate) enum Body<'a> {
    Open(&'a [u8]),
    Leaf(&'a [u8]),
    Close(Option<&'a [u8]>),
    Comment,
    Switch(&'a [u8], &'a [u8]), // prev task => next task (comm-pid)
    Bad,
}

pub(crate) fn strip_parens(n: &[u8]) -> &[u8] {
    let n = trim(n);
    if n.ends_with(b"()") {
        &n[..n.len() - 2]
    } else {
        n
    }
}

pub(crate) fn body(b: &[u8]) -> Body<'_> {
    let t = trim(b);
    if t.is_empty() {
        return Body::Bad;
    }
    if t.starts_with(b"/*") {
        return Body::Comment;
    }
    if t[0] == b'}' {
        let rest = trim(&t[1..]);
        if rest.starts_with(b"/*") && rest.ends_with(b"*/") && rest.len() >= 4 {
            let n = strip_parens(&rest[2..rest.len() - 2]);
            return Body::Close(if n.is_empty() { None } else { Some(n) });
        }
        return Body::Close(None);
    }
    if t.ends_with(b"{") {
        let n = strip_parens(&t[..t.len() - 1]);
        return if n.is_empty() { Body::Bad } else { Body::Open(n) };
    }
    if t.ends_with(b";") {
        let n = strip_parens(&t[..t.len() - 1]);
        return if n.is_empty() { Body::Bad } else { Body::Leaf(n) };
    }
    if t.starts_with(b"==========") || t.starts_with(b"<==========") {
        return Body::Comment; // funcgraph-irqs marks
    }
    if let Some(k) = memmem::find(t, b"=>") {
        return Body::Switch(trim(&t[..k]), trim(&t[k + 2..]));
    }
    Body::Bad
}

/// A parsed graph line: abstime, cpu, duration, body.
pub(crate) struct Graph<'a> {
    pub(crate) ts: Option<i64>,
    pub(crate) task: Option<&'a [u8]>, // funcgraph-proc's comm-pid
    pub(crate) cpu: usize,
    pub(crate) dur: Option<i64>,
    pub(crate) body: Body<'a>,
}

/// Parse the columns of a graph line; None when the line is not one (a header, an event line).
pub(crate) fn graph(b: &[u8]) -> Option<Graph<'_>> {
    let mut p = skip(b, 0);
    let mut ts = None;
    let mut cpu = 0usize;
    let mut have_cpu = false;
    if p < b.len() && b[p].is_ascii_digit() {
        let n = digits_at(b, p);
        if p + n < b.len() && b[p + n] == b')' {
            cpu = value(&b[p..p + n]) as usize;
            have_cpu = true;
            p += n + 1;
        } else if let Some((v, q)) = decimal(b, p).filter(|&(_, q)| {
            let q = skip(b, q);
            q < b.len() && b[q] == b'|'
        }) {
            // an abstime column; a number followed by a unit instead is an unmarked duration
            // under 10 us with no column before it (trace-cmd report: `5.680 us   |  fd_install();`)
            let q = skip(b, q);
            ts = Some(v);
            p = skip(b, q + 1);
            let n = digits_at(b, p);
            if n > 0 && p + n < b.len() && b[p + n] == b')' {
                cpu = value(&b[p..p + n]) as usize;
                have_cpu = true;
                p += n + 1;
            }
        }
    }
    if !have_cpu && ts.is_none() {
        // no cpu and no time column: only a bare body (`  func() {`) or a duration column
        let t = trim(b);
        if t.is_empty() || (t[0] == b'#' && !marked(t)) {
            return None;
        }
    }
    let mut dur = None;
    let mut task = None;
    let mut rest = &b[p..];
    for _ in 0..4 {
        let bar = match find(rest, b'|') {
            Some(bar) => bar,
            None => break,
        };
        let t = trim(&rest[..bar]);
        if let Some(d) = duration_t(t) {
            dur = dur.or(d);
        } else if !is_column_t(t) {
            break;
        } else if t.contains(&b'-') {
            task = Some(t);
        }
        rest = &rest[bar + 1..];
    }
    let body = body(rest);
    if !have_cpu && ts.is_none() && matches!(body, Body::Bad | Body::Switch(..) | Body::Comment) {
        return None; // without a column to recognise it by, only a call or a brace is graph
    }
    Some(Graph { ts, task, cpu, dur, body })
}

/// What a line is, for the state machine (`Scan::apply` in graph.rs).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Skip,    // blank, or a `------` rule
    TcmdBad, // a trace-cmd funcgraph event whose body is not graph
    Other,   // not a graph line (a header, an event): `a` is its text
    Graph,
}

/// A graph line's body, without its names (those are `Rec::a` and `Rec::b`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    Open,    // `a` the name
    Leaf,    // `a` the name
    Close,   // `a` the tail's name, or NO_RANGE
    Comment,
    Switch,  // `a` prev task, `b` next task
    Bad,
}

/// No byte range (an absent task column or close tail).
pub(crate) const NO_RANGE: (usize, usize) = (usize::MAX, 0);

/// One parsed line as byte ranges into the chunk it came from: a reader thread makes these a
/// chunk ahead of the state machine, which then needs no parsing of its own (issue 14: the
/// second core). `hash` is `a`'s name_hash for Open and Leaf (the interning table's lookup).
#[derive(Clone, Copy)]
pub(crate) struct Rec {
    pub(crate) kind: Kind,
    pub(crate) body: BodyKind,
    pub(crate) cpu: usize,
    pub(crate) ts: Option<i64>,
    pub(crate) dur: Option<i64>,
    pub(crate) task: (usize, usize),
    pub(crate) a: (usize, usize),
    pub(crate) b: (usize, usize),
    pub(crate) hash: u64,
}

/// Where `s` (a slice of `chunk`) lies in `chunk`.
#[inline]
fn range(chunk: &[u8], s: &[u8]) -> (usize, usize) {
    let at = s.as_ptr() as usize - chunk.as_ptr() as usize;
    (at, at + s.len())
}

/// Parse one line of `chunk` (`line`, a slice of it, with its newline) into a Rec.
pub(crate) fn parse(chunk: &[u8], line: &[u8], tcmd_finder: &memmem::Finder<'_>) -> Rec {
    let mut r = Rec { kind: Kind::Skip, body: BodyKind::Bad, cpu: 0, ts: None, dur: None, task: NO_RANGE,
                      a: NO_RANGE, b: NO_RANGE, hash: 0 };
    let mut b = line;
    while let Some((&c, head)) = b.split_last() {
        if c == b'\n' || c == b'\r' {
            b = head;
        } else {
            break;
        }
    }
    let t = trim(b);
    if t.is_empty() || t.iter().all(|c| *c == b'-') {
        return r;
    }
    let mut tcmd_ts = None;
    let mut tcmd_cpu = None;
    // trace-cmd report's funcgraph events; a cheap byte test before the substring search
    let tcmd = if memchr(b'[', b).is_some() { tcmd_finder.find(b) } else { None };
    let parsed = if let Some(k) = tcmd {
        // trace-cmd report: `comm-pid [cpu] ts: funcgraph_entry: |  body`
        let open = b[..k].iter().rposition(|c| *c == b'[');
        tcmd_cpu = open.and_then(|o| {
            let n = digits_at(b, o + 1);
            if n > 0 { Some(value(&b[o + 1..o + 1 + n]) as usize) } else { None }
        });
        // the `comm-pid` before `[cpu]` names the task: one call stack per task, since
        // report prints no context-switch banners, only sched_switch events between lines
        let task = open.map(|o| trim(&b[..o])).filter(|t| !t.is_empty());
        tcmd_ts = b[..k].iter().rposition(|c| *c == b' ').and_then(|s| decimal(b, s + 1)).map(|x| x.0);
        let after = memchr(b':', &b[k + 2..]).map(|c| k + 2 + c + 1);
        after.and_then(|a| graph(&b[a..])).map(|mut g| {
            g.ts = tcmd_ts;
            g.cpu = tcmd_cpu.unwrap_or(0);
            g.task = g.task.or(task);
            g
        })
    } else if t[0] == b'#' && !marked(t) {
        None
    } else {
        graph(b)
    };
    let g = match parsed {
        Some(g) => g,
        None => {
            if tcmd_ts.is_some() || tcmd_cpu.is_some() {
                r.kind = Kind::TcmdBad;
            } else {
                r.kind = Kind::Other;
                r.a = range(chunk, b);
            }
            return r;
        }
    };
    r.kind = Kind::Graph;
    r.cpu = g.cpu;
    r.ts = g.ts;
    r.dur = g.dur;
    if let Some(task) = g.task {
        r.task = range(chunk, task);
    }
    match g.body {
        Body::Open(n) | Body::Leaf(n) => {
            r.body = if matches!(g.body, Body::Open(_)) { BodyKind::Open } else { BodyKind::Leaf };
            r.a = range(chunk, n);
            r.hash = name_hash(n);
        }
        Body::Close(tail) => {
            r.body = BodyKind::Close;
            if let Some(n) = tail {
                r.a = range(chunk, n);
            }
        }
        Body::Comment => r.body = BodyKind::Comment,
        Body::Switch(prev, next) => {
            r.body = BodyKind::Switch;
            r.a = range(chunk, prev);
            r.b = range(chunk, next);
        }
        Body::Bad => r.body = BodyKind::Bad,
    }
    r
}
