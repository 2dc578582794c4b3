//! function_graph trace lines: scan a trace file in chunks and aggregate its call tree.
//! The format knowledge of function_graph lines lives here only (bootlens/parsers/ftrace.py
//! orchestrates and reads the few event and header lines this returns to it); there is no
//! Python twin: a graph trace runs to millions of lines, and one Python object per line is
//! what issue 14 measured as the cost to remove.
//!
//! A graph line is, each column optional (kernel/trace/trace_functions_graph.c):
//! `[abstime |] [cpu)] [comm-pid |] [latency flags |] [flag duration us |] indent body`, body one of
//! `name() {`, `name();`, `}`, `} /* name */` (or `} /* name() */`), `/* comment */`; between
//! them context-switch banners (` 0)  a-1  =>  b-2 `), `------` rules and `==========>` irq marks.
//! `trace-cmd report` prints the same body after `comm-pid [cpu] ts: funcgraph_entry:`.

use std::fs::File;
use std::io::Read;

use memchr::{memchr, memchr_iter, memmem};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use std::hash::Hasher;

use crate::fxhash::{Fx, FxMap as FastMap};

const NONE: u32 = u32::MAX;
const MAX_CPU: usize = 8192;
const EMPTY: u64 = u64::MAX; // a free slot of the name table (no id reaches 2^32 - 1)

#[derive(Clone, Copy, Default)]
struct Stat {
    calls: u64,
    total: i64,
    max: i64,
    self_ns: i64,
}

impl Stat {
    fn add(&mut self, dur: Option<i64>, self_ns: Option<i64>) {
        // saturating: a hostile file's sums must not wrap around
        self.calls += 1;
        if let Some(d) = dur {
            self.total = self.total.saturating_add(d);
            self.max = self.max.max(d);
        }
        if let Some(s) = self_ns {
            self.self_ns = self.self_ns.saturating_add(s.max(0));
        }
    }
}

/// An open call on one task's stack.
struct Frame {
    func: u32,
    child_ns: i64,
    node: u32,    // icicle node, NONE past the depth cut
    group: u32,   // the do_one_initcall block this call runs in (the block it opens for that call), or NONE
    aside: bool,  // in do_one_initcall's own helpers or an interrupt: not the initcall's work
    direct: bool, // a call directly under do_one_initcall (the initcall itself, or a helper)
}

/// One do_one_initcall call: the initcall it ran is its one direct child that is not one of
/// do_one_initcall's own helpers. A notrace or inlined initcall leaves its callees there
/// instead (several children): `multi`, and the block has no name of its own.
#[derive(Clone, Copy)]
struct Block {
    child: u32,
    multi: bool,
    start: i64,
    dur: i64,
    cpu: i64,
    line: u64,
    child_start: i64,
    child_dur: i64,
    child_line: u64,
    work: i64, // the direct children's time that is not do_one_initcall's own helpers'
}

/// The group rows of one do_one_initcall block: per function, its calls in the block. A block's
/// calls all sit above its do_one_initcall on one task's stack, so when that call returns no
/// more can come: the rows are sorted and cut to the answer's size then (`Scan::close_block`),
/// and the index by function dropped. Memory holds the open blocks' rows, not blocks x functions.
#[derive(Default)]
struct Rows {
    at: FastMap<u32, u32>, // function id -> index in rows, while the block is open
    rows: Vec<(u32, Stat)>,
    closed: bool,
}

/// What do_one_initcall calls besides the initcall (init/main.c: the blacklist check, the
/// initcall_debug and tracepoint callbacks, add_latent_entropy; 4.x's do_one_initcall_debug with
/// its printk and ktime_get) and the interrupt entry that can land between them.
const HELPERS: &[&[u8]] = &[
    b"initcall_blacklisted", b"trace_initcall_start_cb", b"trace_initcall_finish_cb", b"do_trace_initcall_start",
    b"do_trace_initcall_finish", b"add_latent_entropy", b"add_device_randomness", b"printk", b"_printk",
    b"ktime_get", b"irq_enter", b"irq_enter_rcu", b"irq_exit", b"irq_exit_rcu", b"do_interrupt_handler",
    b"smp_apic_timer_interrupt", b"smp_reschedule_interrupt", b"__sysvec_apic_timer_interrupt",
];

