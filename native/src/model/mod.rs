//! The event model's native half: a boot's events as one sequence, `EventBlock`, which
//! `bootlens.core.model.Events` wraps (issue 14 part 4; docs/performance.md).
//!
//! The initcall, probe and fixup rows of the initcall scan (parse/initcall.rs) and the process
//! rows of the sched_process scan (parse/process.rs; kind 3, step 24b) are kept as columns, 42
//! bytes a row, names and details shared through tables, with the boot's other events (Python
//! `Event` objects, a few hundred) merged into line order. To Python the block is a sequence of
//! `Event`: a row becomes an `Event` only when it is asked for (indexing, iteration), equal
//! field by field to the one the parser would have built (tests/test_native.py builds those
//! from the `initcalls` rows, in Python, as its oracle).
//!
//! - rows.rs: the columns and the Python types a row's `Event` is made of
//! - block.rs: `EventBlock` (the sequence, merging, joining) and the passes `analyze` makes over
//!   every event (axis times, counts, the longest N, the initcall span of the stage table)
//! - build.rs: blocks from the scans' rows (`initcall_block`, parsers/initcall.py; `rows_block`,
//!   parse/process.rs)
//! - query.rs: the advisor's questions to the rows (advise/rules/_kernel.py)
//! - procs.rs: the user-space process tree (advise/userspace.py)
//!
//! The report's passes over a block are render/report.rs, its JSON writer render/json_chunk.rs.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyType};

mod block;
mod build;
pub(crate) mod procs;
pub(crate) mod query;
mod rows;

pub(crate) use block::*;
pub(crate) use build::*;
pub(crate) use rows::*;

pub(crate) const NONE: i64 = i64::MIN; // an absent duration, end line or axis time (TimeColumn's None too)
pub(crate) const INITCALL: u8 = 0;
pub(crate) const PROBE: u8 = 1;
pub(crate) const FIXUP: u8 = 2;
pub(crate) const PROCESS: u8 = 3;
pub(crate) const NO_NAME: u32 = u32::MAX; // an absent name id (a process that never exec'd)
pub(crate) const NO_CLOCK: u8 = 0; // the line carried no time: start is None
pub(crate) const KERNEL: u8 = 1;
pub(crate) const HOST: u8 = 2;

/// An optional value of a column: NONE as None.
pub(crate) fn opt(v: i64) -> Option<i64> {
    if v == NONE {
        None
    } else {
        Some(v)
    }
}

/// Build an instance of a tuple subclass (a NamedTuple) from owned items, as CPython's own
/// tuple.__new__(cls, items) does: tp_alloc, then fill the slots.
pub(crate) fn named_tuple<'py>(py: Python<'py>, cls: &Bound<'py, PyType>, items: Vec<PyObject>) -> PyResult<PyObject> {
    if !cls.is_subclass_of::<PyTuple>()? {
        return Err(pyo3::exceptions::PyTypeError::new_err("expected a tuple subclass"));
    }
    // Only the stable ABI (abi3): the type's tp_alloc through PyType_GetSlot, the slots filled
    // through PyTuple_SetItem rather than the PyTuple_SET_ITEM macro.
    // SAFETY: cls is a tuple subclass, so its instances have the PyTupleObject layout and
    // tp_alloc gives one with items.len() empty slots and a reference count of 1 (as
    // PyTuple_SetItem requires), each slot filled exactly once below (PyTuple_SetItem steals
    // the reference, also when it fails).
    unsafe {
        let tp = cls.as_type_ptr();
        let slot = ffi::PyType_GetSlot(tp, ffi::Py_tp_alloc);
        let alloc: ffi::allocfunc =
            if slot.is_null() { ffi::PyType_GenericAlloc } else { std::mem::transmute::<*mut std::os::raw::c_void, ffi::allocfunc>(slot) };
        let obj = alloc(tp, items.len() as ffi::Py_ssize_t);
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        let obj = PyObject::from_owned_ptr(py, obj);
        for (i, it) in items.into_iter().enumerate() {
            if ffi::PyTuple_SetItem(obj.as_ptr(), i as ffi::Py_ssize_t, it.into_ptr()) != 0 {
                return Err(PyErr::fetch(py));
            }
        }
        Ok(obj)
    }
}
