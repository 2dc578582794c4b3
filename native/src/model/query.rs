//! The advisor's questions to an EventBlock's rows (issue 14, step 24a): which rows of a kind
//! pass a filter on their columns, and a few answers about those rows (their names, the sum and
//! the longest of their durations, the innermost of them running at given times), without an
//! `Event` built per row. Generic: the rules (advise/rules/kernel_*.py) say what they ask;
//! advise/rules/_kernel.py `Query.test` is the Python reference of the filter (the path of
//! the events outside the block, and of a boot without one) and `Picked` of the answers;
//! `tests/test_native_query.py` compares the two on real logs.

use pyo3::prelude::*;
use pyo3::types::{PyList, PySet, PyType};

use super::{named_tuple, Detail, EventBlock, INITCALL, NONE};
use crate::fxhash::FxMap;
use crate::read::time::axis_times;

/// A filter on one field: the values allowed, or with the flag set the values not allowed.
type Among<T> = Option<(bool, Vec<T>)>;

fn allows<T: PartialEq>(f: &Among<T>, v: &T) -> bool {
    match f {
        None => true,
        Some((negate, values)) => values.contains(v) != *negate,
    }
}

/// The rows of a block that passed a filter (`pick`): their row ids, ascending, and the axis
/// times of the block's events (`times`). Only the ids are kept (4 bytes a row: 600,000 picked
/// initcalls with their positions, starts and durations beside were 17 MB of fresh pages, 10 ms
/// of page faults here); a row's position, start and duration are read when asked for.
#[pyclass(module = "bootlens._scan", frozen)]
pub(crate) struct Picked {
    block: Py<EventBlock>,
    times: PyObject,
    rows: Vec<u32>,
}

