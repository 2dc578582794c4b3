//! The report's per-event passes over an EventBlock (render/html.py boot_data; issue 14 part 4).
//!
//! It reads the block's columns directly (model/rows.rs). render/html.py keeps a Python
//! version of each function for a boot whose events are a plain tuple (`tests/test_native.py`
//! compares the two): the lanes of a timeline row (`_lanes`, `_pack`), the
//! event columns with their string table (`_columns`, `_detail`), the positions of events on
//! some lines (`_positions`) and the places of a few events in the columns.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use super::page::JsonPiece;
use crate::fxhash::FxMap;
use crate::model::{item_in, line_of, named_tuple, Detail, EventBlock, Item, NONE, NO_NAME, PROCESS};
use crate::read::time::axis_times;

/// A duration as the report's `dd` holds it: the ns, -1 for none (a negative one stays), of the
/// event at position `i`, item `it` of the block.
fn dd_of(b: &EventBlock, py: Python<'_>, it: Item) -> PyResult<i64> {
    Ok(match it {
        Item::Row(r) => {
            let d = b.rows.dur[r];
            if d == NONE { -1 } else { d }
        }
        Item::Other(k) => {
            let v = b.others[k].bind(py).downcast::<PyTuple>()?.get_item(3)?;
            if v.is_none() { -1 } else { v.extract::<i64>()? }
        }
    })
}

/// report_lanes(block, positions, times, one_thread) -> (order, lane_lengths): the lanes of one
/// timeline row (render/html.py `_lanes`): the events at `positions` (each with an axis time)
/// sorted by (start, duration, position), then packed first fit into lanes free of overlaps
/// (`_pack`: a span goes into the lowest-numbered lane free at its start; a span ends at start +
/// duration, an instant or a negative duration at its start), or all in one lane (empty too) when
/// `one_thread` (one thread's initcalls). `order`: the positions lane by lane.
#[pyfunction]
pub(crate) fn report_lanes(py: Python<'_>, block: PyRef<'_, EventBlock>, positions: Vec<usize>,
                           times: &Bound<'_, PyAny>, one_thread: bool) -> PyResult<(Vec<usize>, Vec<usize>)> {
    let ts = axis_times(times)?;
    let mut items: Vec<(i64, i64, usize)> = Vec::with_capacity(positions.len());
    let mut walk = block.walker();
    for &i in &positions {
        if i >= ts.len() || i >= block.len() || ts[i] == NONE {
            return Err(pyo3::exceptions::PyValueError::new_err("report_lanes: an event without an axis time"));
        }
        items.push((ts[i], dd_of(&block, py, walk.item(i))?, i));
    }
    items.sort_unstable();  // a total order: the position breaks every tie
    if one_thread {
        let n = items.len();
        return Ok((items.into_iter().map(|it| it.2).collect(), vec![n]));
    }
    let mut lanes: Vec<Vec<usize>> = Vec::new();
    let mut busy: BinaryHeap<Reverse<(i64, usize)>> = BinaryHeap::new(); // (end, lane)
    let mut free: BinaryHeap<Reverse<usize>> = BinaryHeap::new(); // lanes free at this start
    for &(s, d, i) in &items {
        while let Some(&Reverse((end, lane))) = busy.peek() {
            if end > s {
                break;
            }
            busy.pop();
            free.push(Reverse(lane));
        }
        let j = match free.pop() {
            Some(Reverse(j)) => j,
            None => {
                lanes.push(Vec::new());
                lanes.len() - 1
            }
        };
        lanes[j].push(i);
        busy.push(Reverse((if d > 0 { s + d } else { s }, j)));
    }
    let lens = lanes.iter().map(|l| l.len()).collect();
    Ok((lanes.into_iter().flatten().collect(), lens))
}

