//! `EventBlock`: a block's rows (the columns of rows.rs) and the other events, in line order, as
//! one sequence of `Event` to Python (bootlens/model.py `Events` wraps it); merging and joining
//! blocks; the passes `analyze` makes over every event, as loops over the columns (axis times,
//! counts, positions, the longest N, the initcall span of the stage table, the report's rows
//! and numeric columns). The JSON writer's pass is render/json_chunk.rs.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyList, PySlice, PyTuple};

use super::{Detail, Rows, HOST, INITCALL, KERNEL, NONE, NO_NAME, PROCESS};
use crate::fxhash::FxMap;
use crate::read::time::{axis_times, TimeColumn};


/// The initcall rows as columns plus the other events, in line order: see the module header.
/// `opos` holds the position of each other event in the whole sequence, ascending.
#[pyclass(module = "bootlens._scan", sequence, frozen)]
pub(crate) struct EventBlock {
    pub(crate) rows: Arc<Rows>,
    pub(crate) others: Vec<PyObject>,
    pub(crate) opos: Vec<usize>,
}

/// An item of the merged sequence: a row of the columns or one of the other events.
pub(crate) enum Item {
    Row(usize),
    Other(usize),
}

impl EventBlock {
    pub(crate) fn len(&self) -> usize {
        self.rows.kind.len() + self.others.len()
    }

    pub(crate) fn item(&self, i: usize) -> Item {
        // opos is short (the other events): a binary search per lookup
        match self.opos.binary_search(&i) {
            Ok(k) => Item::Other(k),
            Err(k) => Item::Row(i - k),
        }
    }

    /// A reader of items at positions mostly ascending (a row's, from row_groups): each found
    /// from the last one's place in `opos`, not by a binary search of it.
    pub(crate) fn walker(&self) -> Walker<'_> {
        Walker { opos: &self.opos, k: 0, last: 0 }
    }

    pub(crate) fn get(&self, py: Python<'_>, i: usize) -> PyResult<PyObject> {
        match self.item(i) {
            Item::Row(r) => self.rows.event(py, r),
            Item::Other(k) => Ok(self.others[k].clone_ref(py)),
        }
    }

    pub(crate) fn index(&self, i: isize) -> PyResult<usize> {
        let n = self.len() as isize;
        let j = if i < 0 { i + n } else { i };
        if j < 0 || j >= n {
            return Err(pyo3::exceptions::PyIndexError::new_err("event index out of range"));
        }
        Ok(j as usize)
    }

    /// Every item in order with its position, walking rows and others together.
    pub(crate) fn walk(&self, mut f: impl FnMut(usize, Item) -> PyResult<bool>) -> PyResult<()> {
        let (mut r, mut k) = (0usize, 0usize);
        for i in 0..self.len() {
            let it = if k < self.opos.len() && self.opos[k] == i {
                k += 1;
                Item::Other(k - 1)
            } else {
                r += 1;
                Item::Row(r - 1)
            };
            if !f(i, it)? {
                break;
            }
        }
        Ok(())
    }

    /// Each position's item, for many lookups in any order (`item`'s binary search of `opos`
    /// for each of a 1M-event report's columns entries cost more than the rest of the columns):
    /// a row r as r, the other event k as -1 - k.
    pub(crate) fn item_map(&self) -> Vec<i64> {
        let mut map = Vec::with_capacity(self.len());
        let _ = self.walk(|_, it| {
            map.push(match it {
                Item::Row(r) => r as i64,
                Item::Other(k) => -1 - k as i64,
            });
            Ok(true)
        });
        map
    }

    pub(crate) fn with_others(&self, others: Vec<PyObject>, opos: Vec<usize>) -> EventBlock {
        EventBlock { rows: Arc::clone(&self.rows), others, opos }
    }
}