impl EventBlock {
    /// The position in the sequence of row `r`: r plus the other events before it (other event
    /// j has opos[j] - j rows before it, a non-decreasing count).
    fn position_of(&self, r: usize) -> usize {
        let (mut lo, mut hi) = (0usize, self.opos.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.opos[mid] - mid <= r {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        r + lo
    }
}

impl Picked {
    /// f(place, row, position) for each picked row, in order (positions by a running count).
    fn each(&self, mut f: impl FnMut(usize, usize, usize)) {
        let opos = &self.block.get().opos;
        let mut k = 0usize;
        for (place, &r) in self.rows.iter().enumerate() {
            let r = r as usize;
            while k < opos.len() && opos[k] - k <= r {
                k += 1;
            }
            f(place, r, r + k);
        }
    }

    /// The row at `place` (IndexError past the pick).
    fn row(&self, place: usize) -> PyResult<usize> {
        self.rows.get(place).map(|&r| r as usize)
            .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err("a place past the pick"))
    }
}

/// pick(block, kind, times, pid=None, module=None, ret=None, returned=None, names=None,
/// name_has=None, min_ns=None, starts=None) -> Picked: the rows of `kind` (0 initcall, 1 probe,
/// 2 fixup) that pass every filter given. A field filter is (negate, values): the field's value
/// is one of `values` (not one of them, with `negate`); the fields are the detail's
/// (InitcallDetail: pid, module, ret, returned; ProbeDetail, of a probe or a fixup: ret only
/// here). `names`: the row's name, likewise; `name_has`: a substring of its name; `min_ns`: its
/// duration (0 when it has none) at least this; `starts`: (a, b), its axis time (`times`, one per
/// event) in a <= t < b.
#[pyfunction]
#[pyo3(signature = (block, kind, times, pid=None, module=None, ret=None, returned=None, names=None, name_has=None,
                    min_ns=None, starts=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn pick(
    block: &Bound<'_, EventBlock>,
    kind: u8,
    times: &Bound<'_, PyAny>,
    pid: Among<Option<i64>>,
    module: Among<Option<String>>,
    ret: Among<Option<i64>>,
    returned: Among<bool>,
    names: Among<String>,
    name_has: Option<String>,
    min_ns: Option<i64>,
    starts: Option<(i64, i64)>,
) -> PyResult<Picked> {
    let b = block.get();
    let ts = axis_times(times)?;
    if ts.len() != b.len() {
        return Err(pyo3::exceptions::PyValueError::new_err("pick: one time per event"));
    }
    if kind != INITCALL && (pid.is_some() || module.is_some() || returned.is_some()) {
        return Err(pyo3::exceptions::PyValueError::new_err("pick: a probe's detail has only ret here"));
    }
    let rows = &b.rows;
    // each distinct detail and name tested once (only when a filter asks), the rows by their ids
    let by_detail = pid.is_some() || module.is_some() || ret.is_some() || returned.is_some();
    let detail_ok: Vec<bool> = if !by_detail { Vec::new() } else {
        rows.details.iter().map(|d| match d {
            Detail::Initcall { pid: p, module: m, ret: r, returned: done } => {
                allows(&pid, p) && allows(&module, m) && allows(&ret, r) && allows(&returned, done)
            }
            Detail::Probe { ret: r, .. } => allows(&ret, &Some(*r)),
        }).collect()
    };
    let by_name = names.is_some() || name_has.is_some();
    let wanted: Option<(bool, FxMap<&str, ()>)> =
        names.as_ref().map(|(neg, v)| (*neg, v.iter().map(|s| (s.as_str(), ())).collect()));
    let finder = name_has.as_deref().map(|s| memchr::memmem::Finder::new(s.as_bytes()).into_owned());
    let name_ok: Vec<bool> = if !by_name { Vec::new() } else {
        rows.names.iter().map(|n| {
            wanted.as_ref().map_or(true, |(neg, set)| set.contains_key(n.as_str()) != *neg)
                && finder.as_ref().map_or(true, |f| f.find(n.as_bytes()).is_some())
        }).collect()
    };
    // the kind's column first: the other columns are read only for its rows, and only those a
    // filter asks about (a pass over every column of 800,000 rows was 5 ms here, the kind's 0.3)
    let mut out: Vec<u32> = Vec::new();
    let mut k = 0usize; // the other events before row r: its position is r + k
    for r in 0..rows.kind.len() {
        if rows.kind[r] != kind
            || (by_detail && !detail_ok[rows.detail[r] as usize])
            || (by_name && !name_ok[rows.name[r] as usize])
        {
            continue;
        }
        if let Some(m) = min_ns {
            let d = rows.dur[r];
            if (if d == NONE { 0 } else { d }) < m {
                continue;
            }
        }
        if let Some((a, z)) = starts {
            while k < b.opos.len() && b.opos[k] - k <= r {
                k += 1;
            }
            let t = ts[r + k];
            if t == NONE || t < a || t >= z {
                continue;
            }
        }
        out.push(r as u32);
    }
    Ok(Picked { block: block.clone().unbind(), times: times.clone().unbind(), rows: out })
}

#[pymethods]
impl Picked {
    fn __len__(&self) -> usize {
        self.rows.len()
    }

    /// positions(at=None) -> their positions in the block, ascending (those at the places `at`
    /// in this pick only, in that order).
    #[pyo3(signature = (at=None))]
    fn positions(&self, at: Option<Vec<usize>>) -> PyResult<Vec<usize>> {
        match at {
            None => {
                let mut out = Vec::with_capacity(self.rows.len());
                self.each(|_, _, p| out.push(p));
                Ok(out)
            }
            Some(at) => at.into_iter().map(|k| Ok(self.block.get().position_of(self.row(k)?))).collect(),
        }
    }

    /// timed(cls, at=None) -> [cls(event, axis time or None)]: the rows (those at the places `at`
    /// in this pick only, in that order) as two-field NamedTuples, as report.rs `timed_at`.
    #[pyo3(signature = (cls, at=None))]
    fn timed(&self, py: Python<'_>, cls: &Bound<'_, PyType>, at: Option<Vec<usize>>) -> PyResult<Vec<PyObject>> {
        let b = self.block.get();
        let ts = axis_times(self.times.bind(py))?;
        let one = |r: usize, p: usize| -> PyResult<PyObject> {
            let t = ts[p];
            let t = if t == NONE { py.None() } else { t.into_pyobject(py)?.into_any().unbind() };
            named_tuple(py, cls, vec![b.rows.event(py, r)?, t])
        };
        match at {
            None => {
                let mut out = Vec::with_capacity(self.rows.len());
                let mut err = None;
                self.each(|_, r, p| match one(r, p) {
                    Ok(v) => out.push(v),
                    Err(e) => err = err.take().or(Some(e)),
                });
                err.map_or(Ok(out), Err)
            }
            Some(at) => at.into_iter().map(|k| {
                let r = self.row(k)?;
                one(r, b.position_of(r))
            }).collect(),
        }
    }

