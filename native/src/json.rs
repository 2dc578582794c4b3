//! JSON lines for the common events (a timed initcall, a process), as render/jsonout.py
//! event_dict writes them.

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBool, PyBytes, PyList, PyString, PyTuple, PyType};

/// The decimal digits of v (no allocation, no fmt machinery: the JSON writer prints five
/// numbers a row).
pub(crate) fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut d = [0u8; 20];
    let mut p = d.len();
    while v >= 100 {  // two digits a division (the page's columns: 7M numbers at 1M events)
        let r = (v % 100) as usize * 2;
        v /= 100;
        p -= 2;
        d[p..p + 2].copy_from_slice(&DIGIT_PAIRS[r..r + 2]);
    }
    if v >= 10 {
        let r = v as usize * 2;
        p -= 2;
        d[p..p + 2].copy_from_slice(&DIGIT_PAIRS[r..r + 2]);
    } else {
        p -= 1;
        d[p] = b'0' + v as u8;
    }
    out.extend_from_slice(&d[p..]);
}

/// "00", "01", ... "99".
const DIGIT_PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// An i64 as Python's str(int) prints it.
pub(crate) fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

/// JSON string literal (RFC 8259 escaping).
pub(crate) fn json_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    if !s.bytes().any(|c| c == b'"' || c == b'\\' || c < 0x20) {
        out.extend_from_slice(s.as_bytes()); // the common case: nothing to escape
    } else {
        for c in s.bytes() {
            match c {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                0..=0x1f => out.extend_from_slice(format!("\\u{:04x}", c).as_bytes()),
                _ => out.push(c),
            }
        }
    }
    out.push(b'"');
}

/// Seconds from nanoseconds as a JSON number: the shortest decimal that reads back as the
/// same double (what Rust's float Display prints, never with an exponent), so parsed values
/// equal orjson's output for ns / 1e9. Written in place: no String per number.
pub(crate) fn json_secs(out: &mut Vec<u8>, ns: i64) {
    use std::io::Write;
    let a = ns.unsigned_abs();
    if a < 1_000_000_000_000_000 {
        // Fewer than 16 significant digits (under 11.6 days): the exact decimal ns / 10^9 is
        // that shortest decimal. ns / 1e9 is the double nearest to it, it reads back as that
        // double, and no other decimal of at most 15 digits does (doubles keep 15 digits apart);
        // so it is written from the integer, without float formatting (a third of the JSON time).
        if ns < 0 {
            out.push(b'-');
        }
        push_u64(out, a / 1_000_000_000);
        out.push(b'.');
        let frac = a % 1_000_000_000;
        if frac == 0 {
            out.push(b'0');
        } else {
            let mut digits = [b'0'; 9];
            let mut f = frac;
            for d in digits.iter_mut().rev() {
                *d = b'0' + (f % 10) as u8;
                f /= 10;
            }
            let end = 9 - digits.iter().rev().take_while(|&&c| c == b'0').count();
            out.extend_from_slice(&digits[..end]);
        }
        return;
    }
    let at = out.len();
    let _ = write!(out, "{}", ns as f64 / 1e9); // writing to a Vec cannot fail
    if !out[at..].contains(&b'.') {
        out.extend_from_slice(b".0");
    }
}

fn json_opt_int(out: &mut Vec<u8>, v: Option<i64>) {
    match v {
        None => out.extend_from_slice(b"null"),
        Some(v) => push_i64(out, v),
    }
}

/// The fields of a timed initcall's JSON object (`t`: its start on the axis, in ns).
pub(crate) struct Initcall<'a> {
    pub(crate) name: &'a str,
    pub(crate) t: i64,
    pub(crate) dur: Option<i64>,
    pub(crate) line: Option<i64>,
    pub(crate) end: Option<i64>,
    pub(crate) pid: Option<i64>,
    pub(crate) module: Option<&'a str>,
    pub(crate) ret: Option<i64>,
    pub(crate) returned: bool,
}

