//! The user-space process tree of a boot (advise/userspace.py ProcTree; step 24b): the process
//! rows of a block and the other process events, put in fork order and linked to their parents
//! natively, without a Python object per process.

use pyo3::prelude::*;
use pyo3::types::PyList;

use super::{EventBlock, Item, NONE, NO_NAME, PROCESS};
use crate::fxhash::FxMap;
use crate::read::time::axis_times;

/// The processes of the tree, column by column.
#[derive(Default)]
struct Cols {
    pos: Vec<usize>,
    start: Vec<i64>,
    end: Vec<Option<i64>>,
    pid: Vec<i64>,
    ppid: Vec<Option<i64>>,
    line: Vec<i64>,
    end_line: Vec<Option<i64>>,
    name: Vec<PyObject>,
    exe: Vec<PyObject>,
}

/// The extra processes ProcTree gives (lists parallel to each other, ascending positions).
type Extra = (Vec<usize>, Vec<i64>, Vec<Option<i64>>, Vec<i64>, Vec<Option<i64>>, Vec<i64>, Vec<Option<i64>>,
              Vec<PyObject>, Vec<PyObject>);

/// The tree as process_tree returns it: (pos, start, end, line, end_line, name, exe) in fork
/// order, then parent, child_start, children.
type Tree<'py> = (Vec<usize>, Vec<i64>, Vec<Option<i64>>, Vec<i64>, Vec<Option<i64>>, Bound<'py, PyList>,
                  Bound<'py, PyList>, Vec<i64>, Vec<usize>, Vec<usize>);

/// The block's process rows that are not kernel threads and have an axis time, in position order:
/// start the axis time, end start + duration when the process exited.
fn block_rows(py: Python<'_>, block: &EventBlock, ts: &[i64], out: &mut Cols) -> PyResult<()> {
    let rows = &block.rows;
    let p = &rows.procs;
    let opt = |v: i64| if v == NONE { None } else { Some(v) };
    block.walk(|i, it| {
        if i >= ts.len() {
            return Ok(false);
        }
        let r = match it {
            Item::Row(r) if rows.kind[r] == PROCESS && !rows.is_kthread(r) && ts[i] != NONE => r,
            _ => return Ok(true),
        };
        let d = rows.detail[r] as usize;
        let t = ts[i];
        out.pos.push(i);
        out.start.push(t);
        out.end.push(if rows.dur[r] == NONE || !p.exited[d] { None } else { Some(t + rows.dur[r]) });
        out.pid.push(p.pid[d]);
        out.ppid.push(opt(p.ppid[d]));
        out.line.push(rows.line[r]);
        out.end_line.push(opt(rows.end[r]));
        out.name.push(rows.name_objs[rows.name[r] as usize].clone_ref(py).into_any());
        out.exe.push(if p.exe[d] == NO_NAME { py.None() } else { rows.name_objs[p.exe[d] as usize].clone_ref(py).into_any() });
        Ok(true)
    })
}

/// process_tree(block, times, extra) -> (pos, start, end, line, end_line, name, exe, parent,
/// child_start, children): the user-space process tree (advise/userspace.py ProcTree) of the
/// block's process rows that are not kernel threads and have an axis time (`block` None: none)
/// and of the `extra` processes (the other process events, read by ProcTree: pos, start, end,
/// pid, ppid, line, end_line, name, exe). The columns in fork order (by start, then line, then
/// position: a stable sort of them in log order); `parent[k]` the process that forked k, -1 for
/// none (the latest process with k's ppid that started at or before it, k itself left out); k's
/// children, in fork order, `children[child_start[k]..child_start[k + 1]]`.
#[pyfunction]
#[pyo3(signature = (block, times, extra))]
pub(crate) fn process_tree<'py>(py: Python<'py>, block: Option<PyRef<'py, EventBlock>>, times: &Bound<'py, PyAny>,
                                extra: Extra) -> PyResult<Tree<'py>> {
    let mut c = Cols::default();
    if let Some(b) = &block {
        block_rows(py, b, &axis_times(times)?, &mut c)?;
    }
    let (pos, start, end, pid, ppid, line, end_line, name, exe) = extra;
    let n_extra = pos.len();
    if [start.len(), end.len(), pid.len(), ppid.len(), line.len(), end_line.len(), name.len(), exe.len()]
        .iter().any(|&l| l != n_extra) {
        return Err(pyo3::exceptions::PyValueError::new_err("process_tree: extra columns of one length"));
    }
    let n_rows = c.pos.len();
    fn chain<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
        a.extend(b);
        a
    }
    let c = Cols {
        pos: chain(c.pos, pos), start: chain(c.start, start), end: chain(c.end, end), pid: chain(c.pid, pid),
        ppid: chain(c.ppid, ppid), line: chain(c.line, line), end_line: chain(c.end_line, end_line),
        name: chain(c.name, name), exe: chain(c.exe, exe),
    };
    let n = c.pos.len();
    let mut order: Vec<usize> = (0..n).collect();
    if n_rows > 0 && n_extra > 0 {
        order.sort_by_key(|&i| c.pos[i]); // log order
    }
    order.sort_by_key(|&i| (c.start[i], c.line[i])); // stable: fork order
    // each pid's processes in fork order
    let mut by_pid: FxMap<i64, Vec<usize>> = FxMap::default();
    for (k, &i) in order.iter().enumerate() {
        by_pid.entry(c.pid[i]).or_default().push(k);
    }
    let mut parent = vec![-1i64; n];
    for (k, &i) in order.iter().enumerate() {
        let Some(pp) = c.ppid[i] else { continue };
        let Some(cands) = by_pid.get(&pp) else { continue };
        // those started at or before k: a prefix in fork order; the last of it that is not k
        let s = c.start[i];
        let upto = cands.partition_point(|&q| c.start[order[q]] <= s);
        if let Some(&q) = cands[..upto].iter().rev().find(|&&q| q != k) {
            parent[k] = q as i64;
        }
    }
    let mut child_start = vec![0usize; n + 1];
    for &q in &parent {
        if q >= 0 {
            child_start[q as usize + 1] += 1;
        }
    }
    for k in 0..n {
        child_start[k + 1] += child_start[k];
    }
    let mut fill = child_start.clone();
    let mut children = vec![0usize; child_start[n]];
    for (k, &q) in parent.iter().enumerate() {
        if q >= 0 {
            children[fill[q as usize]] = k;
            fill[q as usize] += 1;
        }
    }
    let name = PyList::new(py, order.iter().map(|&i| c.name[i].clone_ref(py)))?;
    let exe = PyList::new(py, order.iter().map(|&i| c.exe[i].clone_ref(py)))?;
    Ok((order.iter().map(|&i| c.pos[i]).collect(), order.iter().map(|&i| c.start[i]).collect(),
        order.iter().map(|&i| c.end[i]).collect(), order.iter().map(|&i| c.line[i]).collect(),
        order.iter().map(|&i| c.end_line[i]).collect(), name, exe, parent, child_start, children))
}