impl EventBlock {
    /// report_columns's numbers of the event at position `i` (`it`, its item in `map`, an
    /// `item_map`; `ts`: the axis times): [start, duration, line, end line].
    pub(crate) fn report_numbers(&self, py: Python<'_>, map: &[i64], ts: &[i64], i: usize, it: Item) -> PyResult<[i64; 4]> {
        if i >= ts.len() || i >= map.len() || ts[i] == NONE {
            return Err(pyo3::exceptions::PyValueError::new_err("report_columns: an event without an axis time"));
        }
        let rows = &self.rows;
        let opt = |o: Bound<'_, PyAny>| -> PyResult<i64> { if o.is_none() { Ok(NONE) } else { o.extract::<i64>() } };
        let (dur, line, end) = match it {
            Item::Row(r) => (rows.dur[r], rows.line[r], rows.end[r]),
            Item::Other(k) => {
                let ev = self.others[k].bind(py).downcast::<PyTuple>()?;
                (opt(ev.get_item(3)?)?, ev.get_item(4)?.extract::<i64>()?, opt(ev.get_item(5)?)?)
            }
        };
        let us = |v: i64| if v >= 0 { (v + 500).div_euclid(1000) } else { (v - 500).div_euclid(1000) };
        Ok([us(ts[i]), if dur == NONE || dur < 0 { -1 } else { (dur + 500).div_euclid(1000) }, line,
            if end == NONE { 0 } else { end }])
    }
}

/// EventBlock::walker's state: `k`, how many other events come before position `last`.
pub(crate) struct Walker<'a> {
    opos: &'a [usize],
    k: usize,
    last: usize,
}

impl Walker<'_> {
    /// The item at position `i`: `EventBlock::item`'s answer, in a few steps from the last one
    /// for ascending positions (a binary search past 8 other events, or going back).
    pub(crate) fn item(&mut self, i: usize) -> Item {
        if i < self.last {
            self.k = 0;
        }
        let mut steps = 0;
        while self.k < self.opos.len() && self.opos[self.k] < i {
            if steps == 8 {
                self.k += self.opos[self.k..].partition_point(|&p| p < i);
                break;
            }
            self.k += 1;
            steps += 1;
        }
        self.last = i;
        if self.k < self.opos.len() && self.opos[self.k] == i {
            Item::Other(self.k)
        } else {
            Item::Row(i - self.k)
        }
    }
}

/// The item at position `i` of an `item_map`.
pub(crate) fn item_in(map: &[i64], i: usize) -> Item {
    let v = map[i];
    if v >= 0 { Item::Row(v as usize) } else { Item::Other((-1 - v) as usize) }
}


/// The line number of an Event object (its fifth field).
pub(crate) fn line_of(e: &Bound<'_, PyAny>) -> PyResult<i64> {
    e.downcast::<PyTuple>()?.get_item(4)?.extract::<i64>()
}

#[pymethods]
impl EventBlock {
    fn __len__(&self) -> usize {
        self.len()
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        if let Ok(i) = key.extract::<isize>() {
            return self.get(py, self.index(i)?);
        }
        let sl = key.downcast::<PySlice>()?;
        let ix = sl.indices(self.len() as isize)?;
        let mut items = Vec::with_capacity(ix.slicelength);
        let mut i = ix.start;
        for _ in 0..ix.slicelength {
            items.push(self.get(py, i as usize)?);
            i += ix.step;
        }
        Ok(PyTuple::new(py, items)?.into_any().unbind())
    }

    fn __iter__(slf: Py<Self>) -> EventIter {
        EventIter { block: slf, i: 0, r: 0, k: 0 }
    }

    fn __repr__(&self) -> String {
        format!("<EventBlock of {} rows and {} other events>", self.rows.kind.len(), self.others.len())
    }

