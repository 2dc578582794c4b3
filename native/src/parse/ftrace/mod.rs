//! function_graph traces: scan a trace file in chunks and aggregate its call tree (`ftrace_graph`,
//! called by bootlens/parsers/ftrace.py). The format knowledge of function_graph lines lives here
//! only (parsers/ftrace.py orchestrates and reads the few event and header lines this returns to
//! it: parse/symbol.rs reads the symbols in their initcall events); there is no
//! Python twin: a graph trace runs to millions of lines, and one Python object per line is
//! what issue 14 measured as the cost to remove.
//!
//! A graph line is, each column optional (kernel/trace/trace_functions_graph.c):
//! `[abstime |] [cpu)] [comm-pid |] [latency flags |] [flag duration us |] indent body`, body one of
//! `name() {`, `name();`, `}`, `} /* name */` (or `} /* name() */`), `/* comment */`; between
//! them context-switch banners (` 0)  a-1  =>  b-2 `), `------` rules and `==========>` irq marks.
//! `trace-cmd report` prints the same body after `comm-pid [cpu] ts: funcgraph_entry:`.
//!
//! line.rs parses one line (a pure function of its bytes, run by the reader thread), graph.rs is
//! the state machine over the parsed lines, this file reads the file and writes the answer.

use std::fs::File;
use std::io::Read;
use std::sync::mpsc::{channel, sync_channel};

use memchr::{memchr_iter, memmem};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use graph::{Scan, Stat, NONE};
use line::{parse, Rec};

mod graph;
mod line;

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
    let open = scan.open_calls();
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
