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

use std::sync::mpsc::{channel, sync_channel};

use memchr::{memchr_iter, memmem};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::fxhash::FxMap as FastMap;
use super::line::{name_hash, parse, same, BodyKind, Kind, Rec, NO_RANGE};

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
}


impl Scan {
    fn new(per_group: usize) -> Scan {
        Scan {
            names: Vec::new(), name_at: vec![0], slots: vec![EMPTY; 1 << 10], slot_bits: 10, stats: Vec::new(), groups: Vec::new(), gslot: Vec::new(), nslot: Vec::new(), per_group,
            group_rows_cut: 0, blocks: Vec::new(), helper: Vec::new(), tree_ids: FastMap::default(), tree: Vec::new(),
            cpus: Vec::new(), task_ids: FastMap::default(), cpu_task: Vec::new(), cpu_name: Vec::new(), other: Vec::new(),
            other_dropped: 0, lines: 0, graph: 0, bad: 0, bad_first: 0, comments: 0, switches: 0, orphans: 0,
            durations: 0, first_ns: -1, last_ns: -1, one_initcall: NONE, one_initcall_debug: NONE,
        }
    }

    /// The id of a function name, made on first sight. One lookup a call line: an open
    /// addressing table kept at most half full, each slot the hash's high half beside the id
    /// (most misses end there, without reading the name's bytes).
    fn id(&mut self, name: &[u8]) -> u32 {
        self.id_h(name, name_hash(name))
    }

    /// `id` with the name's hash already made (by the reader thread: `Rec::hash`).
    fn id_h(&mut self, name: &[u8], h: u64) -> u32 {
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

    /// One parsed line (`ftrace_line::parse`) of `chunk` into the counts, stacks and tables.
    fn apply(&mut self, chunk: &[u8], r: &Rec, cut: usize, cap: usize, max_other: usize) {
        self.lines += 1;
        match r.kind {
            Kind::Skip => return,
            Kind::TcmdBad => {
                self.bad += 1;
                if self.bad_first == 0 {
                    self.bad_first = self.lines;
                }
                return;
            }
            Kind::Other => {
                if self.other.len() < max_other {
                    self.other.push((self.lines, String::from_utf8_lossy(&chunk[r.a.0..r.a.1]).into_owned()));
                } else {
                    self.other_dropped += 1;
                }
                return;
            }
            Kind::Graph => {}
        }
        if r.cpu >= MAX_CPU {
            self.bad += 1;
            return;
        }
        if let Some(ts) = r.ts {
            if self.first_ns < 0 {
                self.first_ns = ts;
            }
            self.last_ns = self.last_ns.max(ts);
        }
        let task = if r.task == NO_RANGE { None } else { Some(&chunk[r.task.0..r.task.1]) };
        let cpu = self.task_of(r.cpu, task);
        if r.dur.is_some() {
            self.durations += 1;
        }
        match r.body {
            BodyKind::Bad => {
                self.bad += 1;
                if self.bad_first == 0 {
                    self.bad_first = self.lines;
                }
                return;
            }
            BodyKind::Comment => {
                self.comments += 1;
            }
            BodyKind::Switch => {
                self.switches += 1;
                let (prev, next) = (&chunk[r.a.0..r.a.1], &chunk[r.b.0..r.b.1]);
                let cur = self.task_of(r.cpu, None);
                if !prev.is_empty() && !self.task_ids.contains_key(prev) {
                    self.task_ids.insert(prev.to_vec(), cur); // the CPU's unnamed task gets its name
                }
                let n = self.task(next);
                self.cpu_task[r.cpu] = n;
                if let Some(name) = self.cpu_name.get_mut(r.cpu) {
                    name.clear();
                }
            }
            BodyKind::Open => {
                let func = self.id_h(&chunk[r.a.0..r.a.1], r.hash);
                let f = self.place(cpu, func, r.ts, r.cpu, cut, cap);
                self.cpus[cpu].stack.push(f);
            }
            BodyKind::Leaf => {
                let func = self.id_h(&chunk[r.a.0..r.a.1], r.hash);
                let f = self.place(cpu, func, r.ts, r.cpu, cut, cap); // a leaf line's time is its entry's
                self.finish(cpu, &f, r.dur, r.dur);
            }
            BodyKind::Close => {
                let c = &mut self.cpus[cpu];
                match c.stack.pop() {
                    Some(f) => {
                        let self_ns = r.dur.map(|d| d.saturating_sub(f.child_ns));
                        self.finish(cpu, &f, r.dur, self_ns);
                    }
                    None => {
                        // its start was overwritten or before the trace began: the tail names it
                        self.orphans += 1;
                        let tail: &[u8] = if r.a == NO_RANGE { b"(unknown)" } else { &chunk[r.a.0..r.a.1] };
                        let func = self.id(tail);
                        let c = &mut self.cpus[cpu];
                        let self_ns = r.dur.map(|d| d.saturating_sub(c.orphan_child_ns));
                        c.orphan_child_ns = 0;
                        let node = self.node(0, func, 0, cut, cap);
                        let f = Frame { func, child_ns: 0, node, group: NONE, aside: false, direct: false };
                        self.finish(cpu, &f, r.dur, self_ns);
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
        // Two stages on two cores: a reader thread reads 1 MiB chunks and parses their whole
        // lines into Recs (byte ranges into the chunk: no copy per line); this thread runs the
        // state machine over them, in file order (a call's lines can sit in different chunks).
        // A line split by a chunk's end moves to the front of the next buffer. Buffers go back
        // to the reader for reuse: memory holds a few chunks, not the file.
        let (tx, rx) = sync_channel::<(Vec<u8>, Vec<Rec>)>(2);
        let (back_tx, back_rx) = channel::<(Vec<u8>, Vec<Rec>)>();
        std::thread::scope(|sc| {
            let reader = sc.spawn(move || -> std::io::Result<()> {
                let finder = memmem::Finder::new(b": funcgraph_e");
                let mut buf = vec![0u8; 1 << 20];
                let mut recs: Vec<Rec> = Vec::new();
                let mut have = 0usize;
                loop {
                    if have == buf.len() {
                        buf.resize(buf.len() * 2, 0); // one line longer than the buffer
                    }
                    let n = f.read(&mut buf[have..])?;
                    let end = have + n;
                    let mut start = 0;
                    recs.clear();
                    for nl in memchr_iter(b'\n', &buf[have..end]) {
                        let stop = have + nl + 1;
                        recs.push(parse(&buf, &buf[start..stop], &finder));
                        start = stop;
                    }
                    if n == 0 && start < end {
                        recs.push(parse(&buf, &buf[start..end], &finder)); // no final newline
                        start = end;
                    }
                    let (mut next, next_recs) = back_rx.try_recv()
                        .unwrap_or_else(|_| (vec![0u8; 1 << 20], Vec::new()));
                    if next.len() < end - start {
                        next.resize(end - start, 0);
                    }
                    next[..end - start].copy_from_slice(&buf[start..end]);
                    have = end - start;
                    let full = std::mem::replace(&mut buf, next);
                    let done = std::mem::replace(&mut recs, next_recs);
                    if tx.send((full, done)).is_err() || n == 0 {
                        return Ok(());
                    }
                }
            });
            for (chunk, recs) in rx.iter() {
                for r in &recs {
                    s.apply(&chunk, r, cut, cap, max_other);
                }
                let _ = back_tx.send((chunk, recs)); // the reader may have finished
            }
            reader.join().unwrap_or_else(|_| Err(std::io::Error::new(std::io::ErrorKind::Other, "reader thread failed")))
        })?;
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