/// The text of a row's detail (render/html.py `_detail`), None when its fields cannot be read
/// as Rust strings (a lone surrogate): the caller's Python function makes that one.
fn detail_text(py: Python<'_>, b: &EventBlock, id: usize) -> PyResult<Option<String>> {
    Ok(match &b.rows.details[id] {
        Detail::Initcall { pid, module, ret, returned } => {
            let mut parts: Vec<String> = Vec::with_capacity(3);
            if let Some(p) = pid {
                parts.push(format!("pid {}", p));
            }
            if let Some(m) = module.as_deref().filter(|m| !m.is_empty()) {
                parts.push(m.to_string());
            }
            parts.push(if !returned {
                "never returned".to_string()
            } else {
                ret.map_or_else(|| "returned None".to_string(), |r| format!("returned {}", r))
            });
            Some(parts.join(", "))
        }
        Detail::Probe { .. } => {
            // ProbeDetail(device, driver, ret)
            // written into one String (200,000 probes at 1M events: no String a part)
            let o = b.rows.detail_objs[id].bind(py).downcast::<PyTuple>()?;
            let (dev, drv) = (o.get_item(0)?, o.get_item(1)?);
            let Ok(dev) = dev.downcast::<PyString>()?.to_str() else { return Ok(None) };
            let mut text = String::with_capacity(dev.len() + 40);
            text.push_str("device ");
            text.push_str(dev);
            if !drv.is_none() {
                let Ok(drv) = drv.downcast::<PyString>()?.to_str() else { return Ok(None) };
                if !drv.is_empty() {
                    text.push_str(", driver ");
                    text.push_str(drv);
                }
            }
            let ret: i64 = o.get_item(2)?.extract()?;
            let _ = std::fmt::Write::write_fmt(&mut text, format_args!(", returned {}", ret)); // to a String: no error
            Some(text)
        }
    })
}

/// The string table of the report (render/html.py `_Names`): `items`, each string once, in
/// order; a string not in it yet is appended. Looked up in a map of the strings' UTF-8 made here
/// (not in `_Names.index`, a Python dict, which `_Names` brings up to date itself when asked:
/// at 1M events its lookups, cache misses in a dict of 600,000 strings, were a third of
/// report_columns_all).
struct Names<'py> {
    items: Bound<'py, PyList>,
    /// each string's bytes (borrowed from an object of `keep`) -> its place in `items`
    map: FxMap<Key, i64>,
    /// the objects whose bytes the map's keys are, held as long as the map (dropped after it:
    /// fields drop in order)
    keep: Vec<Bound<'py, PyAny>>,
}

/// A string of the table: its bytes and their hash (FxHash, which mixes every byte into the low
/// bits that pick the bucket: fxhash.rs). The table rehashes from the hash kept here, without
/// reading the string again.
#[derive(Clone, Copy)]
struct Key {
    hash: u64,
    bytes: &'static [u8],
}

impl Key {
    fn new(bytes: &'static [u8]) -> Key {
        use std::hash::Hasher;
        let mut f = crate::fxhash::Fx::default();
        f.write(bytes);
        f.write_usize(bytes.len());
        Key { hash: f.finish(), bytes }
    }
}

impl PartialEq for Key {
    fn eq(&self, o: &Key) -> bool {
        self.hash == o.hash && self.bytes == o.bytes
    }
}

impl Eq for Key {}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl<'py> Names<'py> {
    fn new(items: &Bound<'py, PyList>) -> PyResult<Self> {
        let mut t = Names { items: items.clone(), map: FxMap::default(), keep: Vec::new() };
        for (k, s) in items.iter().enumerate() {
            let (key, made) = Self::key(&s)?;
            if !t.map.contains_key(&key) {
                t.put(&s, key, made, k as i64);
            }
        }
        Ok(t)
    }

