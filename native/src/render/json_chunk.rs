//! The JSON of a block's events, a chunk at a time (`EventBlock.json_chunk`, for
//! render/jsonout.py `_write_events`): the rows written from the columns with json.rs's
//! writers (the name and detail parts written once per name and detail), the other events
//! read from their Event objects, and the positions of those event_dict must write.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use super::json::{detail_json, name_json, probe_detail_json, write_event, write_process_parts, write_row_parts, Process,
                  KIND_JSON};
use crate::model::{opt, Detail, EventBlock, Rows, HOST, INITCALL, KERNEL, NONE, NO_NAME, PROCESS};
use crate::read::time::axis_times;

impl Rows {
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
}

impl EventBlock {
    /// EventBlock.json_chunk(times, start, count, axis_is_kernel): see its doc (model/block.rs).
    pub(crate) fn write_json_chunk<'py>(&self, py: Python<'py>, times: &Bound<'py, PyAny>, start: usize, count: usize,
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
