//! The call-graph state machine of a function_graph trace (`Scan`): per task a stack of open
//! calls, fed the parsed lines (line.rs `Rec`) in file order; it sums per function, per
//! do_one_initcall block (the initcall it ran and that initcall's worst functions) and per node
//! of a bounded call tree. mod.rs reads the file into it and hands the sums to Python.

use super::line::{name_hash, same, BodyKind, Kind, Rec, NO_RANGE};
use crate::fxhash::FxMap as FastMap;

pub(super) const NONE: u32 = u32::MAX;
const MAX_CPU: usize = 8192;
const EMPTY: u64 = u64::MAX; // a free slot of the name table (no id reaches 2^32 - 1)

#[derive(Clone, Copy, Default)]
pub(super) struct Stat {
    pub(super) calls: u64,
    pub(super) total: i64,
    pub(super) max: i64,
    pub(super) self_ns: i64,
}

impl Stat {
    fn add(&mut self, dur: Option<i64>, self_ns: Option<i64>) {
        // saturating: a hostile file's sums must not wrap around
        self.calls += 1;
        if let Some(d) = dur {
            self.total = self.total.saturating_add(d);
            self.max = self.max.max(d);
        }
        // a call's self time (its duration less its callees' durations) counts at 0 when negative:
        // an interrupt entry printed at the caller's indent (irq_enter_rcu, do_interrupt_handler
        // as siblings of the call it interrupted) or the tracer's rounding can make the callees
        // sum to more than the call. So a function's self is the sum of its calls' clamped self
        // times, which can exceed its total less its callees' totals (docs/ftrace.md)
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
pub(super) struct Block {
    pub(super) child: u32,
    pub(super) multi: bool,
    pub(super) start: i64,
    pub(super) dur: i64,
    pub(super) cpu: i64,
    pub(super) line: u64,
    pub(super) child_start: i64,
    pub(super) child_dur: i64,
    pub(super) child_line: u64,
    pub(super) work: i64, // the direct children's time that is not do_one_initcall's own helpers'
}

/// The group rows of one do_one_initcall block: per function, its calls in the block. A block's
/// calls all sit above its do_one_initcall on one task's stack, so when that call returns no
/// more can come: the rows are sorted and cut to the answer's size then (`Scan::close_block`),
/// and the index by function dropped. Memory holds the open blocks' rows, not blocks x functions.
#[derive(Default)]
pub(super) struct Rows {
    pub(super) at: FastMap<u32, u32>, // function id -> index in rows, while the block is open
    pub(super) rows: Vec<(u32, Stat)>,
    pub(super) closed: bool,
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

pub(super) struct Scan {
    pub(super) names: Vec<u8>,       // every function name end to end (one block of memory, not one per name)
    pub(super) name_at: Vec<usize>,  // by name id: where its name starts in `names`; one more at the end
    pub(super) slots: Vec<u64>,      // open addressing by name hash's high bits: the hash's high half and the id
    pub(super) slot_bits: u32,
    pub(super) stats: Vec<Stat>,
    pub(super) groups: Vec<Rows>, // by block
    pub(super) gslot: Vec<(u32, u32)>, // by function id: the block and row its last call went to (skips the hash)
    pub(super) nslot: Vec<(u32, u32)>, // by function id: the tree parent and node of its last call (the same)
    pub(super) per_group: usize,  // rows kept per block besides the initcall's own
    pub(super) group_rows_cut: u64,
    pub(super) blocks: Vec<Block>,
    pub(super) helper: Vec<bool>, // by name id
    pub(super) tree_ids: FastMap<(u32, u32), u32>,
    pub(super) tree: Vec<(u32, u32, Stat)>, // parent, func, stat (self computed at the end)
    cpus: Vec<Cpu>, // task stacks
    pub(super) task_ids: FastMap<Vec<u8>, usize>,
    pub(super) cpu_task: Vec<usize>, // the task each CPU runs now, usize::MAX before its first line
    pub(super) cpu_name: Vec<Vec<u8>>, // the task column last seen on each CPU
    pub(super) other: Vec<(u64, String)>,
    pub(super) other_dropped: u64,
    pub(super) lines: u64,
    pub(super) graph: u64,
    pub(super) bad: u64,
    pub(super) bad_first: u64,
    pub(super) comments: u64,
    pub(super) switches: u64,
    pub(super) orphans: u64,
    pub(super) durations: u64,
    pub(super) first_ns: i64,
    pub(super) last_ns: i64,
    pub(super) one_initcall: u32,
    pub(super) one_initcall_debug: u32, // 4.x: do_one_initcall -> do_one_initcall_debug -> the initcall
}


impl Scan {
    pub(super) fn new(per_group: usize) -> Scan {
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
    pub(super) fn id(&mut self, name: &[u8]) -> u32 {
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
    pub(super) fn close_block(&mut self, block: u32) {
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

    /// One parsed line (line.rs `parse`) of `chunk` into the counts, stacks and tables.
    /// How many calls are still open (never closed when the trace ended).
    pub(super) fn open_calls(&self) -> usize {
        self.cpus.iter().map(|c| c.stack.len()).sum()
    }

    pub(super) fn apply(&mut self, chunk: &[u8], r: &Rec, cut: usize, cap: usize, max_other: usize) {
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