/// Append the JSON object of a timed initcall whose start is on the axis's own clock, keys and
/// order as render/jsonout.py event_dict: the one writer of it (for Event tuples here, for the
/// columns of an EventBlock in events.rs, which keeps the name and detail parts written once
/// per name and detail: `name_json` and `detail_json`).
pub(crate) fn write_initcall(buf: &mut Vec<u8>, e: &Initcall<'_>) {
    let mut name = Vec::with_capacity(e.name.len() + 2);
    json_str(&mut name, e.name);
    write_initcall_parts(buf, &name, e.t, e.dur, e.line, e.end, &detail_json(e.pid, e.module, e.ret, e.returned));
}

/// The name as a JSON string (write_initcall_parts's `name`).
pub(crate) fn name_json(name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 2);
    json_str(&mut out, name);
    out
}

/// The end of an initcall's object, from its detail: `,"pid":..,"module":..,"ret":..,"returned":..}`.
pub(crate) fn detail_json(pid: Option<i64>, module: Option<&str>, ret: Option<i64>, returned: bool) -> Vec<u8> {
    let mut buf = Vec::with_capacity(64);
    buf.extend_from_slice(b",\"pid\":");
    json_opt_int(&mut buf, pid);
    buf.extend_from_slice(b",\"module\":");
    match module {
        None => buf.extend_from_slice(b"null"),
        Some(m) => json_str(&mut buf, m),
    }
    buf.extend_from_slice(b",\"ret\":");
    json_opt_int(&mut buf, ret);
    buf.extend_from_slice(if returned { b",\"returned\":true}" } else { b",\"returned\":false}" });
    buf
}

/// The end of a probe's or fixup's object, from its detail (ProbeDetail: the device, the driver
/// or None, ret): `,"device":..,"driver":..,"ret":..}`.
pub(crate) fn probe_detail_json(device: &str, driver: Option<&str>, ret: i64) -> Vec<u8> {
    let mut buf = Vec::with_capacity(device.len() + driver.map_or(4, str::len) + 40);
    buf.extend_from_slice(b",\"device\":");
    json_str(&mut buf, device);
    buf.extend_from_slice(b",\"driver\":");
    match driver {
        None => buf.extend_from_slice(b"null"),
        Some(d) => json_str(&mut buf, d),
    }
    buf.extend_from_slice(b",\"ret\":");
    push_i64(&mut buf, ret);
    buf.push(b'}');
    buf
}

/// The `"kind"` member's value of an EventBlock row by its kind (events.rs INITCALL, PROBE,
/// FIXUP, PROCESS): model.Kind's values as JSON strings.
pub(crate) const KIND_JSON: [&[u8]; 4] = [b"\"initcall\"", b"\"probe\"", b"\"fixup\"", b"\"process\""];

/// Append an initcall's object from its name (JSON, name_json) and detail (detail_json) parts.
pub(crate) fn write_initcall_parts(buf: &mut Vec<u8>, name: &[u8], t: i64, dur: Option<i64>, line: Option<i64>,
                                   end: Option<i64>, detail: &[u8]) {
    write_row_parts(buf, KIND_JSON[0], name, t, dur, line, Some(end), detail);
}

/// Append an event's object whose start is on the axis's own clock and not an estimate, keys and
/// order as event_dict: kind, name, start_s, duration_s, line, end_line (when `end` is Some:
/// event_dict leaves it out when the event ends on its own line), then the detail's members
/// (`detail`: detail_json's or probe_detail_json's, with the closing brace).
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_row_parts(buf: &mut Vec<u8>, kind: &[u8], name: &[u8], t: i64, dur: Option<i64>,
                              line: Option<i64>, end: Option<Option<i64>>, detail: &[u8]) {
    buf.extend_from_slice(b"{\"kind\":");
    buf.extend_from_slice(kind);
    buf.extend_from_slice(b",\"name\":");
    buf.extend_from_slice(name);
    buf.extend_from_slice(b",\"start_s\":");
    json_secs(buf, t);
    buf.extend_from_slice(b",\"duration_s\":");
    match dur {
        None => buf.extend_from_slice(b"null"),
        Some(d) => json_secs(buf, d),
    }
    buf.extend_from_slice(b",\"line\":");
    json_opt_int(buf, line);
    if let Some(end) = end {
        buf.extend_from_slice(b",\"end_line\":");
        json_opt_int(buf, end);
    }
    buf.extend_from_slice(detail);
}

