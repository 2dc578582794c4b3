//! JSON lines for the common event (a timed initcall), as render/jsonout.py event_dict writes it.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

/// JSON string literal (RFC 8259 escaping).
fn json_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for c in s.bytes() {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0..=0x1f => out.extend_from_slice(format!("\\u{:04x}", c).as_bytes()),
            _ => out.push(c),
        }
    }
    out.push(b'"');
}

/// Seconds from nanoseconds as a JSON number: the shortest decimal that reads back as the
/// same double (Rust's float Display), so parsed values equal orjson's output for ns / 1e9.
fn json_secs(out: &mut Vec<u8>, ns: i64) {
    let v = ns as f64 / 1e9;
    let mut s = format!("{}", v);
    if !s.contains('.') && !s.contains('e') && !s.contains("inf") && !s.contains("NaN") {
        s.push_str(".0");
    }
    out.extend_from_slice(s.as_bytes());
}

fn json_opt_int(out: &mut Vec<u8>, v: &Bound<'_, PyAny>) -> PyResult<()> {
    if v.is_none() {
        out.extend_from_slice(b"null");
    } else {
        out.extend_from_slice(v.extract::<i64>()?.to_string().as_bytes());
    }
    Ok(())
}

/// dump_initcalls(events, times, initcall_kind, axis_clock) -> [bytes | None]
///
/// The JSON object of each timed initcall event whose start is on the axis's own clock and not
/// an estimate, keys and order as render/jsonout.py event_dict; None for every other event,
/// which the caller renders in Python.
#[pyfunction]
pub(crate) fn dump_initcalls<'py>(
    py: Python<'py>,
    events: &Bound<'py, PyList>,
    times: &Bound<'py, PyList>,
    initcall_kind: &Bound<'py, PyAny>,
    axis_clock: &Bound<'py, PyAny>,
) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
    let mut out = Vec::with_capacity(events.len());
    let mut buf: Vec<u8> = Vec::with_capacity(256);
    for (ev, t) in events.iter().zip(times.iter()) {
        let e = ev.downcast::<PyTuple>()?;
        // Event: kind, name, start, duration_ns, line_no, end_line_no, detail
        let kind = e.get_item(0)?;
        let start = e.get_item(2)?;
        let end_line = e.get_item(5)?;
        let line = e.get_item(4)?;
        let fast = kind.is(initcall_kind)
            && !t.is_none()
            && !end_line.is_none()
            // plain ints: compared in Rust, not through Python's rich comparison
            && end_line.extract::<i64>().ok() != line.extract::<i64>().ok()
            && !start.is_none()
            && {
                let st = start.downcast::<PyTuple>()?;
                st.get_item(0)?.is(axis_clock) && !st.get_item(2)?.is_truthy()?
            };
        if !fast {
            out.push(None);
            continue;
        }
        let det = e.get_item(6)?;
        let det = det.downcast::<PyTuple>()?;
        buf.clear();
        buf.extend_from_slice(b"{\"kind\":\"initcall\",\"name\":");
        json_str(&mut buf, e.get_item(1)?.downcast::<PyString>()?.to_str()?);
        buf.extend_from_slice(b",\"start_s\":");
        json_secs(&mut buf, t.extract::<i64>()?);
        buf.extend_from_slice(b",\"duration_s\":");
        let dur = e.get_item(3)?;
        if dur.is_none() {
            buf.extend_from_slice(b"null");
        } else {
            json_secs(&mut buf, dur.extract::<i64>()?);
        }
        buf.extend_from_slice(b",\"line\":");
        json_opt_int(&mut buf, &line)?;
        buf.extend_from_slice(b",\"end_line\":");
        json_opt_int(&mut buf, &end_line)?;
        buf.extend_from_slice(b",\"pid\":");
        json_opt_int(&mut buf, &det.get_item(0)?)?;
        buf.extend_from_slice(b",\"module\":");
        let module = det.get_item(1)?;
        if module.is_none() {
            buf.extend_from_slice(b"null");
        } else {
            json_str(&mut buf, module.downcast::<PyString>()?.to_str()?);
        }
        buf.extend_from_slice(b",\"ret\":");
        json_opt_int(&mut buf, &det.get_item(2)?)?;
        buf.extend_from_slice(if det.get_item(3)?.is_truthy()? { b",\"returned\":true}" } else { b",\"returned\":false}" });
        out.push(Some(PyBytes::new(py, &buf)));
    }
    Ok(out)
}

