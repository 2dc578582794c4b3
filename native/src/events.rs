//! A boot's events with its initcall_debug rows kept as columns (issue 14 part 4).
//!
//! `EventBlock` is what `bootlens.core.model.Events` wraps: the initcall, probe and fixup rows of the
//! native scan (initcall.rs) as columns, 42 bytes a row, names and details shared through tables,
//! plus the boot's other events (Python `Event` objects, a few hundred) merged into line order.
//! To Python it is a sequence of `Event`: a row becomes an `Event` only when it is asked for
//! (indexing, iteration), equal field by field to the one `initcall_events` builds. The passes
//! `analyze --json` makes over every event (axis times, counts, the longest N, the initcall
//! span of the stage table, the JSON writer) are loops over the columns here.
//!
//! The process events of the sched_process trace (process.rs) are rows too (kind 3, step 24b):
//! their ProcessDetail's fields are columns of their own (`Procs`), the detail object built only
//! with the row's Event. The process parser's block and the initcall parser's are `joined`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PySlice, PyString, PyTuple, PyType};

use crate::columns::{times_of, TimeColumn};
use crate::fxhash::FxMap;
use crate::initcall::{named_tuple, scan};
use crate::json::{detail_json, name_json, probe_detail_json, write_event, write_process_parts, write_row_parts, Process, KIND_JSON};

pub(crate) mod procs; // the user-space process tree (advise/userspace.py)
pub(crate) mod query; // the advisor's queries on the rows (advise/rules/_kernel.py)
pub(crate) mod report; // the report's passes over the block (render/html.py)

pub(crate) const NONE: i64 = i64::MIN; // an absent duration, end line or axis time (TimeColumn's None too)
pub(crate) const INITCALL: u8 = 0;
pub(crate) const PROBE: u8 = 1;
pub(crate) const FIXUP: u8 = 2;
pub(crate) const PROCESS: u8 = 3;
pub(crate) const NO_NAME: u32 = u32::MAX; // an absent name id (a process that never exec'd)
pub(crate) const NO_CLOCK: u8 = 0; // the line carried no time: start is None
pub(crate) const KERNEL: u8 = 1;
pub(crate) const HOST: u8 = 2;

/// The Python types and enum members a row is built from (model.BLOCK_TYPES: Event, Stamp,
/// InitcallDetail, ProbeDetail, Kind.INITCALL, Kind.PROBE, Kind.FIXUP, Clock.KERNEL, Clock.HOST,
/// ProcessDetail, Kind.PROCESS).
pub(crate) struct Types {
    event: Py<PyType>,
    stamp: Py<PyType>,
    process: Py<PyType>,    // ProcessDetail
    kinds: [PyObject; 4],   // Kind.INITCALL, Kind.PROBE, Kind.FIXUP, Kind.PROCESS
    clocks: [PyObject; 2],  // Clock.KERNEL, Clock.HOST
}

impl Types {
    pub(crate) fn of(types: &Bound<'_, PyTuple>) -> PyResult<Types> {
        let ty = |i: usize| -> PyResult<Py<PyType>> { Ok(types.get_item(i)?.downcast_into::<PyType>()?.unbind()) };
        let obj = |i: usize| -> PyResult<PyObject> { Ok(types.get_item(i)?.unbind()) };
        Ok(Types {
            event: ty(0)?,
            stamp: ty(1)?,
            process: ty(9)?,
            kinds: [obj(4)?, obj(5)?, obj(6)?, obj(10)?],
            clocks: [obj(7)?, obj(8)?],
        })
    }

    fn clone_ref(&self, py: Python<'_>) -> Types {
        Types {
            event: self.event.clone_ref(py),
            stamp: self.stamp.clone_ref(py),
            process: self.process.clone_ref(py),
            kinds: std::array::from_fn(|i| self.kinds[i].clone_ref(py)),
            clocks: std::array::from_fn(|i| self.clocks[i].clone_ref(py)),
        }
    }
}