    /// The other events (Python Event objects), in order.
    fn others<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.others.iter().map(|o| o.clone_ref(py)))
    }

    /// The position of each other event in the sequence.
    fn other_positions(&self) -> Vec<usize> {
        self.opos.clone()
    }

    /// How many rows the columns hold (the rest are other events).
    pub(crate) fn row_count(&self) -> usize {
        self.rows.kind.len()
    }

    /// merged(others, ranks, row_ranks) -> EventBlock: the same rows with these events merged in
    /// by line number, as a stable sort of all of them in their parsers' order would put them.
    /// `others` must be in line order (a stable sort); `ranks[k]` is the place of the parser of
    /// other event k in the run, `row_ranks[kind]` that of the parser of the rows of each kind
    /// (the rows on one line are in that order: `joined`). On a line that also holds rows, an
    /// event goes after the rows whose parser ran before its own, before the others.
    fn merged(&self, others: Vec<PyObject>, ranks: Vec<i64>, row_ranks: Vec<i64>, py: Python<'_>) -> PyResult<EventBlock> {
        if !self.others.is_empty() {
            return Err(pyo3::exceptions::PyValueError::new_err("merged: the block already holds other events"));
        }
        if ranks.len() != others.len() || row_ranks.len() <= PROCESS as usize {
            return Err(pyo3::exceptions::PyValueError::new_err("merged: a rank per other event and per row kind"));
        }
        let lines: Vec<i64> = others.iter().map(|o| line_of(o.bind(py))).collect::<PyResult<_>>()?;
        let rows = &self.rows.line;
        let kinds = &self.rows.kind;
        let mut opos = Vec::with_capacity(others.len());
        let mut r = 0usize;
        for (k, &ln) in lines.iter().enumerate() {
            // the rows that come before this event
            while r < rows.len() && (rows[r] < ln || (rows[r] == ln && row_ranks[kinds[r] as usize] < ranks[k])) {
                r += 1;
            }
            opos.push(r + k);
        }
        Ok(self.with_others(others, opos))
    }

    /// joined(later) -> EventBlock: the rows of both blocks in one, in line order; on a line both
    /// hold rows on, this block's first (its parser ran before `later`'s). Neither holds other
    /// events yet (`merged` comes after).
    fn joined(&self, later: PyRef<'_, EventBlock>, py: Python<'_>) -> PyResult<EventBlock> {
        if !self.others.is_empty() || !later.others.is_empty() {
            return Err(pyo3::exceptions::PyValueError::new_err("joined: a block already holds other events"));
        }
        let (a, b) = (&*self.rows, &*later.rows);
        let mut rows = Rows::empty(a.types.clone_ref(py));
        let n = a.kind.len() + b.kind.len();
        for v in [&mut rows.start, &mut rows.dur, &mut rows.line, &mut rows.end] {
            v.reserve_exact(n);
        }
        rows.kind.reserve_exact(n);
        rows.clock.reserve_exact(n);
        rows.name.reserve_exact(n);
        rows.detail.reserve_exact(n);
        let name_off = a.names.len() as u32;
        let (det_off, proc_off) = (a.details.len() as u32, a.procs.pid.len() as u32);
        let push = |rows: &mut Rows, src: &Rows, r: usize, offs: (u32, u32, u32)| {
            rows.kind.push(src.kind[r]);
            rows.clock.push(src.clock[r]);
            rows.name.push(src.name[r] + offs.0);
            rows.detail.push(src.detail[r] + if src.kind[r] == PROCESS { offs.2 } else { offs.1 });
            rows.start.push(src.start[r]);
            rows.dur.push(src.dur[r]);
            rows.line.push(src.line[r]);
            rows.end.push(src.end[r]);
        };
        let (mut i, mut j) = (0usize, 0usize);
        while i < a.kind.len() || j < b.kind.len() {
            if j >= b.kind.len() || (i < a.kind.len() && a.line[i] <= b.line[j]) {
                push(&mut rows, a, i, (0, 0, 0));
                i += 1;
            } else {
                push(&mut rows, b, j, (name_off, det_off, proc_off));
                j += 1;
            }
        }
        rows.names = a.names.iter().chain(b.names.iter()).cloned().collect();
        rows.name_objs = a.name_objs.iter().chain(b.name_objs.iter()).map(|o| o.clone_ref(py)).collect();
        rows.details = a.details.iter().chain(b.details.iter()).cloned().collect();
        rows.detail_objs = a.detail_objs.iter().chain(b.detail_objs.iter()).map(|o| o.clone_ref(py)).collect();
        let p = &mut rows.procs;
        for (src, off) in [(&a.procs, 0u32), (&b.procs, name_off)] {
            p.pid.extend_from_slice(&src.pid);
            p.ppid.extend_from_slice(&src.ppid);
            p.comm.extend(src.comm.iter().map(|&c| c + off));
            p.exe.extend(src.exe.iter().map(|&e| if e == NO_NAME { NO_NAME } else { e + off }));
            p.kthread.extend_from_slice(&src.kthread);
            p.exec_ns.extend_from_slice(&src.exec_ns);
            p.exited.extend_from_slice(&src.exited);
            p.forks.extend_from_slice(&src.forks);
        }
        Ok(EventBlock { rows: Arc::new(rows), others: Vec::new(), opos: Vec::new() })
    }

    /// appended(events) -> EventBlock: these events added at the end (tuple concatenation).
    fn appended(&self, more: Vec<PyObject>, py: Python<'_>) -> EventBlock {
        let n = self.len();
        let mut others: Vec<PyObject> = self.others.iter().map(|o| o.clone_ref(py)).collect();
        let mut opos = self.opos.clone();
        for (j, e) in more.into_iter().enumerate() {
            others.push(e);
            opos.push(n + j);
        }
        self.with_others(others, opos)
    }

    /// times(kernel_offset, host_offset, other_times) -> TimeColumn: the axis time of every
    /// event's start (Alignment.times), the rows' from the offsets of their clocks (None: that
    /// clock is not on the axis), the other events' as given.
    #[pyo3(signature = (k_off, h_off, other_times))]
    fn times(&self, k_off: Option<i64>, h_off: Option<i64>, other_times: &Bound<'_, PyAny>) -> PyResult<TimeColumn> {
        let ot = axis_times(other_times)?;
        if ot.len() != self.others.len() {
            return Err(pyo3::exceptions::PyValueError::new_err("times: one time per other event"));
        }
        let rows = &self.rows;
        let mut v = Vec::with_capacity(self.len());
        self.walk(|_, it| {
            v.push(match it {
                Item::Other(k) => ot[k],
                Item::Row(r) => {
                    let off = match rows.clock[r] {
                        KERNEL => k_off,
                        HOST => h_off,
                        _ => None,
                    };
                    off.map_or(NONE, |o| rows.start[r] + o)
                }
            });
            Ok(true)
        })?;
        Ok(TimeColumn { v })
    }

    /// count(kind, timed=None, kthread=None) -> how many rows of this kind (0 initcall, 1 probe,
    /// 2 fixup, 3 process); timed True/False: only those with/without a duration; kthread
    /// True/False: only the kernel threads / only the others (a row of another kind is none).
    #[pyo3(signature = (kind, timed=None, kthread=None))]
    fn count(&self, kind: u8, timed: Option<bool>, kthread: Option<bool>) -> usize {
        let rows = &self.rows;
        (0..rows.kind.len())
            .filter(|&r| rows.kind[r] == kind && timed.map_or(true, |t| (rows.dur[r] != NONE) == t)
                    && kthread.map_or(true, |k| rows.is_kthread(r) == k))
            .count()
    }

    /// Positions of the rows of this kind (kthread: as `count`).
    #[pyo3(signature = (kind, kthread=None))]
    fn positions(&self, kind: u8, kthread: Option<bool>) -> PyResult<Vec<usize>> {
        let mut out = Vec::new();
        self.walk(|i, it| {
            if let Item::Row(r) = it {
                if self.rows.kind[r] == kind && kthread.map_or(true, |k| self.rows.is_kthread(r) == k) {
                    out.push(i);
                }
            }
            Ok(true)
        })?;
        Ok(out)
    }

    /// top(kind, n) -> [(duration_ns, position)]: the n rows of this kind with the longest
    /// durations, longest first, ties to the earlier position (heapq.nlargest's order).
    #[pyo3(signature = (kind, n, kthread=None))]
    fn top(&self, kind: u8, n: usize, kthread: Option<bool>) -> PyResult<Vec<(i64, usize)>> {
        // longest first, ties to the earlier position: a total order, so keeping the n best seen
        // so far (a heap whose top is the worst of them) gives what a full sort's first n would,
        // without a list of every row (2.5M rows at 10M lines: 40 MB of fresh pages, 14k faults)
        let rows = &self.rows;
        let mut best: BinaryHeap<Reverse<(i64, Reverse<usize>)>> = BinaryHeap::with_capacity(n.min(1 << 16) + 1);
        self.walk(|i, it| {
            if let Item::Row(r) = it {
                if rows.kind[r] == kind && rows.dur[r] != NONE && n > 0
                    && kthread.map_or(true, |k| rows.is_kthread(r) == k) {
                    let key = (rows.dur[r], Reverse(i));
                    if best.len() < n {
                        best.push(Reverse(key));
                    } else if best.peek().map_or(false, |w| key > w.0) {
                        best.pop();
                        best.push(Reverse(key));
                    }
                }
            }
            Ok(true)
        })?;
        // ascending Reverse = the best first
        Ok(best.into_sorted_vec().into_iter().map(|Reverse((d, Reverse(i)))| (d, i)).collect())
    }

    /// initcall_span(times, limit) -> (first_start, first_line, last_end, last_line) | None:
    /// stages.compute_stages's initcall bounds over the initcall rows that have an axis time:
    /// the earliest start (its line: the first position holding it), the latest end at most
    /// `limit` (its line: the largest end line among equal ends). None without such an end.
    #[pyo3(signature = (times, limit))]
    fn initcall_span(&self, times: &Bound<'_, PyAny>, limit: Option<i64>) -> PyResult<Option<(i64, i64, i64, i64)>> {
        let ts = axis_times(times)?;
        let rows = &self.rows;
        let mut first: Option<(i64, i64)> = None;
        let mut last: Option<(i64, i64)> = None;
        self.walk(|i, it| {
            let r = match it {
                Item::Row(r) if rows.kind[r] == INITCALL && ts[i] != NONE => r,
                _ => return Ok(true),
            };
            let t = ts[i];
            if first.map_or(true, |(ft, _)| t < ft) {
                first = Some((t, rows.line[r]));
            }
            if rows.dur[r] != NONE {
                let e = t + rows.dur[r];
                let ln = if rows.end[r] != NONE { rows.end[r] } else { rows.line[r] };
                if limit.map_or(true, |l| e <= l) {
                    last = match last {
                        Some((le, ll)) if le > e => Some((le, ll)),
                        Some((le, ll)) if le == e => Some((le, ll.max(ln))),
                        _ => Some((e, ln)),
                    };
                }
            }
            Ok(true)
        })?;
        Ok(match (first, last) {
            (Some((ft, fl)), Some((le, ll))) => Some((ft, fl, le, ll)),
            _ => None,
        })
    }

    /// fields() -> (kinds, names, durations, lines, end_lines, details): every event's fields but
    /// its start, column by column in sequence order, as `zip(*events)` gives them (without
    /// building an Event a row: the kinds, names and details are the block's shared objects, the
    /// other events' fields are read from them). The report's columns (render/html.py) start here.
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let n = self.len();
        let rows = &self.rows;
        let t = &rows.types;
        let int = |v: i64| -> PyResult<PyObject> { Ok(v.into_pyobject(py)?.into_any().unbind()) };
        let opt_int = |v: i64| -> PyResult<PyObject> { if v == NONE { Ok(py.None()) } else { int(v) } };
        let mut cols: [Vec<PyObject>; 6] = Default::default();
        for c in cols.iter_mut() {
            c.reserve_exact(n);
        }
        self.walk(|_, it| {
            match it {
                Item::Row(r) => {
                    cols[0].push(t.kinds[rows.kind[r] as usize].clone_ref(py));
                    cols[1].push(rows.name_objs[rows.name[r] as usize].clone_ref(py).into_any());
                    cols[2].push(opt_int(rows.dur[r])?);
                    cols[3].push(int(rows.line[r])?);
                    cols[4].push(opt_int(rows.end[r])?);
                    cols[5].push(rows.detail_obj(py, r)?);
                }
                Item::Other(k) => {
                    let e = self.others[k].bind(py).downcast::<PyTuple>()?;
                    for (c, f) in [(0usize, 0usize), (1, 1), (2, 3), (3, 4), (4, 5), (5, 6)] {
                        cols[c].push(e.get_item(f)?.unbind());
                    }
                }
            }
            Ok(true)
        })?;
        let lists = cols.into_iter().map(|c| PyList::new(py, c)).collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, lists)
    }

    /// row_groups(times) -> (groups, unplaced): the report's timeline rows (render/html.py
    /// boot_data) of the block's rows with an axis time, as [(kind, pid, positions)]: kind 0
    /// initcall, 1 probe, 2 fixup, 3 process, 4 kernel thread (a process row); pid the initcall's (None for the others and an initcall
    /// without one); positions ascending, in the order the groups first occur. `unplaced`: the
    /// rows without an axis time. The positions past the end of `times` are left out.
    #[allow(clippy::type_complexity)]
    fn row_groups(&self, times: &Bound<'_, PyAny>) -> PyResult<(Vec<(u8, Option<i64>, Vec<usize>)>, usize)> {
        let ts = axis_times(times)?;
        let rows = &self.rows;
        let mut groups: Vec<(u8, Option<i64>, Vec<usize>)> = Vec::new();
        let mut index: FxMap<(u8, Option<i64>), usize> = FxMap::default();
        let mut unplaced = 0usize;
        self.walk(|i, it| {
            if i >= ts.len() {
                return Ok(false);
            }
            if let Item::Row(r) = it {
                if ts[i] == NONE {
                    unplaced += 1;
                    return Ok(true);
                }
                let (kind, pid) = match rows.kind[r] {
                    INITCALL => match &rows.details[rows.detail[r] as usize] {
                        Detail::Initcall { pid, .. } => (INITCALL, *pid),
                        Detail::Probe { .. } => (INITCALL, None),
                    },
                    PROCESS => (PROCESS + rows.is_kthread(r) as u8, None),
                    k => (k, None),
                };
                let key = (kind, pid);
                let g = *index.entry(key).or_insert_with(|| {
                    groups.push((key.0, key.1, Vec::new()));
                    groups.len() - 1
                });
                groups[g].2.push(i);
            }
            Ok(true)
        })?;
        Ok((groups, unplaced))
    }

    /// report_columns(order, times) -> (s, d, l, e): the report's numeric event columns
    /// (render/html.py _columns) of the events at positions `order`, each placed on the axis:
    /// start and duration in us rounded half away from zero (Python's `(t + 500) // 1000`, and
    /// `(t - 500) // 1000` below zero), -1 for no or a negative duration; line; end line or 0.
    #[allow(clippy::type_complexity)]
    fn report_columns(&self, py: Python<'_>, order: Vec<usize>, times: &Bound<'_, PyAny>)
                      -> PyResult<(Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>)> {
        let ts = axis_times(times)?;
        let n = order.len();
        let (mut s, mut d, mut l, mut e) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n),
                                            Vec::with_capacity(n));
        let map = self.item_map();
        for &i in &order {
            let [a, b, c, f] = self.report_numbers(py, &map, &ts, i, item_in(&map, i))?;
            s.push(a);
            d.push(b);
            l.push(c);
            e.push(f);
        }
        Ok((s, d, l, e))
    }

    /// events_at(positions) -> [Event]: the events at these positions, in one call (a call of
    /// `block[i]` each cost its argument handling per event: the advisor reads 600,000 initcalls).
    fn events_at(&self, py: Python<'_>, positions: Vec<isize>) -> PyResult<Vec<PyObject>> {
        positions.into_iter().map(|i| self.get(py, self.index(i)?)).collect()
    }

    /// Positions of the events without an axis time.
    fn untimed(&self, times: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
        let ts = axis_times(times)?;
        Ok((0..ts.len()).filter(|&i| ts[i] == NONE).collect())
    }

    /// json_chunk(times, start, count, axis_is_kernel) -> (pieces, next): the JSON of the next
    /// `count` events from position `start` that have an axis time (render/jsonout.py
    /// _write_events). A piece is bytes (the objects of consecutive timed initcall rows whose
    /// start is on the axis clock, joined by ",\n", as render/json.rs writes them) or an int (the
    /// position of an event for event_dict). Empty pieces: no event left.
    fn json_chunk<'py>(&self, py: Python<'py>, times: &Bound<'py, PyAny>, start: usize, count: usize,
                       axis_is_kernel: bool) -> PyResult<(Vec<PyObject>, usize)> {
        self.write_json_chunk(py, times, start, count, axis_is_kernel)
    }
}

/// Iteration over an EventBlock: rows and others together, one Event built per step.
#[pyclass(module = "bootlens._scan")]
pub(crate) struct EventIter {
    block: Py<EventBlock>,
    i: usize,
    r: usize,
    k: usize,
}

#[pymethods]
impl EventIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        let b = self.block.get();
        if self.i >= b.len() {
            return Ok(None);
        }
        let out = if self.k < b.opos.len() && b.opos[self.k] == self.i {
            self.k += 1;
            b.others[self.k - 1].clone_ref(py)
        } else {
            self.r += 1;
            b.rows.event(py, self.r - 1)?
        };
        self.i += 1;
        Ok(Some(out))
    }
}