    /// The key of `s`: its UTF-8 (a str with a lone surrogate, which has none, as "surrogatepass"
    /// encodes it, never valid UTF-8, so never another string's: the bytes object made is
    /// returned, for `keep`). Borrowed: valid while `s` (or the bytes) is alive.
    fn key(s: &Bound<'py, PyAny>) -> PyResult<(Key, Option<Bound<'py, PyAny>>)> {
        let (bytes, made): (&[u8], Option<Bound<'py, PyAny>>) = match s.downcast::<PyString>()?.to_str() {
            Ok(t) => (t.as_bytes(), None),
            Err(_) => {
                let b = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
                let bytes: &[u8] = b.downcast::<PyBytes>()?.as_bytes();
                // SAFETY: the bytes object's buffer lives as long as it, returned with the key
                (unsafe { std::mem::transmute::<&[u8], &[u8]>(bytes) }, Some(b))
            }
        };
        // SAFETY: a str's UTF-8 (its own data, or the copy it caches) lives as long as the str;
        // a key put in the map has its object in `keep`, which is dropped after the map
        Ok((Key::new(unsafe { std::mem::transmute::<&[u8], &'static [u8]>(bytes) }), made))
    }

    /// Put `s` in the map at place `k` (not there yet), keeping what its key borrows.
    fn put(&mut self, s: &Bound<'py, PyAny>, key: Key, made: Option<Bound<'py, PyAny>>, k: i64) {
        self.keep.push(made.unwrap_or_else(|| s.clone()));
        self.map.insert(key, k);
    }

    fn id(&mut self, s: &Bound<'py, PyAny>) -> PyResult<i64> {
        let (key, made) = Self::key(s)?;
        if let Some(&k) = self.map.get(&key) {
            return Ok(k);
        }
        let k = self.items.len() as i64;
        self.items.append(s)?;
        self.put(s, key, made, k);
        Ok(k)
    }
}

/// report_columns_all(block, order, times, other_names, other_texts, other_exec, items, text_of)
/// -> (s, d, n, l, e, x, i): the report's event columns of the events at `order` (each with an
/// axis time), as render/html.py `_columns` makes them: `s d l e` as EventBlock.report_columns;
/// `n` and `i` the places of the event's name and detail text in the string table (`items`,
/// each string once, which gains the strings not in it yet, name then text, event by event); `x`
/// a process's exec time or -1. The other events' names, texts and exec
/// times are given (lists parallel to the block's other events); a row's text is made here once
/// per distinct detail (`text_of(detail)` in Python for one whose strings Rust cannot hold).
///
/// With `as_json`: (piece, negative) instead: a page.rs JsonPiece that writes the object {"s": s,
/// "d": d, ...} as orjson would (no Python int made for the millions of values, and no buffer of
/// their JSON: the page writes it to its file) and whether a duration is negative (-1, an instant).
#[pyfunction]
#[pyo3(signature = (block, order, times, other_names, other_texts, other_exec, items, text_of, as_json=false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn report_columns_all<'py>(
    py: Python<'py>,
    block: PyRef<'py, EventBlock>,
    order: Vec<usize>,
    times: &Bound<'py, PyAny>,
    other_names: &Bound<'py, PyList>,
    other_texts: &Bound<'py, PyList>,
    other_exec: Vec<i64>,
    items: &Bound<'py, PyList>,
    text_of: &Bound<'py, PyAny>,
    as_json: bool,
) -> PyResult<PyObject> {
    let no = block.others.len();
    if other_names.len() != no || other_texts.len() != no || other_exec.len() != no {
        return Err(pyo3::exceptions::PyValueError::new_err("report_columns_all: one name, text and exec per other event"));
    }
    let ts = axis_times(times)?;
    let rows = &block.rows;
    let mut names = Names::new(items)?;
    let mut name_id = vec![-1i64; rows.names.len()];
    let mut text_id = vec![-1i64; rows.details.len()];
    let mut cols: [Vec<i64>; 7] = Default::default();
    for c in cols.iter_mut() {
        c.reserve_exact(order.len());
    }
    let [s, d, n, l, e, x, t] = &mut cols;
    let map = block.item_map();
    let mut text = String::with_capacity(96); // a process row's text
    for &i in &order {
        let [a, b, c, f] = block.report_numbers(py, &map, &ts, i, item_in(&map, i))?;
        s.push(a);
        d.push(b);
        l.push(c);
        e.push(f);
        match item_in(&map, i) {
            Item::Row(r) if rows.kind[r] == PROCESS => {
                // a process row: its text made from its columns (each distinct, the pid)
                let nm = rows.name[r] as usize;
                if name_id[nm] < 0 {
                    name_id[nm] = names.id(rows.name_objs[nm].bind(py).as_any())?;
                }
                n.push(name_id[nm]);
                let ex = process_row_text(&block, r, &mut text);
                t.push(names.id(PyString::new(py, &text).as_any())?);
                x.push(ex);
            }
            Item::Row(r) => {
                let nm = rows.name[r] as usize;
                if name_id[nm] < 0 {
                    name_id[nm] = names.id(rows.name_objs[nm].bind(py).as_any())?;
                }
                n.push(name_id[nm]);
                let dt = rows.detail[r] as usize;
                if text_id[dt] < 0 {
                    let txt = match detail_text(py, &block, dt)? {
                        Some(v) => PyString::new(py, &v).into_any(),
                        None => text_of.call1((rows.detail_objs[dt].bind(py),))?,
                    };
                    text_id[dt] = names.id(&txt)?;
                }
                t.push(text_id[dt]);
                x.push(-1);
            }
            Item::Other(k) => {
                n.push(names.id(&other_names.get_item(k)?)?);
                t.push(names.id(&other_texts.get_item(k)?)?);
                x.push(other_exec[k]);
            }
        }
    }
    if as_json {
        return columns_json(py, cols);
    }
    let [s, d, n, l, e, x, t] = cols;
    Ok((s, d, n, l, e, x, t).into_pyobject(py)?.into_any().unbind())
}

/// report_columns_all's `as_json` result: (a page JsonPiece of the columns, whether a duration is negative).
fn columns_json(py: Python<'_>, cols: [Vec<i64>; 7]) -> PyResult<PyObject> {
    let negative = cols[1].iter().any(|&d| d < 0);
    let named = ["s", "d", "n", "l", "e", "x", "i"].into_iter().zip(cols).collect();
    (JsonPiece::columns(named), negative).into_pyobject(py).map(|t| t.into_any().unbind())
}

/// report_on_lines(block, lines) -> positions: the positions of the events whose line is one
/// of `lines`, ascending (render/html.py `_positions` then matches the events themselves).
#[pyfunction]
pub(crate) fn report_on_lines(py: Python<'_>, block: PyRef<'_, EventBlock>, lines: Vec<i64>) -> PyResult<Vec<usize>> {
    let want: HashSet<i64> = lines.into_iter().collect();
    let mut out = Vec::new();
    block.walk(|i, it| {
        let ln = match it {
            Item::Row(r) => block.rows.line[r],
            Item::Other(k) => line_of(block.others[k].bind(py))?,
        };
        if want.contains(&ln) {
            out.push(i);
        }
        Ok(true)
    })?;
    Ok(out)
}

/// report_places(order, wanted) -> places: the place in `order` of each of `wanted` (the last
/// one when it occurs twice), -1 when it is not there.
#[pyfunction]
pub(crate) fn report_places(order: Vec<usize>, wanted: Vec<usize>) -> Vec<i64> {
    let mut at: std::collections::HashMap<usize, i64> = wanted.iter().map(|&w| (w, -1)).collect();
    for (c, p) in order.iter().enumerate() {
        if let Some(v) = at.get_mut(p) {
            *v = c as i64;
        }
    }
    wanted.iter().map(|w| at[w]).collect()
}

/// timed_at(block, positions, times, cls) -> [cls(event, time)]: the events at `positions`,
/// each in a two-field NamedTuple `cls` with its axis time (None when it has none): the
/// advisor's `Timed` rows (advise/rules/_kernel.py `_ByKind.timed`), built in one call, not a
/// Python call and a zip per event (600,000 initcalls in a 1M-event report).
#[pyfunction]
pub(crate) fn timed_at(py: Python<'_>, block: PyRef<'_, EventBlock>, positions: Vec<isize>, times: &Bound<'_, PyAny>,
                       cls: &Bound<'_, pyo3::types::PyType>) -> PyResult<Vec<PyObject>> {
    let ts = axis_times(times)?;
    positions.into_iter().map(|i| {
        let j = block.index(i)?;
        let t = match ts.get(j) {
            Some(&v) if v != NONE => v.into_pyobject(py)?.into_any().unbind(),
            Some(_) => py.None(),
            None => return Err(pyo3::exceptions::PyIndexError::new_err("timed_at: a position past the times")),
        };
        named_tuple(py, cls, vec![block.get(py, j)?, t])
    }).collect()
}

/// report_line_times(host, kernel, host_offset, kernel_offset) -> [int | None]: each log line's
/// time on the boot's axis in us (render/html.py `_axis_times`, its Python reference): its host
/// time when the axis places host times, else its kernel time, rounded half away from zero;
/// None for a line with neither. The columns' common length. With `as_json`: a page.rs JsonPiece
/// of the list instead (2M lines: no int made a line).
#[pyfunction]
#[pyo3(signature = (host, kernel, h_off, k_off, as_json=false))]
pub(crate) fn report_line_times<'py>(py: Python<'py>, host: &Bound<'py, PyAny>, kernel: &Bound<'py, PyAny>,
                                     h_off: Option<i64>, k_off: Option<i64>, as_json: bool) -> PyResult<PyObject> {
    let (h, k) = (axis_times(host)?, axis_times(kernel)?);
    let n = h.len().min(k.len());
    let us = |v: i64| if v >= 0 { (v + 500).div_euclid(1000) } else { (v - 500).div_euclid(1000) };
    let at = |v: i64, off: Option<i64>| if v == NONE { None } else { off.map(|o| us(v + o)) };
    let out = (0..n).map(|i| match (h_off, k_off) {
        (None, None) => None,
        (Some(_), None) => at(h[i], h_off),
        (None, Some(_)) => at(k[i], k_off),
        (Some(_), Some(_)) => at(h[i], h_off).or_else(|| at(k[i], k_off)),
    });
    if as_json {
        let v = out.map(|t| t.unwrap_or(NONE)).collect();
        return Ok(Bound::new(py, JsonPiece::ints(v))?.into_any().unbind());
    }
    Ok(PyList::new(py, out.collect::<Vec<Option<i64>>>())?.into_any().unbind())
}

/// One part of a tooltip text: Rust's when every value is a plain int or str, else Python's.
enum Part<'py> {
    Rust(String),
    Py(Bound<'py, PyString>),
}

/// `prefix` then `str(v)` (what an f-string writes for an int or a str): in Rust for an i64 or
/// a str Rust can hold (not a lone surrogate), else through Python's str().
fn part<'py>(prefix: &str, v: &Bound<'py, PyAny>, suffix: &str) -> PyResult<Part<'py>> {
    use pyo3::types::{PyBool, PyInt};
    let mut s = String::with_capacity(prefix.len() + 12 + suffix.len());
    s.push_str(prefix);
    if v.is_exact_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>() {
        if let Ok(n) = v.extract::<i64>() {
            s.push_str(&n.to_string());
            s.push_str(suffix);
            return Ok(Part::Rust(s));
        }
    } else if let Ok(t) = v.downcast_exact::<PyString>() {
        if let Ok(t) = t.to_str() {
            s.push_str(t);
            s.push_str(suffix);
            return Ok(Part::Rust(s));
        }
    }
    let py = v.py();
    let joined = PyString::new(py, prefix).add(v.str()?)?.add(PyString::new(py, suffix))?;
    Ok(Part::Py(joined.downcast_into::<PyString>()?))
}