/// A process row's ProcessDetail, column by column (a row's `detail` is its index here).
#[derive(Default)]
pub(crate) struct Procs {
    pub(crate) pid: Vec<i64>,
    pub(crate) ppid: Vec<i64>,    // NONE: not known
    pub(crate) comm: Vec<u32>,    // name ids
    pub(crate) exe: Vec<u32>,     // name ids, NO_NAME: never exec'd
    pub(crate) kthread: Vec<bool>,
    pub(crate) exec_ns: Vec<i64>, // NONE: never exec'd (or not in the fork's clock)
    pub(crate) exited: Vec<bool>,
    pub(crate) forks: Vec<i64>,
}

/// One process as process.rs hands it over (`process_block`).
pub(crate) struct ProcRow<'a> {
    pub(crate) line: i64,
    pub(crate) clock: u8, // NO_CLOCK, KERNEL, HOST
    pub(crate) start: i64,
    pub(crate) dur: i64,  // NONE
    pub(crate) end: i64,  // NONE
    pub(crate) name: &'a str,
    pub(crate) pid: i64,
    pub(crate) ppid: i64, // NONE
    pub(crate) comm: &'a str,
    pub(crate) exe: Option<&'a str>,
    pub(crate) kthread: bool,
    pub(crate) exec_ns: i64, // NONE
    pub(crate) exited: bool,
    pub(crate) forks: i64,
}

/// What a detail says, kept in Rust for the JSON writer and the advisor's queries (query.rs; the
/// Python object is in `detail_objs`).
#[derive(Clone)]
enum Detail {
    Initcall { pid: Option<i64>, module: Option<String>, ret: Option<i64>, returned: bool },
    Probe { ret: i64, dev: u32, drv: Option<u32> }, // ProbeDetail(device, driver, ret): the device and driver by name id
}

/// The rows of one scan, column by column, in line order (stable: calls, probes, fixups).
pub(crate) struct Rows {
    kind: Vec<u8>,
    clock: Vec<u8>,
    name: Vec<u32>,
    detail: Vec<u32>,
    start: Vec<i64>, // ns on `clock`
    dur: Vec<i64>,
    line: Vec<i64>,
    end: Vec<i64>,
    names: Vec<String>,
    name_objs: Vec<Py<PyString>>,
    details: Vec<Detail>,
    detail_objs: Vec<PyObject>,
    procs: Procs,
    types: Types,
    /// JSON parts written once per name and per detail (json.rs name_json, detail_json; empty
    /// for a probe's detail), made at the first json_chunk
    json: once_cell::sync::OnceCell<(Vec<Vec<u8>>, Vec<Vec<u8>>)>,
}

fn opt(v: i64) -> Option<i64> {
    if v == NONE {
        None
    } else {
        Some(v)
    }
}

impl Rows {
    fn empty(types: Types) -> Rows {
        Rows {
            kind: Vec::new(),
            clock: Vec::new(),
            name: Vec::new(),
            detail: Vec::new(),
            start: Vec::new(),
            dur: Vec::new(),
            line: Vec::new(),
            end: Vec::new(),
            names: Vec::new(),
            name_objs: Vec::new(),
            details: Vec::new(),
            detail_objs: Vec::new(),
            procs: Procs::default(),
            types,
            json: once_cell::sync::OnceCell::new(),
        }
    }

    /// Whether row r is a process row of a kernel thread (its ProcessDetail's kthread).
    pub(crate) fn is_kthread(&self, r: usize) -> bool {
        self.kind[r] == PROCESS && self.procs.kthread[self.detail[r] as usize]
    }