/// One task's call stack: a task is funcgraph-proc's comm-pid, else what a CPU runs between
/// two context-switch banners (a CPU interleaves tasks: one's schedule() returns in another's).
#[derive(Default)]
struct Cpu {
    stack: Vec<Frame>,
    orphan_child_ns: i64, // children seen with an empty stack (their parent's start was overwritten)
}

struct Scan {
    names: Vec<u8>,       // every function name end to end (one block of memory, not one per name)
    name_at: Vec<usize>,  // by name id: where its name starts in `names`; one more at the end
    slots: Vec<u64>,      // open addressing by name hash's high bits: the hash's high half and the id
    slot_bits: u32,
    stats: Vec<Stat>,
    groups: Vec<Rows>, // by block
    gslot: Vec<(u32, u32)>, // by function id: the block and row its last call went to (skips the hash)
    nslot: Vec<(u32, u32)>, // by function id: the tree parent and node of its last call (the same)
    per_group: usize,  // rows kept per block besides the initcall's own
    group_rows_cut: u64,
    blocks: Vec<Block>,
    helper: Vec<bool>, // by name id
    tree_ids: FastMap<(u32, u32), u32>,
    tree: Vec<(u32, u32, Stat)>, // parent, func, stat (self computed at the end)
    cpus: Vec<Cpu>, // task stacks
    task_ids: FastMap<Vec<u8>, usize>,
    cpu_task: Vec<usize>, // the task each CPU runs now, usize::MAX before its first line
    cpu_name: Vec<Vec<u8>>, // the task column last seen on each CPU
    other: Vec<(u64, String)>,
    other_dropped: u64,
    lines: u64,
    graph: u64,
    bad: u64,
    bad_first: u64,
    comments: u64,
    switches: u64,
    orphans: u64,
    durations: u64,
    first_ns: i64,
    last_ns: i64,
    one_initcall: u32,
    one_initcall_debug: u32, // 4.x: do_one_initcall -> do_one_initcall_debug -> the initcall
    tcmd: memmem::Finder<'static>,
}

/// Eight spaces as one word: columns and the call depth's indent are runs of spaces, stepped
/// over a word at a time before the byte loops that follow.
const SPACES: u64 = 0x2020_2020_2020_2020;

#[inline]
fn word(b: &[u8], p: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[p..p + 8]);
    u64::from_le_bytes(a)
}

#[inline]
fn spaces(b: &[u8], mut p: usize) -> usize {
    while p + 8 <= b.len() && word(b, p) == SPACES {
        p += 8;
    }
    p
}