/// The parts of a process's tooltip text (render/html.py `_detail`'s words for a process, written
/// here only): "pid P, parent Q, exec E, kernel thread, N children, still running at the end",
/// each present as given (`exe` and `forks` when truthy, `ppid` when not None), handed to
/// `emit(prefix, value, suffix)` in order (value None: the words alone).
#[allow(clippy::too_many_arguments)]
fn process_parts<V>(pid: V, ppid: Option<V>, exe: Option<V>, kthread: bool, forks: Option<V>, exited: bool,
                    mut emit: impl FnMut(&str, Option<V>, &str) -> PyResult<()>) -> PyResult<()> {
    emit("pid ", Some(pid), "")?;
    if let Some(v) = ppid {
        emit("parent ", Some(v), "")?;
    }
    if let Some(v) = exe {
        emit("exec ", Some(v), "")?;
    }
    if kthread {
        emit("kernel thread", None, "")?;
    }
    if let Some(v) = forks {
        emit("", Some(v), " children")?;
    }
    if !exited {
        emit("still running at the end", None, "")?;
    }
    Ok(())
}

/// A value of a process row's text.
enum Val<'a> {
    Int(i64),
    Str(&'a str),
}

/// The text of process row r (`process_parts` of its columns) written into `text` (cleared
/// first), and its exec time from its start in us rounded as html.py `_us` (-1: it never exec'd).
fn process_row_text(b: &EventBlock, r: usize, text: &mut String) -> i64 {
    use std::fmt::Write;
    let rows = &b.rows;
    let (p, d) = (&rows.procs, rows.detail[r] as usize);
    let exe = if p.exe[d] == NO_NAME { "" } else { rows.name_str(p.exe[d]) };
    text.clear();
    let _ = process_parts(
        Val::Int(p.pid[d]), (p.ppid[d] != NONE).then_some(Val::Int(p.ppid[d])),
        (!exe.is_empty()).then_some(Val::Str(exe)), p.kthread[d], (p.forks[d] != 0).then_some(Val::Int(p.forks[d])),
        p.exited[d],
        |pre, v, suf| {
            if !text.is_empty() {
                text.push_str(", ");
            }
            text.push_str(pre);
            match v {
                Some(Val::Int(n)) => {
                    let _ = write!(text, "{}", n);
                }
                Some(Val::Str(s)) => text.push_str(s),
                None => {}
            }
            text.push_str(suf);
            Ok(())
        },
    );
    let ns = p.exec_ns[d];
    if ns == NONE { -1 } else if ns >= 0 { (ns + 500).div_euclid(1000) } else { (ns - 500).div_euclid(1000) }
}