    /// The JSON fields of process row r, its start at axis time t.
    fn process_json(&self, r: usize, t: i64) -> Process<'_> {
        let (p, d) = (&self.procs, self.detail[r] as usize);
        Process {
            name: Some(self.name_str(self.name[r])),
            t,
            dur: opt(self.dur[r]),
            line: Some(self.line[r]),
            end: opt(self.end[r]),
            pid: Some(p.pid[d]),
            ppid: opt(p.ppid[d]),
            comm: Some(self.name_str(p.comm[d])),
            exe: (p.exe[d] != NO_NAME).then(|| self.name_str(p.exe[d])),
            kthread: p.kthread[d],
            exec_ns: opt(p.exec_ns[d]),
            exited: p.exited[d],
            forks: Some(p.forks[d]),
        }
    }

    /// The name str of a name id.
    pub(crate) fn name_str(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// The detail object of row r: the shared one, or a process row's ProcessDetail built now.
    fn detail_obj(&self, py: Python<'_>, r: usize) -> PyResult<PyObject> {
        let d = self.detail[r] as usize;
        if self.kind[r] != PROCESS {
            return Ok(self.detail_objs[d].clone_ref(py));
        }
        let p = &self.procs;
        let int = |v: i64| -> PyResult<PyObject> { Ok(v.into_pyobject(py)?.into_any().unbind()) };
        let opt_int = |v: i64| -> PyResult<PyObject> { if v == NONE { Ok(py.None()) } else { int(v) } };
        let flag = |v: bool| -> PyResult<PyObject> { Ok(v.into_pyobject(py)?.to_owned().into_any().unbind()) };
        let exe = if p.exe[d] == NO_NAME { py.None() } else { self.name_objs[p.exe[d] as usize].clone_ref(py).into_any() };
        named_tuple(py, self.types.process.bind(py), vec![
            int(p.pid[d])?, opt_int(p.ppid[d])?, self.name_objs[p.comm[d] as usize].clone_ref(py).into_any(), exe,
            flag(p.kthread[d])?, opt_int(p.exec_ns[d])?, flag(p.exited[d])?, int(p.forks[d])?,
        ])
    }

    pub(crate) fn event(&self, py: Python<'_>, r: usize) -> PyResult<PyObject> {
        let t = &self.types;
        let int = |v: i64| -> PyResult<PyObject> { Ok(v.into_pyobject(py)?.into_any().unbind()) };
        let opt_int = |v: i64| -> PyResult<PyObject> { if v == NONE { Ok(py.None()) } else { int(v) } };
        let start = match self.clock[r] {
            NO_CLOCK => py.None(),
            c => named_tuple(py, t.stamp.bind(py), vec![
                t.clocks[(c - 1) as usize].clone_ref(py),
                int(self.start[r])?,
                false.into_pyobject(py)?.to_owned().into_any().unbind(),
                int(0)?,
            ])?,
        };
        named_tuple(py, t.event.bind(py), vec![
            t.kinds[self.kind[r] as usize].clone_ref(py),
            self.name_objs[self.name[r] as usize].clone_ref(py).into_any(),
            start,
            opt_int(self.dur[r])?,
            int(self.line[r])?,
            opt_int(self.end[r])?,
            self.detail_obj(py, r)?,
        ])
    }
}

/// The initcall rows as columns plus the other events, in line order: see the module header.
/// `opos` holds the position of each other event in the whole sequence, ascending.
#[pyclass(module = "bootlens._scan", sequence, frozen)]
pub(crate) struct EventBlock {
    pub(crate) rows: Arc<Rows>,
    others: Vec<PyObject>,
    opos: Vec<usize>,
}

/// An item of the merged sequence: a row of the columns or one of the other events.
enum Item {
    Row(usize),
    Other(usize),
}

impl EventBlock {
    fn len(&self) -> usize {
        self.rows.kind.len() + self.others.len()
    }

    fn item(&self, i: usize) -> Item {
        // opos is short (the other events): a binary search per lookup
        match self.opos.binary_search(&i) {
            Ok(k) => Item::Other(k),
            Err(k) => Item::Row(i - k),
        }
    }