/// The first `c` in b (memchr's call costs more than this on a column of 10-20 bytes).
#[inline]
fn find(b: &[u8], c: u8) -> Option<usize> {
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
fn skip(b: &[u8], p: usize) -> usize {
    let mut p = spaces(b, p);
    while p < b.len() && (b[p] == b' ' || b[p] == b'\t') {
        p += 1;
    }
    p
}

#[inline]
fn digits_at(b: &[u8], p: usize) -> usize {
    b[p..].iter().take_while(|c| c.is_ascii_digit()).count()
}

#[inline]
fn value(b: &[u8]) -> i64 {
    b.iter().take(18).fold(0i64, |a, c| a * 10 + (c - b'0') as i64)
}

/// `int.frac` at p as a count of 10^-9 of the unit: (value, end).
#[inline]
fn decimal(b: &[u8], p: usize) -> Option<(i64, usize)> {
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
fn same(a: &[u8], b: &[u8]) -> bool {
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
fn name_hash(name: &[u8]) -> u64 {
    let mut h = Fx::default();
    h.write(name);
    h.finish()
}

#[inline]
fn trim(b: &[u8]) -> &[u8] {
    let w = spaces(b, 0);
    let s = b[w..].iter().position(|c| !c.is_ascii_whitespace()).map_or(b.len(), |s| w + s);
    let e = b.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(s, |e| e + 1);
    &b[s..e.max(s)]
}

/// A duration column (`  0.198 us `, `+ 12.1 us`, `$ 3594274 us`): Some(ns); blank: Some(None).
fn duration(seg: &[u8]) -> Option<Option<i64>> {
    duration_t(trim(seg))
}

/// `duration` of a trimmed segment.
#[inline]
fn duration_t(t: &[u8]) -> Option<Option<i64>> {
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
fn marked(t: &[u8]) -> bool {
    t.len() > 2 && t[1] == b' ' && t[2].is_ascii_digit()
        && memchr(b'|', t).map_or(false, |bar| matches!(duration(&t[..bar]), Some(Some(_))))
}

/// `comm-pid` (funcgraph-proc) or a latency-flags column (`d..1`), trimmed: a column to step over.
#[inline]
fn is_column_t(t: &[u8]) -> bool {
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
enum Body<'a> {
    Open(&'a [u8]),
    Leaf(&'a [u8]),
    Close(Option<&'a [u8]>),
    Comment,
    Switch(&'a [u8], &'a [u8]), // prev task => next task (comm-pid)
    Bad,
}

fn strip_parens(n: &[u8]) -> &[u8] {
    let n = trim(n);
    if n.ends_with(b"()") {
        &n[..n.len() - 2]
    } else {
        n
    }
}

fn body(b: &[u8]) -> Body<'_> {
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
struct Graph<'a> {
    ts: Option<i64>,
    task: Option<&'a [u8]>, // funcgraph-proc's comm-pid
    cpu: usize,
    dur: Option<i64>,
    body: Body<'a>,
}

/// Parse the columns of a graph line; None when the line is not one (a header, an event line).
fn graph(b: &[u8]) -> Option<Graph<'_>> {
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

impl Scan {
    fn new(per_group: usize) -> Scan {
        Scan {
            names: Vec::new(), name_at: vec![0], slots: vec![EMPTY; 1 << 10], slot_bits: 10, stats: Vec::new(), groups: Vec::new(), gslot: Vec::new(), nslot: Vec::new(), per_group,
            group_rows_cut: 0, blocks: Vec::new(), helper: Vec::new(), tree_ids: FastMap::default(), tree: Vec::new(),
            cpus: Vec::new(), task_ids: FastMap::default(), cpu_task: Vec::new(), cpu_name: Vec::new(), other: Vec::new(),
            other_dropped: 0, lines: 0, graph: 0, bad: 0, bad_first: 0, comments: 0, switches: 0, orphans: 0,
            durations: 0, first_ns: -1, last_ns: -1, one_initcall: NONE, one_initcall_debug: NONE, tcmd: memmem::Finder::new(b": funcgraph_e"),
        }
    }

    /// The id of a function name, made on first sight. One lookup a call line: an open
    /// addressing table kept at most half full, each slot the hash's high half beside the id
    /// (most misses end there, without reading the name's bytes).
    fn id(&mut self, name: &[u8]) -> u32 {
        let h = name_hash(name);
        let tag = h & !0xffff_ffff;
        let mask = self.slots.len() - 1;
        let mut at = (h >> (64 - self.slot_bits)) as usize;
        loop {
            let slot = self.slots[at];
            if slot == EMPTY {
                break;
            }
            if slot & !0xffff_ffff == tag {
                let i = (slot & 0xffff_ffff) as usize;
                if same(&self.names[self.name_at[i]..self.name_at[i + 1]], name) {
                    return i as u32;
                }
            }
            at = (at + 1) & mask;
        }
        let i = self.stats.len() as u32;
        self.slots[at] = tag | i as u64;
        self.names.extend_from_slice(name);
        self.name_at.push(self.names.len());
        self.stats.push(Stat::default());
        self.helper.push(HELPERS.contains(&name));
        self.gslot.push((NONE, 0));
        self.nslot.push((NONE, NONE));
        if self.stats.len() * 2 > self.slots.len() {
            self.slot_bits += 1;
            let old = std::mem::replace(&mut self.slots, vec![EMPTY; 1 << self.slot_bits]);
            let mask = self.slots.len() - 1;
            for k in 0..self.stats.len() {
                let h = name_hash(&self.names[self.name_at[k]..self.name_at[k + 1]]);
                let mut at = (h >> (64 - self.slot_bits)) as usize;
                while self.slots[at] != EMPTY {
                    at = (at + 1) & mask;
                }
                self.slots[at] = (h & !0xffff_ffff) | k as u64;
            }
            drop(old);
        }
        i
    }

    /// The stack of the task named `comm-pid`, made on first sight.
    fn task(&mut self, name: &[u8]) -> usize {
        if let Some(i) = self.task_ids.get(name) {
            return *i;
        }
        self.cpus.push(Cpu::default());
        self.task_ids.insert(name.to_vec(), self.cpus.len() - 1);
        self.cpus.len() - 1
    }

    /// The stack a line of `cpu` goes to: its task column's, else the task the CPU runs now.
    fn task_of(&mut self, cpu: usize, task: Option<&[u8]>) -> usize {
        while self.cpu_task.len() <= cpu {
            self.cpu_task.push(usize::MAX);
        }
        if let Some(t) = task {
            // a CPU runs one task for many lines: compare with the last name before hashing
            if self.cpu_task[cpu] != usize::MAX && self.cpu_name.get(cpu).map_or(false, |n| same(n, t)) {
                return self.cpu_task[cpu];
            }
            let i = self.task(t);
            self.cpu_task[cpu] = i;
            while self.cpu_name.len() <= cpu {
                self.cpu_name.push(Vec::new());
            }
            self.cpu_name[cpu].clear();
            self.cpu_name[cpu].extend_from_slice(t);
            return i;
        }
        if self.cpu_task[cpu] == usize::MAX {
            self.cpus.push(Cpu::default());
            self.cpu_task[cpu] = self.cpus.len() - 1;
        }
        self.cpu_task[cpu]
    }

    fn node(&mut self, parent: u32, func: u32, depth: usize, cut: usize, cap: usize) -> u32 {
        if parent == NONE || depth >= cut {
            return NONE;
        }
        let (last, node) = self.nslot[func as usize];
        if last == parent {
            return node; // nodes are never removed: the last call's node is still this one
        }
        if let Some(n) = self.tree_ids.get(&(parent, func)) {
            self.nslot[func as usize] = (parent, *n);
            return *n;
        }
        if self.tree.len() >= cap {
            return NONE; // the tree is full: deeper calls stay in their ancestor's time
        }
        let n = self.tree.len() as u32;
        self.tree.push((parent, func, Stat::default()));
        self.tree_ids.insert((parent, func), n);
        self.nslot[func as usize] = (parent, n);
        n
    }

    fn group_add(&mut self, group: u32, func: u32, dur: Option<i64>, self_ns: Option<i64>) {
        if group == NONE {
            return;
        }
        let g = &mut self.groups[group as usize];
        debug_assert!(!g.closed); // its calls are all above its do_one_initcall on one stack
        let (last, row) = self.gslot[func as usize];
        if last == group && !g.closed {
            g.rows[row as usize].1.add(dur, self_ns); // a function called again in the same block
            return;
        }
        let next = g.rows.len() as u32;
        let i = *g.at.entry(func).or_insert(next) as usize;
        if i == g.rows.len() {
            g.rows.push((func, Stat::default()));
        }
        g.rows[i].1.add(dur, self_ns);
        self.gslot[func as usize] = (group, i as u32);
    }

    /// A block's do_one_initcall returned (or the trace ended): its initcall's own row first,
    /// then its `per_group` worst functions (most total time; ties in order of first call).
    fn close_block(&mut self, block: u32) {
        let own = self.blocks[block as usize].child;
        let g = &mut self.groups[block as usize];
        if g.closed {
            return;
        }
        g.closed = true;
        g.at = FastMap::default();
        g.rows.sort_by(|a, b| (b.0 == own).cmp(&(a.0 == own)).then(b.1.total.cmp(&a.1.total)));
        let keep = self.per_group.saturating_add(1);
        if g.rows.len() > keep {
            self.group_rows_cut += (g.rows.len() - keep) as u64;
            g.rows.truncate(keep);
        }
        g.rows.shrink_to_fit();
    }

    /// A new call under the top of `task`'s stack: its icicle node, block, aside and direct
    /// flags; a do_one_initcall opens a block, a direct child names it.
    fn place(&mut self, task: usize, func: u32, ts: Option<i64>, cpu: usize, cut: usize, cap: usize) -> Frame {
        let st = &self.cpus[task].stack;
        let depth = st.len();
        let (pnode, pgroup, pfunc, paside, pdirect) = match st.last() {
            Some(f) => (f.node, f.group, f.func, f.aside, f.direct),
            None => (0, NONE, NONE, false, false),
        };
        let node = self.node(pnode, func, depth, cut, cap);
        let mut f = Frame { func, child_ns: 0, node, group: pgroup, aside: paside, direct: false };
        if func == self.one_initcall {
            self.blocks.push(Block { child: NONE, multi: false, start: ts.unwrap_or(-1), dur: -1, cpu: cpu as i64,
                                     line: self.lines, child_start: -1, child_dur: -1, child_line: 0, work: 0 });
            self.groups.push(Rows::default());
            f.group = (self.blocks.len() - 1) as u32;
            f.aside = false;
            return f;
        }
        let under = pfunc == self.one_initcall || (pfunc == self.one_initcall_debug && pdirect);
        if under && !paside && pgroup != NONE {
            f.direct = true;
            if self.helper[func as usize] || func == self.one_initcall_debug {
                f.aside = func != self.one_initcall_debug;
            } else {
                let b = &mut self.blocks[pgroup as usize];
                if b.child == NONE {
                    b.child = func;
                    b.child_start = ts.unwrap_or(-1);
                    b.child_line = self.lines;
                } else if b.child != func {
                    b.multi = true;
                }
            }
        }
        f
    }

    fn line(&mut self, b: &[u8], cut: usize, cap: usize, max_other: usize) {
        self.lines += 1;
        let mut b = b;
        while let Some((&c, head)) = b.split_last() {
            if c == b'\n' || c == b'\r' {
                b = head;
            } else {
                break;
            }
        }
        let t = trim(b);
        if t.is_empty() || t.iter().all(|c| *c == b'-') {
            return;
        }
        let mut tcmd_ts = None;
        let mut tcmd_cpu = None;
        // trace-cmd report's funcgraph events; a cheap byte test before the substring search
        let tcmd = if memchr(b'[', b).is_some() { self.tcmd.find(b) } else { None };
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
        let g = if let Some(g) = parsed { g } else {
            if tcmd_ts.is_some() || tcmd_cpu.is_some() {
                self.bad += 1;
                if self.bad_first == 0 {
                    self.bad_first = self.lines;
                }
                return;
            }
            if self.other.len() < max_other {
                self.other.push((self.lines, String::from_utf8_lossy(b).into_owned()));
            } else {
                self.other_dropped += 1;
            }
            return;
        };
        if g.cpu >= MAX_CPU {
            self.bad += 1;
            return;
        }
        if let Some(ts) = g.ts {
            if self.first_ns < 0 {
                self.first_ns = ts;
            }
            self.last_ns = self.last_ns.max(ts);
        }
        let cpu = self.task_of(g.cpu, g.task);
        if g.dur.is_some() {
            self.durations += 1;
        }
        match g.body {
            Body::Bad => {
                self.bad += 1;
                if self.bad_first == 0 {
                    self.bad_first = self.lines;
                }
                return;
            }
            Body::Comment => {
                self.comments += 1;
            }
            Body::Switch(prev, next) => {
                self.switches += 1;
                let cur = self.task_of(g.cpu, None);
                if !prev.is_empty() && !self.task_ids.contains_key(prev) {
                    self.task_ids.insert(prev.to_vec(), cur); // the CPU's unnamed task gets its name
                }
                let n = self.task(next);
                self.cpu_task[g.cpu] = n;
                if let Some(name) = self.cpu_name.get_mut(g.cpu) {
                    name.clear();
                }
            }
            Body::Open(name) => {
                let func = self.id(name);
                let f = self.place(cpu, func, g.ts, g.cpu, cut, cap);
                self.cpus[cpu].stack.push(f);
            }
            Body::Leaf(name) => {
                let func = self.id(name);
                let f = self.place(cpu, func, g.ts, g.cpu, cut, cap); // a leaf line's time is its entry's
                self.finish(cpu, &f, g.dur, g.dur);
            }
            Body::Close(tail) => {
                let c = &mut self.cpus[cpu];
                match c.stack.pop() {
                    Some(f) => {
                        let self_ns = g.dur.map(|d| d.saturating_sub(f.child_ns));
                        self.finish(cpu, &f, g.dur, self_ns);
                    }
                    None => {
                        // its start was overwritten or before the trace began: the tail names it
                        self.orphans += 1;
                        let func = self.id(tail.unwrap_or(b"(unknown)"));
                        let c = &mut self.cpus[cpu];
                        let self_ns = g.dur.map(|d| d.saturating_sub(c.orphan_child_ns));
                        c.orphan_child_ns = 0;
                        let node = self.node(0, func, 0, cut, cap);
                        let f = Frame { func, child_ns: 0, node, group: NONE, aside: false, direct: false };
                        self.finish(cpu, &f, g.dur, self_ns);
                    }
                }
            }
        }
        self.graph += 1;
    }

    /// A call ended: add it to its function, its initcall, its node and its parent's children.
    fn finish(&mut self, cpu: usize, f: &Frame, dur: Option<i64>, self_ns: Option<i64>) {
        let (func, node) = (f.func, f.node);
        self.stats[func as usize].add(dur, self_ns);
        if f.group != NONE {
            if func == self.one_initcall {
                self.blocks[f.group as usize].dur = dur.unwrap_or(-1);
                self.close_block(f.group);
            } else if !f.aside {
                self.group_add(f.group, func, dur, self_ns);
                let b = &mut self.blocks[f.group as usize];
                if f.direct && b.child == func && b.child_dur < 0 {
                    b.child_dur = dur.unwrap_or(-1);
                }
                if f.direct {
                    b.work = b.work.saturating_add(dur.unwrap_or(0));
                }
            }
        }
        if node != NONE {
            self.tree[node as usize].2.add(dur, None);
        }
        let c = &mut self.cpus[cpu];
        let d = dur.unwrap_or(0);
        match c.stack.last_mut() {
            Some(p) => p.child_ns = p.child_ns.saturating_add(d),
            None => {
                c.orphan_child_ns = c.orphan_child_ns.saturating_add(d);
                self.tree[0].2.total = self.tree[0].2.total.saturating_add(d);
                self.tree[0].2.calls += 1;
            }
        }
    }
}

/// The tree without nodes under `share` of the root's total, renumbered, with self times.
fn prune(tree: &[(u32, u32, Stat)], share: f64) -> Vec<(i64, u32, Stat)> {
    let floor = (tree[0].2.total as f64 * share) as i64;
    let mut new_id = vec![-1i64; tree.len()];
    let mut out: Vec<(i64, u32, Stat)> = Vec::new();
    for (i, (parent, func, st)) in tree.iter().enumerate() {
        // parents come before children: a node is kept when its parent was and it is big enough
        let p = if i == 0 { -1 } else { new_id[*parent as usize] };
        if i == 0 || (p >= 0 && st.total >= floor.max(1)) {
            new_id[i] = out.len() as i64;
            out.push((p, *func, *st));
        }
    }
    let mut child = vec![0i64; out.len()];
    for (p, _, st) in out.iter().skip(1) {
        child[*p as usize] = child[*p as usize].saturating_add(st.total);
    }
    for (i, n) in out.iter_mut().enumerate() {
        n.2.self_ns = n.2.total.saturating_sub(child[i]).max(0);
    }
    out
}

fn stat_lists<'py>(py: Python<'py>, d: &Bound<'py, PyDict>, key: &str, it: &[Stat]) -> PyResult<()> {
    let calls: Vec<u64> = it.iter().map(|s| s.calls).collect();
    let total: Vec<i64> = it.iter().map(|s| s.total).collect();
    let max: Vec<i64> = it.iter().map(|s| s.max).collect();
    let own: Vec<i64> = it.iter().map(|s| s.self_ns).collect();
    d.set_item(key, (PyList::new(py, calls)?, PyList::new(py, total)?, PyList::new(py, max)?, PyList::new(py, own)?))
}

/// ftrace_graph(path, depth_cut, node_cap, share, max_other, per_group) -> dict of columns.
///
/// Reads the file in 1 MiB chunks (memory does not grow with its length). Keys: counts (`lines`,
/// `graph`, `bad`, `bad_first`, `comments`, `switches`, `orphans`, `open` calls never closed,
/// `durations` lines with a duration), `first_ns`/`last_ns` (abstime, -1 without),
/// `names`, `functions` (calls, total, max, self columns by name id), `blocks` (one per
/// do_one_initcall call: (initcall name id or -1, several candidates?, start ns, duration ns, cpu,
/// line, the initcall's start ns, duration ns, line, the time of its calls that are not
/// do_one_initcall's helpers); -1 for what the trace does not show),
/// `group_keys`/`group_stats` (block, name id, then the four columns: each block's initcall row,
/// then its `per_group` worst functions; `group_rows_cut` counts the others), `tree`
/// (parent, name id, then the four columns; node 0 is the root, parent -1) and `other`
/// [(line, text)] of the lines that are not graph lines (headers, events), at most max_other.
#[pyfunction]
#[pyo3(signature = (path, depth_cut=24, node_cap=200_000, share=0.0005, max_other=1_000_000, per_group=200))]
pub(crate) fn ftrace_graph<'py>(py: Python<'py>, path: &str, depth_cut: usize, node_cap: usize, share: f64,
                                max_other: usize, per_group: usize) -> PyResult<Bound<'py, PyDict>> {
    let path = path.to_owned();
    let scan = py.allow_threads(move || -> std::io::Result<Scan> {
        let mut f = File::open(&path)?;
        let mut s = Scan::new(per_group);
        s.one_initcall = s.id(b"do_one_initcall");
        s.one_initcall_debug = s.id(b"do_one_initcall_debug");
        s.tree.push((NONE, NONE, Stat::default()));
        let (cut, cap) = (depth_cut.max(1), node_cap.max(1));
        // 1 MiB chunks, lines cut in place (no copy per line); a line split by the chunk's end
        // moves to the front of the buffer and the next read fills in after it
        let mut buf = vec![0u8; 1 << 20];
        let mut have = 0usize;
        loop {
            if have == buf.len() {
                buf.resize(buf.len() * 2, 0); // one line longer than the buffer
            }
            let n = f.read(&mut buf[have..])?;
            let end = have + n;
            let mut start = 0;
            for nl in memchr_iter(b'\n', &buf[have..end]) {
                let stop = have + nl + 1;
                s.line(&buf[start..stop], cut, cap, max_other);
                start = stop;
            }
            if n == 0 {
                if start < end {
                    s.line(&buf[start..end], cut, cap, max_other); // no final newline
                }
                break;
            }
            buf.copy_within(start..end, 0);
            have = end - start;
        }
        Ok(s)
    }).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
    let d = PyDict::new(py);
    let open: usize = scan.cpus.iter().map(|c| c.stack.len()).sum();
    for (k, v) in [("lines", scan.lines), ("graph", scan.graph), ("bad", scan.bad), ("bad_first", scan.bad_first),
                   ("comments", scan.comments), ("switches", scan.switches), ("orphans", scan.orphans),
                   ("open", open as u64), ("durations", scan.durations), ("other_dropped", scan.other_dropped)] {
        d.set_item(k, v)?;
    }
    d.set_item("first_ns", scan.first_ns)?;
    d.set_item("last_ns", scan.last_ns)?;
    let names: Vec<String> = scan.name_at.windows(2)
        .map(|w| String::from_utf8_lossy(&scan.names[w[0]..w[1]]).into_owned()).collect();
    d.set_item("names", PyList::new(py, names)?)?;
    stat_lists(py, &d, "functions", &scan.stats)?;
    // per initcall its own row and its `per_group` worst functions: what the tables show, and a
    // bounded answer (initcalls x functions they call can reach millions of rows); blocks still
    // open when the trace ended are cut here
    let mut scan = scan;
    for b in 0..scan.blocks.len() {
        scan.close_block(b as u32);
    }
    let kept: Vec<(u32, u32, Stat)> = scan.groups.iter().enumerate()
        .flat_map(|(b, g)| g.rows.iter().map(move |r| (b as u32, r.0, r.1))).collect();
    d.set_item("group_rows_cut", scan.group_rows_cut)?;
    let gs: Vec<Stat> = kept.iter().map(|g| g.2).collect();
    stat_lists(py, &d, "group_stats", &gs)?;
    d.set_item("group_keys", (PyList::new(py, kept.iter().map(|g| g.0))?, PyList::new(py, kept.iter().map(|g| g.1))?))?;
    d.set_item("blocks", PyList::new(py, scan.blocks.iter().map(|b| {
        (if b.child == NONE { -1 } else { b.child as i64 }, b.multi, b.start, b.dur, b.cpu, b.line, b.child_start,
         b.child_dur, b.child_line, b.work)
    }))?)?;
    let tree = prune(&scan.tree, share.max(0.0));
    let ts: Vec<Stat> = tree.iter().map(|n| n.2).collect();
    stat_lists(py, &d, "tree_stats", &ts)?;
    d.set_item("tree_keys", (PyList::new(py, tree.iter().map(|n| n.0))?,
                             PyList::new(py, tree.iter().map(|n| if n.1 == NONE { -1 } else { n.1 as i64 }))?))?;
    d.set_item("other", PyList::new(py, scan.other.iter().map(|(n, t)| (*n, t.as_str())))?)?;
    Ok(d)
}