/// The tooltip text of one ProcessDetail (`process_parts` of its fields), each part present as
/// the detail says (a value's truthiness, as Python's `if`).
fn process_text<'py>(d: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyString>> {
    // ProcessDetail: pid, ppid, comm, exe, kthread, exec_ns, exited, forks
    let py = d.py();
    let ppid = d.get_item(1)?;
    let exe = d.get_item(3)?;
    let forks = d.get_item(7)?;
    let mut parts: Vec<Part<'py>> = Vec::with_capacity(6);
    process_parts(
        d.get_item(0)?, (!ppid.is_none()).then_some(ppid), exe.is_truthy()?.then_some(exe),
        d.get_item(4)?.is_truthy()?, forks.is_truthy()?.then_some(forks), d.get_item(6)?.is_truthy()?,
        |pre, v, suf| {
            parts.push(match v {
                Some(v) => part(pre, &v, suf)?,
                None => Part::Rust(pre.to_owned()),
            });
            Ok(())
        },
    )?;
    if parts.iter().all(|p| matches!(p, Part::Rust(_))) {
        let texts: Vec<&str> = parts.iter().map(|p| match p { Part::Rust(s) => s.as_str(), Part::Py(_) => "" }).collect();
        return Ok(PyString::new(py, &texts.join(", ")));
    }
    let objs: Vec<Bound<'py, PyString>> = parts.into_iter().map(|p| match p {
        Part::Rust(s) => PyString::new(py, &s),
        Part::Py(s) => s,
    }).collect();
    Ok(PyString::new(py, ", ").call_method1("join", (objs,))?.downcast_into::<PyString>()?)
}