/// Append the JSON of an Event tuple when it is a timed initcall or process whose start is on
/// the axis's own clock and not an estimate (true); else write nothing (false): the caller uses
/// event_dict.
pub(crate) fn write_event<'py>(
    buf: &mut Vec<u8>,
    e: &Bound<'py, PyTuple>,
    t: &Bound<'py, PyAny>,
    initcall_kind: &Bound<'py, PyAny>,
    axis_clock: &Bound<'py, PyAny>,
) -> PyResult<bool> {
    // Event: kind, name, start, duration_ns, line_no, end_line_no, detail
    let kind = e.get_item(0)?;
    if !kind.is(initcall_kind) {
        return write_process(buf, e, t, axis_clock);
    }
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
        return Ok(false);
    }
    let det = e.get_item(6)?;
    let det = det.downcast::<PyTuple>()?;
    let opt = |v: Bound<'py, PyAny>| -> PyResult<Option<i64>> {
        if v.is_none() { Ok(None) } else { v.extract::<i64>().map(Some) }
    };
    let module = det.get_item(1)?;
    let module = if module.is_none() { None } else { Some(module.downcast::<PyString>()?.to_str()?.to_owned()) };
    let name = e.get_item(1)?;
    write_initcall(buf, &Initcall {
        name: name.downcast::<PyString>()?.to_str()?,
        t: t.extract::<i64>()?,
        dur: opt(e.get_item(3)?)?,
        line: opt(line)?,
        end: opt(end_line)?,
        pid: opt(det.get_item(0)?)?,
        module: module.as_deref(),
        ret: opt(det.get_item(2)?)?,
        returned: det.get_item(3)?.is_truthy()?,
    });
    Ok(true)
}

/// model.Kind.PROCESS and model.ProcessDetail, looked up once.
static PROCESS_TYPES: GILOnceCell<(PyObject, Py<PyType>)> = GILOnceCell::new();

/// A time in ns that json_secs writes as orjson writes ns / 1e9 (under 10^15 ns: exact).
fn short_secs(v: &Bound<'_, PyAny>) -> Option<Option<i64>> {
    if v.is_none() {
        return Some(None);
    }
    if v.is_instance_of::<PyBool>() {
        return None;
    }
    match v.extract::<i64>() {
        Ok(ns) if ns.unsigned_abs() < 1_000_000_000_000_000 => Some(Some(ns)),
        _ => None,
    }
}

/// A str or None that json_str writes as orjson does: no byte under 0x20 (orjson writes \n, \t
/// short), else None (the caller falls back to event_dict).
fn plain_str<'py>(v: &Bound<'py, PyAny>) -> Option<Option<Bound<'py, PyString>>> {
    if v.is_none() {
        return Some(None);
    }
    let s = v.downcast::<PyString>().ok()?;
    let text = s.to_str().ok()?;
    if text.bytes().any(|c| c < 0x20) {
        return None;
    }
    Some(Some(s.clone()))
}

/// An int that is not a bool (orjson writes a bool as true/false).
fn plain_int(v: &Bound<'_, PyAny>) -> Option<Option<i64>> {
    if v.is_none() {
        return Some(None);
    }
    if v.is_instance_of::<PyBool>() {
        return None;
    }
    v.extract::<i64>().ok().map(Some)
}