    /// keep(names) -> Picked: those of them whose name is in the set `names`.
    fn keep(&self, py: Python<'_>, names: &Bound<'_, PySet>) -> PyResult<Picked> {
        let rows = &self.block.get().rows;
        let mut ok: Vec<Option<bool>> = vec![None; rows.names.len()]; // each name looked up once
        let mut out = Vec::new();
        for &r in &self.rows {
            let n = rows.name[r as usize] as usize;
            let yes = match ok[n] {
                Some(v) => v,
                None => {
                    let v = names.contains(rows.name_objs[n].bind(py))?;
                    ok[n] = Some(v);
                    v
                }
            };
            if yes {
                out.push(r);
            }
        }
        Ok(Picked { block: self.block.clone_ref(py), times: self.times.clone_ref(py), rows: out })
    }

    /// Their distinct names, in the order first seen.
    fn names<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let rows = &self.block.get().rows;
        let mut seen = vec![false; rows.names.len()];
        let mut out = Vec::new();
        for &r in &self.rows {
            let n = rows.name[r as usize] as usize;
            if !seen[n] {
                seen[n] = true;
                out.push(rows.name_objs[n].clone_ref(py));
            }
        }
        PyList::new(py, out)
    }

    /// The sum of their durations (0 for one without).
    fn total(&self) -> i128 {
        let dur = &self.block.get().rows.dur;
        self.rows.iter().map(|&r| dur[r as usize]).map(|d| if d == NONE { 0 } else { d as i128 }).sum()
    }

    /// longest(n) -> places: the places in this pick of its n longest rows (a duration of 0 when
    /// none), longest first, ties to the earlier one (a stable sort by duration, descending).
    fn longest(&self, n: usize) -> Vec<usize> {
        let dur = &self.block.get().rows.dur;
        let key = |k: usize| {
            let d = dur[self.rows[k] as usize];
            if d == NONE { 0 } else { d }
        };
        let mut order: Vec<usize> = (0..self.rows.len()).collect();
        order.sort_by(|&a, &b| key(b).cmp(&key(a)).then(a.cmp(&b)));
        order.truncate(n);
        order
    }

    /// enclosing(ats) -> [(place, position, duration) | None]: for each axis time, the innermost
    /// of these rows running then (start <= at < start + duration; of equal durations the
    /// earliest), as advise/rules/_kernel.py `Enclosing` finds it: the rows sorted by start with a
    /// running maximum of their ends, so a time looks back only while one of them can still be
    /// running.
    fn enclosing(&self, py: Python<'_>, ats: Vec<Option<i64>>) -> PyResult<Vec<Option<(usize, usize, i64)>>> {
        let b = self.block.get();
        let ts = axis_times(self.times.bind(py))?;
        let dur = &b.rows.dur;
        // placed (a start and a duration): (start, place, position), sorted as the (start, i)
        // there (a stable sort: the rows come nearly in order of their starts)
        let mut placed: Vec<(i64, usize, usize)> = Vec::new();
        self.each(|k, r, p| {
            if ts[p] != NONE && dur[r] != NONE {
                placed.push((ts[p], k, p));
            }
        });
        placed.sort_by_key(|&(s, k, _)| (s, k));
        let end = |&(s, k, _): &(i64, usize, usize)| s.saturating_add(dur[self.rows[k] as usize]);
        let mut reach: Vec<i64> = Vec::with_capacity(placed.len());
        for c in &placed {
            let e = end(c);
            reach.push(reach.last().map_or(e, |&top: &i64| top.max(e)));
        }
        Ok(ats.into_iter().map(|at| {
            let at = at?;
            let mut best: Option<(i64, usize, usize)> = None; // (duration, place, position)
            let mut j = placed.partition_point(|c| c.0 <= at);
            while j > 0 && reach[j - 1] > at {
                j -= 1;
                if end(&placed[j]) > at {
                    let (_, k, p) = placed[j];
                    let key = (dur[self.rows[k] as usize], k, p);
                    if best.map_or(true, |b| key < b) {
                        best = Some(key);
                    }
                }
            }
            best.map(|(d, k, p)| (k, p, d))
        }).collect())
    }
}