/// report_process_texts(details, cls) -> (texts, exec_us, rest): for each detail of exact type
/// `cls` (model.ProcessDetail), its tooltip text (`process_text`) and its exec time from its
/// start in us rounded as html.py `_us` (-1: it never exec'd); for any other detail None and -1,
/// and its position in `rest` (render/html.py `_texts_exec` makes those in Python).
#[pyfunction]
#[allow(clippy::type_complexity)]
pub(crate) fn report_process_texts<'py>(
    details: &Bound<'py, PyList>,
    cls: &Bound<'py, pyo3::types::PyType>,
) -> PyResult<(Vec<Option<Bound<'py, PyString>>>, Vec<i64>, Vec<usize>)> {
    let n = details.len();
    let (mut texts, mut xs, mut rest) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::new());
    for (j, d) in details.iter().enumerate() {
        if !d.get_type().is(cls) {
            texts.push(None);
            xs.push(-1);
            rest.push(j);
            continue;
        }
        let d = d.downcast_into::<PyTuple>()?;
        texts.push(Some(process_text(&d)?));
        let ex = d.get_item(5)?;
        xs.push(if ex.is_none() {
            -1
        } else {
            // (ns + 500) // 1000, (ns - 500) // 1000 below 0: floor division, as Python's
            let ns = ex.extract::<i64>()? as i128;
            let r = if ns >= 0 { ns + 500 } else { ns - 500 };
            i64::try_from(r.div_euclid(1000)).map_err(|_| pyo3::exceptions::PyOverflowError::new_err("exec time"))?
        });
    }
    Ok((texts, xs, rest))
}