/// Seconds from nanoseconds (under 10^15) as orjson writes ns / 1e9: json_secs's positional
/// decimal from 10 us up, the exponent form under it (7000 ns: "7e-6", 1234 ns: "1.234e-6").
fn orjson_secs(out: &mut Vec<u8>, ns: i64) {
    let a = ns.unsigned_abs();
    if a == 0 || a >= 10_000 {
        return json_secs(out, ns);
    }
    if ns < 0 {
        out.push(b'-');
    }
    let mut digits = Vec::with_capacity(4);
    push_u64(&mut digits, a);
    let exp = digits.len() as i64 - 1 - 9;
    let used = digits.len() - digits.iter().rev().take_while(|&&c| c == b'0').count();
    out.push(digits[0]);
    if used > 1 {
        out.push(b'.');
        out.extend_from_slice(&digits[1..used]);
    }
    out.push(b'e');
    push_i64(out, exp);
}

fn json_opt_secs(out: &mut Vec<u8>, v: Option<i64>) {
    match v {
        None => out.extend_from_slice(b"null"),
        Some(ns) => orjson_secs(out, ns),
    }
}

/// A value of a process's JSON object.
enum Value<'a> {
    Int(Option<i64>),
    Str(Option<&'a str>),
    Secs(Option<i64>),
    Bool(bool),
}

/// The fields of a process's JSON object (`t`: its start on the axis, in ns): from a process
/// Event (`write_process`) or from the process columns of an EventBlock (events.rs json_chunk).
pub(crate) struct Process<'a> {
    pub(crate) name: Option<&'a str>,
    pub(crate) t: i64,
    pub(crate) dur: Option<i64>,
    pub(crate) line: Option<i64>,
    pub(crate) end: Option<i64>,
    pub(crate) pid: Option<i64>,
    pub(crate) ppid: Option<i64>,
    pub(crate) comm: Option<&'a str>,
    pub(crate) exe: Option<&'a str>,
    pub(crate) kthread: bool,
    pub(crate) exec_ns: Option<i64>,
    pub(crate) exited: bool,
    pub(crate) forks: Option<i64>,
}

/// Append the JSON object of a process whose start is on the axis clock, keys and order as
/// render/jsonout.py event_dict, when every value is one json.rs writes as orjson does (true: no
/// str with a byte under 0x20, which orjson writes short, no time of 10^15 ns or more); else
/// nothing (false). The one writer of a process's JSON.
pub(crate) fn write_process_parts(buf: &mut Vec<u8>, p: &Process<'_>) -> bool {
    let plain = |v: Option<&str>| v.map_or(true, |s| !s.bytes().any(|c| c < 0x20));
    let short = |v: Option<i64>| v.map_or(true, |ns| ns.unsigned_abs() < 1_000_000_000_000_000);
    if !(plain(p.name) && plain(p.comm) && plain(p.exe) && short(Some(p.t)) && short(p.dur) && short(p.exec_ns)) {
        return false;
    }
    let end = p.end.filter(|&v| Some(v) != p.line); // written only when not the start line
    buf.extend_from_slice(b"{\"kind\":\"process\"");
    for (key, value) in [
        ("name", Value::Str(p.name)), ("start_s", Value::Secs(Some(p.t))), ("duration_s", Value::Secs(p.dur)),
        ("line", Value::Int(p.line)), ("end_line", Value::Int(end)), ("pid", Value::Int(p.pid)),
        ("ppid", Value::Int(p.ppid)), ("comm", Value::Str(p.comm)), ("exe", Value::Str(p.exe)),
        ("kthread", Value::Bool(p.kthread)), ("exec_s", Value::Secs(p.exec_ns)), ("exited", Value::Bool(p.exited)),
        ("forks", Value::Int(p.forks)),
    ] {
        if key == "end_line" && end.is_none() {
            continue;
        }
        buf.extend_from_slice(b",\"");
        buf.extend_from_slice(key.as_bytes());
        buf.extend_from_slice(b"\":");
        match value {
            Value::Int(v) => json_opt_int(buf, v),
            Value::Str(None) => buf.extend_from_slice(b"null"),
            Value::Str(Some(v)) => json_str(buf, v),
            Value::Secs(v) => json_opt_secs(buf, v),
            Value::Bool(v) => buf.extend_from_slice(if v { b"true" } else { b"false" }),
        }
    }
    buf.push(b'}');
    true
}

