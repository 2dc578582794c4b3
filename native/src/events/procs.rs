//! The user-space process tree's columns (advise/userspace.py ProcTree; step 24b): the process
//! rows of a block read as columns, and the tree's order and links made from columns, without a
//! Python object per process.

use pyo3::prelude::*;
use pyo3::types::PyList;

use super::{axis_times, EventBlock, Item, NONE, NO_NAME, PROCESS};
use crate::fxhash::FxMap;

/// The columns of one process each: (positions, start, end, pid, ppid, line, end_line, name, exe).
type ProcColumns<'py> = (Vec<usize>, Vec<i64>, Vec<Option<i64>>, Vec<i64>, Vec<Option<i64>>, Vec<i64>,
                         Vec<Option<i64>>, Bound<'py, PyList>, Bound<'py, PyList>);

/// process_columns(block, times) -> (positions, start, end, pid, ppid, line, end_line, name, exe):
/// the block's process rows that are not kernel threads and have an axis time, in position order,
/// column by column: start the axis time, end start + duration when the process exited (else
/// None), ppid and end_line None when not known, name the event's name, exe the exec'd file
/// (None: never exec'd). ProcTree's rows (advise/userspace.py `_proc_columns`, its Python
/// reference for the other events).
#[pyfunction]
pub(crate) fn process_columns<'py>(py: Python<'py>, block: PyRef<'py, EventBlock>, times: &Bound<'py, PyAny>)
                                   -> PyResult<ProcColumns<'py>> {
    let ts = axis_times(times)?;
    let rows = &block.rows;
    let p = &rows.procs;
    let opt = |v: i64| if v == NONE { None } else { Some(v) };
    let (mut pos, mut start, mut end, mut pid, mut ppid, mut line, mut end_line) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut names, mut exes): (Vec<PyObject>, Vec<PyObject>) = (Vec::new(), Vec::new());
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
        pos.push(i);
        start.push(t);
        end.push(if rows.dur[r] == NONE || !p.exited[d] { None } else { Some(t + rows.dur[r]) });
        pid.push(p.pid[d]);
        ppid.push(opt(p.ppid[d]));
        line.push(rows.line[r]);
        end_line.push(opt(rows.end[r]));
        names.push(rows.name_objs[rows.name[r] as usize].clone_ref(py).into_any());
        exes.push(if p.exe[d] == NO_NAME { py.None() } else { rows.name_objs[p.exe[d] as usize].clone_ref(py).into_any() });
        Ok(true)
    })?;
    Ok((pos, start, end, pid, ppid, line, end_line, PyList::new(py, names)?, PyList::new(py, exes)?))
}

/// proc_links(start, line, pid, ppid) -> (order, parent, child_start, children): the process
/// tree of processes given column by column (advise/userspace.py ProcTree): `order` the
/// processes in fork order (by start, then line, then as given: a stable sort); the rest over
/// that order: `parent[k]` the process that forked k, -1 for none (the latest process with k's
/// ppid that started at or before it, k itself left out); k's children, in fork order, are
/// `children[child_start[k]..child_start[k + 1]]`.
#[pyfunction]
pub(crate) fn proc_links(start: Vec<i64>, line: Vec<i64>, pid: Vec<i64>, ppid: Vec<Option<i64>>)
                         -> PyResult<(Vec<usize>, Vec<i64>, Vec<usize>, Vec<usize>)> {
    let n = start.len();
    if line.len() != n || pid.len() != n || ppid.len() != n {
        return Err(pyo3::exceptions::PyValueError::new_err("proc_links: columns of one length"));
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (start[i], line[i])); // stable
    // each pid's processes in fork order
    let mut by_pid: FxMap<i64, Vec<usize>> = FxMap::default();
    for (k, &i) in order.iter().enumerate() {
        by_pid.entry(pid[i]).or_default().push(k);
    }
    let mut parent = vec![-1i64; n];
    for (k, &i) in order.iter().enumerate() {
        let Some(pp) = ppid[i] else { continue };
        let Some(cands) = by_pid.get(&pp) else { continue };
        // those started at or before k: a prefix in fork order; the last of it that is not k
        let s = start[i];
        let upto = cands.partition_point(|&q| start[order[q]] <= s);
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
    Ok((order, parent, child_start, children))
}
