//! Blocks made from the scans' rows: `initcall_block` (called by parsers/initcall.py) turns the
//! rows of the initcall scan (parse/initcall.rs `scan`) into columns, in line order, with one
//! str per distinct name and one detail object per distinct detail; `rows_block` does the same
//! for the process rows of the sched_process scan (parse/process.rs).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyType};

use super::{named_tuple, Detail, EventBlock, ProcRow, Procs, Rows, Types, FIXUP, HOST, INITCALL, KERNEL, NONE, NO_CLOCK,
            NO_NAME, PROBE, PROCESS};
use crate::fxhash::FxMap;
use crate::parse::initcall::scan;
use crate::read::time::axis_times;

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
/// The rows of the initcall scan (`initcalls` gives the same rows as tuples) as an EventBlock, in
/// line order (stably: calls, probes, fixups), kept as columns; `types` is model.BLOCK_TYPES
/// (Event, Stamp, InitcallDetail, ProbeDetail, Kind.INITCALL, Kind.PROBE, Kind.FIXUP,
/// Clock.KERNEL, Clock.HOST, ...). A line's time is its printk time, else its host time, else
/// none. A call that returned starts at its `calling` line and ends at its return; one that never
/// returned has no duration, end line, return value, and `returned` False; a return without its
/// call starts at the return's time less the duration, with no pid. A probe starts at its line's
/// time less the duration (ProbeDetail(device, driver, ret)); a fixup at its `calling` line, else
/// as a probe (ProbeDetail(device, None, 0), named after the quirk). `first`: the line number
/// of line 0. `split`: the scan's threads, as initcall.rs `scan` says (-1: two for a large
/// input). tests/test_native.py holds the block to these rules, built in Python from the rows.
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