    /// A reader of items at positions mostly ascending (a row's, from row_groups): each found
    /// from the last one's place in `opos`, not by a binary search of it.
    fn walker(&self) -> Walker<'_> {
        Walker { opos: &self.opos, k: 0, last: 0 }
    }

    fn get(&self, py: Python<'_>, i: usize) -> PyResult<PyObject> {
        match self.item(i) {
            Item::Row(r) => self.rows.event(py, r),
            Item::Other(k) => Ok(self.others[k].clone_ref(py)),
        }
    }

    fn index(&self, i: isize) -> PyResult<usize> {
        let n = self.len() as isize;
        let j = if i < 0 { i + n } else { i };
        if j < 0 || j >= n {
            return Err(pyo3::exceptions::PyIndexError::new_err("event index out of range"));
        }
        Ok(j as usize)
    }

    /// Every item in order with its position, walking rows and others together.
    fn walk(&self, mut f: impl FnMut(usize, Item) -> PyResult<bool>) -> PyResult<()> {
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
    fn item_map(&self) -> Vec<i64> {
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

    fn with_others(&self, others: Vec<PyObject>, opos: Vec<usize>) -> EventBlock {
        EventBlock { rows: Arc::clone(&self.rows), others, opos }
    }
}

impl EventBlock {
    /// report_columns's numbers of the event at position `i` (`it`, its item in `map`, an
    /// `item_map`; `ts`: the axis times): [start, duration, line, end line].
    fn report_numbers(&self, py: Python<'_>, map: &[i64], ts: &[i64], i: usize, it: Item) -> PyResult<[i64; 4]> {
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
struct Walker<'a> {
    opos: &'a [usize],
    k: usize,
    last: usize,
}

impl Walker<'_> {
    /// The item at position `i`: `EventBlock::item`'s answer, in a few steps from the last one
    /// for ascending positions (a binary search past 8 other events, or going back).
    fn item(&mut self, i: usize) -> Item {
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
fn item_in(map: &[i64], i: usize) -> Item {
    let v = map[i];
    if v >= 0 { Item::Row(v as usize) } else { Item::Other((-1 - v) as usize) }
}

/// A time column's values: borrowed from a TimeColumn (no copy of a 1M-line column), else read.
pub(crate) enum Times<'py> {
    Column(PyRef<'py, TimeColumn>),
    Read(Vec<i64>),
}

impl std::ops::Deref for Times<'_> {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        match self {
            Times::Column(c) => &c.v,
            Times::Read(v) => v,
        }
    }
}

/// Read a time column (TimeColumn, list or tuple of int | None) as ns, NONE for None.
pub(crate) fn axis_times<'py>(times: &Bound<'py, PyAny>) -> PyResult<Times<'py>> {
    if let Ok(c) = times.downcast::<TimeColumn>() {
        return Ok(Times::Column(c.try_borrow()?));
    }
    if let Ok(v) = times_of(times) {
        return Ok(Times::Read(v));
    }
    times
        .try_iter()?
        .map(|t| {
            let t = t?;
            if t.is_none() {
                Ok(NONE)
            } else {
                t.extract::<i64>()
            }
        })
        .collect::<PyResult<Vec<i64>>>()
        .map(Times::Read)
}