/// Append the JSON of a process Event (a ProcessDetail), keys and order as render/jsonout.py
/// event_dict, when its start is on the axis clock, not an estimate, and every value is one
/// json.rs writes as orjson does (true); else nothing (false).
fn write_process<'py>(buf: &mut Vec<u8>, e: &Bound<'py, PyTuple>, t: &Bound<'py, PyAny>, axis_clock: &Bound<'py, PyAny>)
                      -> PyResult<bool> {
    let py = e.py();
    let kind = e.get_item(0)?;
    let (process_kind, detail_type) = PROCESS_TYPES.get_or_try_init(py, || -> PyResult<_> {
        let model = py.import("bootlens.core.model")?;
        let kind = model.getattr("Kind")?.getattr("PROCESS")?.unbind();
        let det = model.getattr("ProcessDetail")?.downcast_into::<PyType>()?.unbind();
        Ok((kind, det))
    })?;
    if !kind.is(process_kind) || e.len() != 7 {
        return Ok(false);
    }
    let det = e.get_item(6)?;
    if !det.get_type().is(detail_type.bind(py)) {
        return Ok(false);
    }
    let start = e.get_item(2)?;
    if start.is_none() {
        return Ok(false);
    }
    let st = start.downcast::<PyTuple>()?;
    if !st.get_item(0)?.is(axis_clock) || st.get_item(2)?.is_truthy()? {
        return Ok(false);
    }
    let det = det.downcast::<PyTuple>()?;
    let bool_of = |v: Bound<'py, PyAny>| -> Option<bool> { v.downcast::<PyBool>().ok().map(|b| b.is_true()) };
    // ProcessDetail: pid, ppid, comm, exe, kthread, exec_ns, exited, forks
    let (Some(Some(t)), Some(name), Some(dur), Some(line), Some(end)) = (
        short_secs(t), plain_str(&e.get_item(1)?), short_secs(&e.get_item(3)?),
        plain_int(&e.get_item(4)?), plain_int(&e.get_item(5)?),
    ) else {
        return Ok(false);
    };
    let (Some(pid), Some(ppid), Some(comm), Some(exe), Some(kthread), Some(exec_ns), Some(exited), Some(forks)) = (
        plain_int(&det.get_item(0)?), plain_int(&det.get_item(1)?), plain_str(&det.get_item(2)?),
        plain_str(&det.get_item(3)?), bool_of(det.get_item(4)?), short_secs(&det.get_item(5)?),
        bool_of(det.get_item(6)?), plain_int(&det.get_item(7)?),
    ) else {
        return Ok(false);
    };
    fn text<'a>(v: &'a Option<Bound<'_, PyString>>) -> PyResult<Option<&'a str>> {
        v.as_ref().map(|s| s.to_str()).transpose()
    }
    Ok(write_process_parts(buf, &Process {
        name: text(&name)?, t, dur, line, end, pid, ppid, comm: text(&comm)?, exe: text(&exe)?, kthread,
        exec_ns, exited, forks,
    }))
}

/// dump_initcalls(events, times, initcall_kind, axis_clock) -> [bytes | None]
///
/// The JSON object of each timed initcall or process event whose start is on the axis's own
/// clock and not an estimate, keys and order as render/jsonout.py event_dict (a process's bytes
/// are orjson's); None for every other event, which the caller renders in Python.
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
        buf.clear();
        let fast = write_event(&mut buf, ev.downcast::<PyTuple>()?, &t, initcall_kind, axis_clock)?;
        out.push(if fast { Some(PyBytes::new(py, &buf)) } else { None });
    }
    Ok(out)
}
