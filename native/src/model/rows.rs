//! The columns of a block's rows (`Rows`) and the Python types a row's `Event` is built from
//! (`Types`, model.BLOCK_TYPES): what block.rs holds, build.rs fills and query.rs, procs.rs and
//! render/report.rs, render/json_chunk.rs read.

use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyType};

use super::{named_tuple, NONE, NO_CLOCK, NO_NAME, PROCESS};


/// The Python types and enum members a row is built from (model.BLOCK_TYPES: Event, Stamp,
/// InitcallDetail, ProbeDetail, Kind.INITCALL, Kind.PROBE, Kind.FIXUP, Clock.KERNEL, Clock.HOST,
/// ProcessDetail, Kind.PROCESS).
pub(crate) struct Types {
    pub(crate) event: Py<PyType>,
    pub(crate) stamp: Py<PyType>,
    pub(crate) process: Py<PyType>,   // ProcessDetail
    pub(crate) kinds: [PyObject; 4],  // Kind.INITCALL, Kind.PROBE, Kind.FIXUP, Kind.PROCESS
    pub(crate) clocks: [PyObject; 2], // Clock.KERNEL, Clock.HOST
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

    pub(crate) fn clone_ref(&self, py: Python<'_>) -> Types {
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
pub(crate) enum Detail {
    Initcall { pid: Option<i64>, module: Option<String>, ret: Option<i64>, returned: bool },
    Probe { ret: i64, dev: u32, drv: Option<u32> }, // ProbeDetail(device, driver, ret): the device and driver by name id
}

/// The rows of one scan, column by column, in line order (stable: calls, probes, fixups).
pub(crate) struct Rows {
    pub(crate) kind: Vec<u8>,
    pub(crate) clock: Vec<u8>,
    pub(crate) name: Vec<u32>,
    pub(crate) detail: Vec<u32>,
    pub(crate) start: Vec<i64>, // ns on `clock`
    pub(crate) dur: Vec<i64>,
    pub(crate) line: Vec<i64>,
    pub(crate) end: Vec<i64>,
    pub(crate) names: Vec<String>,
    pub(crate) name_objs: Vec<Py<PyString>>,
    pub(crate) details: Vec<Detail>,
    pub(crate) detail_objs: Vec<PyObject>,
    pub(crate) procs: Procs,
    pub(crate) types: Types,
    /// JSON parts written once per name and per detail (json.rs name_json, detail_json; empty
    /// for a probe's detail), made at the first json_chunk
    #[allow(clippy::type_complexity)]
    pub(crate) json: once_cell::sync::OnceCell<(Vec<Vec<u8>>, Vec<Vec<u8>>)>,
}

impl Rows {
    pub(crate) fn empty(types: Types) -> Rows {
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


    /// The name str of a name id.
    pub(crate) fn name_str(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// The detail object of row r: the shared one, or a process row's ProcessDetail built now.
    pub(crate) fn detail_obj(&self, py: Python<'_>, r: usize) -> PyResult<PyObject> {
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