/// The line number of an Event object (its fifth field).
fn line_of(e: &Bound<'_, PyAny>) -> PyResult<i64> {
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
    /// start is on the axis clock, joined by ",\n", as json.rs writes them) or an int (the
    /// position of an event for event_dict). Empty pieces: no event left.
    fn json_chunk<'py>(&self, py: Python<'py>, times: &Bound<'py, PyAny>, start: usize, count: usize,
                       axis_is_kernel: bool) -> PyResult<(Vec<PyObject>, usize)> {
        let ts = axis_times(times)?;
        if ts.len() != self.len() {
            return Err(pyo3::exceptions::PyValueError::new_err("json_chunk: one time per event"));
        }
        let rows = &self.rows;
        let axis = if axis_is_kernel { KERNEL } else { HOST };
        let (name_js, detail_js) = rows.json.get_or_init(|| {
            let names = rows.names.iter().map(|n| name_json(n)).collect();
            let details = rows.details.iter().map(|d| match d {
                Detail::Initcall { pid, module, ret, returned } => detail_json(*pid, module.as_deref(), *ret, *returned),
                Detail::Probe { ret, dev, drv } => probe_detail_json(&rows.names[*dev as usize],
                                                                     drv.map(|d| rows.names[d as usize].as_str()), *ret),
            }).collect();
            (names, details)
        });
        let mut pieces: Vec<PyObject> = Vec::new();
        // ~170 bytes a row: one allocation for the chunk
        let mut buf: Vec<u8> = Vec::with_capacity(count.min(ts.len().saturating_sub(start)).saturating_mul(176));
        let mut taken = 0usize;
        let mut i = start;
        let flush = |buf: &mut Vec<u8>, pieces: &mut Vec<PyObject>| {
            if !buf.is_empty() {
                pieces.push(PyBytes::new(py, buf.as_slice()).into_any().unbind());
                buf.clear();
            }
        };
        // the rows and other events walked together from `start`: k the next other event, r
        // the row at i when i is not an other event's
        let mut k = self.opos.partition_point(|&p| p < start);
        let mut r = start - k;
        while i < ts.len() && taken < count {
            let other = k < self.opos.len() && self.opos[k] == i;
            if ts[i] == NONE {
                if other { k += 1 } else { r += 1 }
                i += 1;
                continue;
            }
            taken += 1;
            if other {
                // an Event object: json.rs's reader of one, as dump_initcalls
                let mut one = Vec::new();
                let t = ts[i].into_pyobject(py)?.into_any();
                let kind = rows.types.kinds[INITCALL as usize].bind(py);
                let clock = rows.types.clocks[(axis - 1) as usize].bind(py);
                if write_event(&mut one, self.others[k].bind(py).downcast::<PyTuple>()?, &t, kind, clock)? {
                    if !buf.is_empty() {
                        buf.extend_from_slice(b",\n");
                    }
                    buf.extend_from_slice(&one);
                } else {
                    flush(&mut buf, &mut pieces);
                    pieces.push(i.into_pyobject(py)?.into_any().unbind());
                }
                k += 1;
                i += 1;
                continue;
            }
            // a row on the axis clock (a row's start is never an estimate): its JSON from the
            // name and detail parts, the end line only where it differs from the line (as
            // event_dict); an initcall that never returned or returned on its own line too
            let fast = rows.kind[r] != PROCESS && rows.clock[r] == axis;
            if rows.kind[r] == PROCESS && rows.clock[r] == axis {
                // a process row: json.rs's writer of a process, unless a value needs event_dict
                let at = buf.len();
                if !buf.is_empty() {
                    buf.extend_from_slice(b",\n");
                }
                if !write_process_parts(&mut buf, &rows.process_json(r, ts[i])) {
                    buf.truncate(at);
                    flush(&mut buf, &mut pieces);
                    pieces.push(i.into_pyobject(py)?.into_any().unbind());
                }
            } else if fast {
                if !buf.is_empty() {
                    buf.extend_from_slice(b",\n");
                }
                let end = (rows.end[r] != NONE && rows.end[r] != rows.line[r]).then(|| Some(rows.end[r]));
                write_row_parts(&mut buf, KIND_JSON[rows.kind[r] as usize], &name_js[rows.name[r] as usize], ts[i],
                                opt(rows.dur[r]), Some(rows.line[r]), end, &detail_js[rows.detail[r] as usize]);
            } else {
                flush(&mut buf, &mut pieces);
                pieces.push(i.into_pyobject(py)?.into_any().unbind());
            }
            r += 1;
            i += 1;
        }
        flush(&mut buf, &mut pieces);
        Ok((pieces, i))
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

fn int_or_none(py: Python<'_>, v: Option<i64>) -> PyResult<PyObject> {
    Ok(match v {
        None => py.None(),
        Some(v) => v.into_pyobject(py)?.into_any().unbind(),
    })
}

/// An InitcallDetail's value: (pid, module id, ret, returned).
type IcdKey = (Option<i64>, Option<u32>, Option<i64>, bool);

/// The shared tables of a block being built: one str per distinct name, one detail object per
/// distinct detail (the events are immutable, so equal values can be one object: most initcalls
/// share pid 1, no module, ret 0; a trace repeats names).
#[derive(Default)]
struct Tables {
    names: Vec<String>,
    name_objs: Vec<Py<PyString>>,
    name_ids: FxMap<String, u32>,
    details: Vec<Detail>,
    detail_objs: Vec<PyObject>,
    icd_ids: FxMap<IcdKey, u32>,
    probe_ids: FxMap<(u32, Option<u32>, i64), u32>,
}

impl Tables {
    fn name(&mut self, py: Python<'_>, v: &str) -> u32 {
        if let Some(&k) = self.name_ids.get(v) {
            return k;
        }
        let k = self.names.len() as u32;
        self.names.push(v.to_string());
        self.name_objs.push(PyString::new(py, v).unbind());
        self.name_ids.insert(v.to_string(), k);
        k
    }

    /// InitcallDetail(pid, module, ret, returned), the module by its id in the scan's names.
    #[allow(clippy::too_many_arguments)]
    fn icd(&mut self, py: Python<'_>, cls: &Bound<'_, PyType>, pid: Option<i64>, module_id: Option<u32>,
           call_names: &[String], ret: Option<i64>, returned: bool) -> PyResult<u32> {
        let key = (pid, module_id, ret, returned);
        if let Some(&k) = self.icd_ids.get(&key) {
            return Ok(k);
        }
        let module = module_id.map(|m| call_names[m as usize].clone());
        let m = module.as_deref().map_or(py.None(), |v| PyString::new(py, v).into_any().unbind());
        let flag = returned.into_pyobject(py)?.to_owned().into_any().unbind();
        let o = named_tuple(py, cls, vec![int_or_none(py, pid)?, m, int_or_none(py, ret)?, flag])?;
        let k = self.details.len() as u32;
        self.details.push(Detail::Initcall { pid, module, ret, returned });
        self.detail_objs.push(o);
        self.icd_ids.insert(key, k);
        Ok(k)
    }

    /// ProbeDetail(device, driver, ret), the names by their ids.
    fn probe(&mut self, py: Python<'_>, cls: &Bound<'_, PyType>, dev: u32, drv: Option<u32>, ret: i64) -> PyResult<u32> {
        let key = (dev, drv, ret);
        if let Some(&k) = self.probe_ids.get(&key) {
            return Ok(k);
        }
        let drv_o = drv.map_or(py.None(), |d| self.name_objs[d as usize].clone_ref(py).into_any());
        let o = named_tuple(py, cls, vec![self.name_objs[dev as usize].clone_ref(py).into_any(), drv_o,
                                          int_or_none(py, Some(ret))?])?;
        let k = self.details.len() as u32;
        self.details.push(Detail::Probe { ret, dev, drv });
        self.detail_objs.push(o);
        self.probe_ids.insert(key, k);
        Ok(k)
    }
}

/// initcall_block(texts, candidates, kernel, host, first, types) -> (block, unfinished,
/// not_understood, first_bad_index, out_of_range)
///
/// The rows of `initcalls` as an EventBlock: the same events `initcall_events` builds, in the
/// same order, kept as columns (`types` as there: Event, Stamp, InitcallDetail, ProbeDetail,
/// Kind.INITCALL, Kind.PROBE, Kind.FIXUP, Clock.KERNEL, Clock.HOST). `split`: the scan's
/// threads, as initcall.rs `scan` says (-1: two for a large input).
#[pyfunction]
#[pyo3(signature = (texts, candidates, kernel, host, first, types, split=-1))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn initcall_block<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    candidates: &Bound<'py, PyAny>,
    kernel: &Bound<'py, PyAny>,
    host: &Bound<'py, PyAny>,
    first: i64,
    types: &Bound<'py, PyTuple>,
    split: i64,
) -> PyResult<(EventBlock, usize, usize, i64, usize)> {
    let r = scan(texts, candidates, split)?;
    let icd_t = types.get_item(2)?.downcast_into::<PyType>()?;
    let probe_t = types.get_item(3)?.downcast_into::<PyType>()?;
    let t = Types::of(types)?;
    let kernel = axis_times(kernel)?;
    let host = axis_times(host)?;
    // (clock, ns - minus) of line i: printk time, else host time, else no time
    let at = |i: i64, minus: i64| -> (u8, i64) {
        let (k, h) = (kernel[i as usize], host[i as usize]);
        if k != NONE {
            (KERNEL, k - minus)
        } else if h != NONE {
            (HOST, h - minus)
        } else {
            (NO_CLOCK, 0)
        }
    };
    // the tables: one entry per distinct name and per distinct detail
    let mut tab = Tables::default();
    let n = r.n_calls() + r.probes.len() + r.fixups.len();
    let mut rows = Rows {
        kind: Vec::with_capacity(n),
        clock: Vec::with_capacity(n),
        name: Vec::with_capacity(n),
        detail: Vec::with_capacity(n),
        start: Vec::with_capacity(n),
        dur: Vec::with_capacity(n),
        line: Vec::with_capacity(n),
        end: Vec::with_capacity(n),
        names: Vec::new(),
        name_objs: Vec::new(),
        details: Vec::new(),
        detail_objs: Vec::new(),
        procs: Procs::default(),
        types: t,
        json: once_cell::sync::OnceCell::new(),
    };
    // rows in the scan's order first (calls, probes, fixups), put in line order below
    let mut push = |line: i64, kind: u8, (clock, start): (u8, i64), dur: i64, end: i64, name: u32, detail: u32| {
        rows.line.push(line);
        rows.kind.push(kind);
        rows.clock.push(clock);
        rows.start.push(start);
        rows.dur.push(dur);
        rows.end.push(end);
        rows.name.push(name);
        rows.detail.push(detail);
    };
    let mut unfinished = 0usize;
    let call_name: Vec<u32> = r.call_names.iter().map(|v| tab.name(py, v)).collect();
    let names = &r.call_names;
    for c in r.calls() {
        let (name, module, ci, ri, dur, pid, ret) = c.ids();
        let nm = call_name[name as usize];
        let d = dur.unwrap_or(NONE);
        if ri < 0 {
            unfinished += 1;
            let det = tab.icd(py, &icd_t, pid, module, names, None, false)?;
            push(first + ci, INITCALL, at(ci, 0), NONE, NONE, nm, det);
        } else if ci >= 0 {
            let det = tab.icd(py, &icd_t, pid, module, names, ret, true)?;
            push(first + ci, INITCALL, at(ci, 0), d, first + ri, nm, det);
        } else {
            let det = tab.icd(py, &icd_t, None, module, names, ret, true)?;
            push(first + ri, INITCALL, at(ri, dur.unwrap_or(0)), d, first + ri, nm, det);
        }
    }
    for (dev, drv, _, ri, dur, ret) in &r.probes {
        let dev_id = tab.name(py, dev);
        let drv_id = drv.as_deref().map(|d| tab.name(py, d));
        let det = tab.probe(py, &probe_t, dev_id, drv_id, *ret)?;
        push(first + ri, PROBE, at(*ri, *dur), *dur, first + ri, dev_id, det);
    }
    for (dev, quirk, si, ri, dur, _) in &r.fixups {
        let st = if *si >= 0 { at(*si, 0) } else { at(*ri, *dur) };
        let line = first + if *si >= 0 { *si } else { *ri };
        let dev_id = tab.name(py, dev);
        let det = tab.probe(py, &probe_t, dev_id, None, 0)?;
        let nm = tab.name(py, quirk.as_deref().unwrap_or(""));
        push(line, FIXUP, st, *dur, first + ri, nm, det);
    }
    // line order, stably (equal lines keep calls, probes, fixups order): a permutation applied
    // to each column, skipped when the scan's order already is (no unfinished call, no probe)
    if rows.line.windows(2).any(|w| w[0] > w[1]) {
        let lo = rows.line.iter().copied().min().unwrap_or(0);
        let hi = rows.line.iter().copied().max().unwrap_or(0);
        // (line - lo, row) in one u64, sorted without indirection (the row breaks ties, so the
        // unstable sort gives the stable order), else rows sorted by line, stably
        let keys: Option<Vec<u64>> = if (hi - lo) as u64 <= u32::MAX as u64 {
            let mut keys: Vec<u64> = rows.line.iter().enumerate()
                .map(|(i, &l)| ((l - lo) as u64) << 32 | i as u64).collect();
            keys.sort_unstable();
            Some(keys)
        } else {
            None
        };
        let perm: Vec<u32> = match &keys {
            Some(keys) => keys.iter().map(|&k| k as u32).collect(),
            None => {
                let mut perm: Vec<u32> = (0..n as u32).collect();
                perm.sort_by_key(|&i| rows.line[i as usize]);
                perm
            }
        };
        // Each column gathered into one scratch column (the keys' own pages, written already)
        // and copied back: a new gathered copy of each column cost 105 MB of fresh pages at 10M
        // lines (26k page faults, ~4 µs each on this 2-core machine).
        let mut scratch: Vec<u64> = keys.unwrap_or_else(|| Vec::with_capacity(n));
        fn apply<T: Copy>(v: &mut [T], perm: &[u32], scratch: &mut Vec<u64>, wide: fn(T) -> u64, back: fn(u64) -> T) {
            scratch.clear();
            scratch.extend(perm.iter().map(|&i| wide(v[i as usize])));
            for (d, &s) in v.iter_mut().zip(scratch.iter()) {
                *d = back(s);
            }
        }
        for col in [&mut rows.line, &mut rows.start, &mut rows.dur, &mut rows.end] {
            apply(col, &perm, &mut scratch, |x| x as u64, |x| x as i64);
        }
        for col in [&mut rows.name, &mut rows.detail] {
            apply(col, &perm, &mut scratch, |x| x as u64, |x| x as u32);
        }
        for col in [&mut rows.kind, &mut rows.clock] {
            apply(col, &perm, &mut scratch, |x| x as u64, |x| x as u8);
        }
    }
    rows.names = tab.names;
    rows.name_objs = tab.name_objs;
    rows.details = tab.details;
    rows.detail_objs = tab.detail_objs;
    let block = EventBlock { rows: Arc::new(rows), others: Vec::new(), opos: Vec::new() };
    Ok((block, unfinished, r.bad, r.first_bad, r.out_of_range))
}

/// The process rows of process.rs's scan as a block (kind 3), in the order given (line order):
/// one str per distinct name, comm and file name, the ProcessDetail's fields in `Procs`.
pub(crate) fn rows_block(py: Python<'_>, types: Types, procs: &[ProcRow<'_>]) -> EventBlock {
    let mut tab = Tables::default();
    let mut rows = Rows::empty(types);
    let n = procs.len();
    for v in [&mut rows.start, &mut rows.dur, &mut rows.line, &mut rows.end] {
        v.reserve_exact(n);
    }
    for p in procs {
        let name = tab.name(py, p.name);
        let comm = tab.name(py, p.comm);
        let exe = p.exe.map_or(NO_NAME, |e| tab.name(py, e));
        let d = &mut rows.procs;
        rows.detail.push(d.pid.len() as u32);
        d.pid.push(p.pid);
        d.ppid.push(p.ppid);
        d.comm.push(comm);
        d.exe.push(exe);
        d.kthread.push(p.kthread);
        d.exec_ns.push(p.exec_ns);
        d.exited.push(p.exited);
        d.forks.push(p.forks);
        rows.kind.push(PROCESS);
        rows.clock.push(p.clock);
        rows.name.push(name);
        rows.start.push(p.start);
        rows.dur.push(p.dur);
        rows.line.push(p.line);
        rows.end.push(p.end);
    }
    rows.names = tab.names;
    rows.name_objs = tab.name_objs;
    EventBlock { rows: Arc::new(rows), others: Vec::new(), opos: Vec::new() }
}
