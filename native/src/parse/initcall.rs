//! initcall_debug lines and the device probe and PCI quirk lines around them: the one reader of
//! them (docs/performance.md, "Where each format's knowledge lives"; parsers/initcall.py only
//! words the warnings). `scan` finds the calls (`calling  fn+0x0/0x30 [mod] @ pid`, `initcall
//! fn returned ret after N usecs`, the old `initcall 0x... ran for N msecs: fn`), pairs each
//! return with its call, and reads the probe (`probe of dev returned ret after N usecs`, with or
//! without the driver) and fixup (`pci dev: calling  quirk`, `pci dev: quirk took N usecs`)
//! lines, on two threads for a large log. Its rows become a block's columns in model/build.rs
//! (`initcall_block`, what parsers/initcall.py calls); `initcalls` hands them to Python as
//! tuples (tests, fuzz/harness.py). The kernel symbol in these lines is symbol.rs's grammar.

// once_cell, not std::sync::OnceLock: that needs Rust 1.70, and Debian 12 ships 1.63
use once_cell::sync::OnceCell;

use pyo3::prelude::*;
use regex::bytes::Regex;

use super::symbol::{fast_fn, FN};
use crate::fxhash::FxMap;
use crate::num::{bounded, digits, to_ns, INT_MAX, INT_MIN, PID_MAX};
use crate::read::index::IndexColumn;
use crate::read::text::{gather, slices, LineBytes, TextColumn};

struct Rx {
    call: Regex,
    ret: Regex,
    ran: Regex,
    fix_call: Regex,
    fix_took: Regex,
    probe: Regex,
    probe_drv: Regex,
}

fn rx() -> &'static Rx {
    static RX: OnceCell<Rx> = OnceCell::new();
    RX.get_or_init(|| {
        let r = |s: String| Regex::new(&format!("(?-u){s}")).expect("static regex");
        Rx {
            call: r(format!(r"^calling  {FN} @ (\d+)")),
            ret: r(format!(r"initcall {FN} returned (-?\d+) after (\d+) (usecs|msecs)")),
            ran: r(format!(r"initcall (?:0x[0-9a-f]+) ran for (\d+) msecs: {FN}\s*$")),
            fix_call: r(format!(r"^(\S+ \S+): calling  {FN} @ (\d+)")),
            fix_took: r(format!(r"^(\S+ \S+): {FN} took (\d+) usecs")),
            // dev_name() may hold spaces: "probe of Device ID probe.0 returned 0 after 40754 usecs"
            // (Debian 6.1 on the qemu-x86_64-systemd target; fixed_phy's "Fixed MDIO bus.0" too)
            probe: r(r"probe of (.+?) returned (-?\d+) after (\d+) usecs".to_string()),
            probe_drv: r(r"(?:(\S+) )?(\S+): probe with driver (\S+) returned (-?\d+) after (\d+) usecs".to_string()),
        }
    })
}

fn s(c: &regex::bytes::Captures, i: usize) -> Option<String> {
    c.get(i).map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned())
}

/// Capture i as numbers.to_int(text, hi, lo): None when absent or out of range.
fn int(c: &regex::bytes::Captures, i: usize, hi: i64, lo: i64) -> Option<i64> {
    bounded(c.get(i).map(|m| m.as_bytes()).unwrap_or(b""), hi, lo)
}

/// Capture i as numbers.to_ns(text, unit).
fn ns(c: &regex::bytes::Captures, i: usize, unit: i64) -> Option<i64> {
    to_ns(c.get(i).map(|m| m.as_bytes()).unwrap_or(b""), unit)
}

pub(crate) type CallRow = (String, Option<String>, i64, i64, Option<i64>, Option<i64>, Option<i64>);
/// A call row with its function and module as ids into Scan::call_names (no String a row).
pub(crate) type CallIds = (u32, Option<u32>, i64, i64, Option<i64>, Option<i64>, Option<i64>);

/// A CallIds held in 40 bytes, not 80 (a 10M-line trace holds 2.5M of them at the parse's
/// peak): module u32::MAX for none, pid -1 for none (pids are 0..=PID_MAX), the return value an
/// i32 (INT_MIN..=INT_MAX); duration and return value exist exactly when the call returned.
pub(crate) struct Call {
    name: u32,
    module: u32,
    ci: i64,
    ri: i64,
    dur: i64,
    pid: i32,
    ret: i32,
}

impl Call {
    fn new(name: u32, module: Option<u32>, ci: i64, ri: i64, returned: Option<(i64, i64)>, pid: Option<i64>) -> Call {
        let (dur, ret) = returned.unwrap_or((0, 0));
        Call { name, module: module.unwrap_or(u32::MAX), ci, ri, dur, pid: pid.map_or(-1, |p| p as i32), ret: ret as i32 }
    }

    /// The row as the scan's callers read it.
    pub(crate) fn ids(&self) -> CallIds {
        let returned = self.ri >= 0;
        (self.name, if self.module == u32::MAX { None } else { Some(self.module) }, self.ci, self.ri,
         if returned { Some(self.dur) } else { None }, if self.pid < 0 { None } else { Some(self.pid as i64) },
         if returned { Some(self.ret as i64) } else { None })
    }
}
pub(crate) type DevRow = (String, Option<String>, i64, i64, i64, i64);

/// `-?\d+` at p: (the digits with their sign, end) or None.
fn signed(b: &[u8], p: usize) -> Option<(&[u8], usize)> {
    let neg = b.get(p) == Some(&b'-');
    let q = if neg { p + 1 } else { p };
    let d = digits(b, q);
    if d == 0 {
        return None;
    }
    Some((&b[p..q + d], q + d))
}

/// `calling  FN @ (\d+)` fast path: (name, module, pid), the pid None when out of range.
#[allow(clippy::type_complexity)]
fn fast_call(t: &[u8]) -> Option<(&[u8], Option<&[u8]>, Option<i64>)> {
    let b = t.strip_prefix(b"calling  ")?;
    let (name, module, q) = fast_fn(b, b" @ ")?;
    let d = digits(b, q);
    if d == 0 {
        return None;
    }
    Some((name, module, bounded(&b[q..q + d], PID_MAX, 0)))
}

/// `initcall FN returned (-?\d+) after (\d+) (usecs|msecs)` fast path at the line start:
/// (name, module, ret, duration ns), the numbers None when out of range.
#[allow(clippy::type_complexity)]
fn fast_ret(t: &[u8]) -> Option<(&[u8], Option<&[u8]>, Option<i64>, Option<i64>)> {
    let b = t.strip_prefix(b"initcall ")?;
    let (name, module, q) = fast_fn(b, b" returned ")?;
    let (ret, q) = signed(b, q)?;
    let rest = b[q..].strip_prefix(b" after ")?;
    let d = digits(rest, 0);
    if d == 0 {
        return None;
    }
    let unit = &rest[d..];
    let unit = if unit.starts_with(b" usecs") {
        1_000
    } else if unit.starts_with(b" msecs") {
        1_000_000
    } else {
        return None;
    };
    Some((name, module, bounded(ret, INT_MAX, INT_MIN), to_ns(&rest[..d], unit)))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The id of a name in `names`, added when new; the key borrows from the held texts, so a name
/// seen before costs no allocation.
fn intern<'a>(ids: &mut FxMap<&'a [u8], u32>, names: &mut Vec<String>, b: &'a [u8]) -> u32 {
    *ids.entry(b).or_insert_with(|| {
        names.push(text(b));
        (names.len() - 1) as u32
    })
}

pub(crate) struct Scan {
    parts: Vec<Vec<Call>>, // the calls (see `calls`): one part a thread, in order
    pub(crate) call_names: Vec<String>, // the distinct function and module names of the calls
    pub(crate) probes: Vec<DevRow>,
    pub(crate) fixups: Vec<DevRow>,
    pub(crate) bad: usize,
    pub(crate) first_bad: i64,
    pub(crate) out_of_range: usize,
}

impl Scan {
    /// The calls: returned ones as they returned, then the ones that never returned in line order.
    pub(crate) fn calls(&self) -> impl Iterator<Item = &Call> {
        self.parts.iter().flatten()
    }

    pub(crate) fn n_calls(&self) -> usize {
        self.parts.iter().map(|p| p.len()).sum()
    }
}

/// Below this many candidate lines `scan` runs on one thread (a 1M-line initcall log has ~500k).
const SPLIT_MIN: usize = 64 * 1024;

/// The candidates (ascending line numbers): an IndexColumn read in place, else a sequence of int.
/// `split`: -1 scans on two threads from SPLIT_MIN candidates of a TextColumn (the GIL
/// released), 0 on one, k > 0 on two, the second from the k-th candidate (for tests: the rows
/// must not depend on it).
pub(crate) fn scan(texts: &Bound<'_, PyAny>, candidates: &Bound<'_, PyAny>, split: i64) -> PyResult<Scan> {
    let py = texts.py();
    let ixc = candidates.downcast::<IndexColumn>().ok();
    let owned: Vec<usize> = match ixc {
        Some(_) => Vec::new(),
        None => candidates.extract()?,
    };
    let n = ixc.map_or(owned.len(), |c| c.get().len());
    let range = |a: usize, b: usize| -> Box<dyn Iterator<Item = usize> + Send + '_> {
        match ixc {
            Some(c) => c.get().range(a, b),
            None => Box::new(owned[a..b].iter().copied()),
        }
    };
    // The keys borrow the line bytes instead of allocating: a TextColumn stays borrowed for the
    // scan; the strs of a list are kept alive in `held`.
    let col = match texts.downcast::<TextColumn>() {
        Ok(c) => c.try_borrow()?,
        Err(_) => {
            let mut held = Vec::new();
            let cands: Vec<usize> = range(0, n).collect();
            let spans = gather(texts, Some(&cands), &mut held)?;
            let strs = LineBytes::Held(slices(&held, &spans)?);
            return Ok(scan_run(cands.iter().copied(), 0, &strs)?.finish());
        }
    };
    let strs = LineBytes::column(py, &col)?;
    let cut = match split {
        0 => None,
        k if k > 0 => Some((k as usize).min(n)),
        _ if n < SPLIT_MIN || !crate::read::frame::two_cores() => None,
        _ => Some(n / 2),
    };
    let k = match cut {
        None => return Ok(scan_run(range(0, n), 0, &strs)?.finish()),
        Some(k) => k,
    };
    let (first, second) = (range(0, k), range(k, n));
    // the column is borrowed (no rewrite meanwhile) and `strs` touches no Python object
    let (a, b) = py.allow_threads(|| {
        std::thread::scope(|s| {
            let later = s.spawn(|| scan_run(second, k, &strs));
            let a = scan_run(first, 0, &strs);
            (a, later.join().expect("scan: the second thread panicked"))
        })
    });
    Ok(a?.join(b?).finish())
}

/// The scan of a run of candidate lines, its open calls and fixups still open (`join` pairs
/// them with a later run's returns; `finish` lists the ones left).
struct Run<'a> {
    // returned calls, as they return (call line -1: no call in the run): those of the runs
    // joined before `calls` (kept where each thread wrote them, not copied), then `calls`
    done: Vec<Vec<Call>>,
    calls: Vec<Call>,
    ids: FxMap<&'a [u8], u32>,
    call_names: Vec<String>,
    // calls not yet returned, by (name, module) ids: a stack each, chained through `nodes`
    pending: FxMap<u64, u32>,
    nodes: Vec<(i64, i64, u32)>, // (call line, pid, next: u32::MAX at the bottom)
    free: Vec<u32>,
    fix_open: FxMap<(String, String), i64>, // (device, quirk) -> the line that called it
    probes: Vec<DevRow>,
    fixups: Vec<DevRow>, // start -1: no call in the run
    // the `took` lines that found no call in the run, in order: their (device, quirk) and
    // their row in `fixups` (None: a duration out of range, no row, but the call is taken)
    fix_orphans: Vec<((String, String), Option<usize>)>,
    bad: usize,
    first_bad: i64,
    out_of_range: usize,
}

fn key_of(name: u32, module: Option<u32>) -> u64 {
    (name as u64) << 32 | module.unwrap_or(u32::MAX) as u64
}

impl<'a> Run<'a> {
    /// Open a call: push it on its (name, module) stack, reusing a freed node.
    fn open(&mut self, key: u64, ci: i64, pid: i64) {
        let head = self.pending.entry(key).or_insert(u32::MAX);
        let node = (ci, pid, *head);
        *head = match self.free.pop() {
            Some(f) => {
                self.nodes[f as usize] = node;
                f
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
    }

    /// Close the latest open call of `key`: its (call line, pid), or None.
    fn close(&mut self, key: u64) -> Option<(i64, i64)> {
        let head = self.pending.get_mut(&key)?;
        let (ci, pid, next) = self.nodes[*head as usize];
        self.free.push(*head);
        if next == u32::MAX {
            self.pending.remove(&key);
        } else {
            *head = next;
        }
        Some((ci, pid))
    }

    /// The open calls, (call line, pid, key) in line order.
    fn open_calls(&self) -> Vec<(i64, i64, u64)> {
        let mut open: Vec<(i64, i64, u64)> = Vec::new();
        for (&key, &head) in &self.pending {
            let mut at = head;
            while at != u32::MAX {
                let (ci, pid, next) = self.nodes[at as usize];
                open.push((ci, pid, key));
                at = next;
            }
        }
        open.sort_unstable_by_key(|o| o.0);
        open
    }

    /// This run followed by `later` (the next candidates), as one run over both would be: the
    /// names of `later` renumbered (new ones appended in their order of first use, as one scan
    /// interns them), each of its returns that found no call in it pairs with this run's latest
    /// open call of that name (LIFO, as the one scan's stack would), each of its `took` fixups
    /// without a call with this run's; its open calls and fixups join this run's.
    fn join(mut self, later: Run<'a>) -> Run<'a> {
        let mut by_id: Vec<&[u8]> = vec![b""; later.call_names.len()];
        for (&b, &id) in &later.ids {
            by_id[id as usize] = b;
        }
        let remap: Vec<u32> = by_id.iter().enumerate().map(|(id, &b)| {
            let names = &mut self.call_names;
            *self.ids.entry(b).or_insert_with(|| {
                names.push(later.call_names[id].clone());
                (names.len() - 1) as u32
            })
        }).collect();
        let re = |m: u32| if m == u32::MAX { m } else { remap[m as usize] };
        let later_open = later.open_calls();
        // later's calls renamed in place and kept as a part (appending them copied 50 MB into
        // fresh pages at 10M lines, on one thread)
        let mut parts = later.done;
        parts.push(later.calls);
        for c in parts.iter_mut().flatten() {
            c.name = remap[c.name as usize];
            c.module = re(c.module);
            if c.ci < 0 {
                let key = key_of(c.name, if c.module == u32::MAX { None } else { Some(c.module) });
                if let Some((ci, pid)) = self.close(key) {
                    c.ci = ci;
                    c.pid = pid as i32;
                }
            }
        }
        let last = parts.pop().unwrap_or_default();
        self.done.push(std::mem::replace(&mut self.calls, last));
        self.done.extend(parts);
        for (ci, pid, key) in later_open {
            let key = (remap[(key >> 32) as usize] as u64) << 32 | re(key as u32) as u64;
            self.open(key, ci, pid);
        }
        let mut fixups = later.fixups;
        for (key, row) in later.fix_orphans {
            if let Some(start) = self.fix_open.remove(&key) {
                if let Some(r) = row {
                    fixups[r].2 = start;
                }
            }
        }
        self.fixups.extend(fixups);
        self.fix_open.extend(later.fix_open);
        self.probes.extend(later.probes);
        self.bad += later.bad;
        if self.first_bad < 0 {
            self.first_bad = later.first_bad;
        }
        self.out_of_range += later.out_of_range;
        self
    }

    /// The rows: returned calls as they returned, then the calls that never returned in line order.
    fn finish(mut self) -> Scan {
        for (ci, pid, key) in self.open_calls() {
            let module = key as u32;
            self.calls.push(Call::new((key >> 32) as u32, if module == u32::MAX { None } else { Some(module) }, ci, -1, None, Some(pid)));
        }
        let mut parts = self.done;
        parts.push(self.calls);
        Scan { parts, call_names: self.call_names, probes: self.probes, fixups: self.fixups,
               bad: self.bad, first_bad: self.first_bad, out_of_range: self.out_of_range }
    }
}

/// Scan the candidate lines (the k-th of them is candidate number `k0 + k` of `strs`).
fn scan_run<'a>(candidates: impl Iterator<Item = usize>, k0: usize, strs: &LineBytes<'a>) -> PyResult<Run<'a>> {
    let rx = rx();
    // one id per distinct function or module name: a trace repeats a few thousand names.
    // Open calls: a key leaves `pending` when its stack empties, so the map holds what is open
    // now (a handful), not every name ever called. Keyed by the (name, module) ids (interned at
    // the call: one hash of the bytes a line), each stack a chain through `nodes`, whose freed
    // entries are reused: no allocation a call.
    let mut run = Run {
        done: Vec::new(), calls: Vec::new(), ids: FxMap::default(), call_names: Vec::new(), pending: FxMap::default(),
        nodes: Vec::new(), free: Vec::new(), fix_open: FxMap::default(), probes: Vec::new(),
        fixups: Vec::new(), fix_orphans: Vec::new(), bad: 0, first_bad: -1, out_of_range: 0,
    };
    let contains = |h: &[u8], n: &[u8]| h.windows(n.len()).any(|w| w == n);
    for (k, i) in candidates.enumerate() {
        let t: &'a [u8] = strs.get(k0 + k, i)?;
        let ii = i as i64;
        // the two common lines by their prefix, before any substring search
        let calling = t.starts_with(b"calling  ");
        let initcall = !calling && t.starts_with(b"initcall ");
        let has_call = calling || initcall || contains(t, b"call");
        if calling {
            let parsed = fast_call(t).or_else(|| {
                rx.call.captures(t).map(|c| {
                    let name = c.get(1).map(|m| m.as_bytes()).unwrap_or(b"");
                    (name, c.get(2).map(|m| m.as_bytes()), int(&c, 3, PID_MAX, 0))
                })
            });
            match parsed {
                Some((_, _, None)) => run.out_of_range += 1,
                Some((name, module, Some(pid))) => {
                    let n = intern(&mut run.ids, &mut run.call_names, name);
                    let m = module.map(|m| intern(&mut run.ids, &mut run.call_names, m));
                    run.open(key_of(n, m), ii, pid);
                }
                None => {
                    run.bad += 1;
                    if run.first_bad < 0 {
                        run.first_bad = ii;
                    }
                }
            }
            continue;
        }
        if initcall || (has_call && contains(t, b"initcall ")) {
            let fast = fast_ret(t);
            let (fname, module, dur, ret) = if let Some((n, m, r, d)) = fast {
                (n, m, d, r)
            } else if let Some(c) = rx.ret.captures(t) {
                let unit = if c.get(5).map(|m| m.as_bytes()) == Some(b"usecs") { 1_000 } else { 1_000_000 };
                (c.get(1).map(|m| m.as_bytes()).unwrap_or(b""), c.get(2).map(|m| m.as_bytes()),
                 ns(&c, 4, unit), int(&c, 3, INT_MAX, INT_MIN))
            } else if let Some(c) = rx.ran.captures(t) {
                (c.get(2).map(|m| m.as_bytes()).unwrap_or(b""), c.get(3).map(|m| m.as_bytes()),
                 ns(&c, 1, 1_000_000), Some(0))
            } else {
                if contains(t, b" returned ") || contains(t, b" ran for ") {
                    run.bad += 1;
                    if run.first_bad < 0 {
                        run.first_bad = ii;
                    }
                }
                continue;
            };
            let (dur, ret) = match (dur, ret) {
                (Some(d), Some(r)) => (d, r),
                _ => {
                    run.out_of_range += 1;
                    continue;
                }
            };
            let n = intern(&mut run.ids, &mut run.call_names, fname);
            let m = module.map(|m| intern(&mut run.ids, &mut run.call_names, m));
            let (ci, pid) = match run.close(key_of(n, m)) {
                Some((ci, pid)) => (ci, Some(pid)),
                None => (-1, None),
            };
            run.calls.push(Call::new(n, m, ci, ii, Some((dur, ret)), pid));
            continue;
        }
        if has_call && contains(t, b" calling  ") {
            if let Some(c) = rx.fix_call.captures(t) {
                run.fix_open.insert((s(&c, 1).unwrap_or_default(), s(&c, 2).unwrap_or_default()), ii);
                continue;
            }
        }
        if !contains(t, b"usecs") {
            continue;
        }
        if contains(t, b" took ") {
            if let Some(c) = rx.fix_took.captures(t) {
                let dev = s(&c, 1).unwrap_or_default();
                let fname = s(&c, 2).unwrap_or_default();
                let key = (dev, fname);
                let start = run.fix_open.remove(&key);
                let row = match ns(&c, 4, 1_000) {
                    Some(dur) => {
                        run.fixups.push((key.0.clone(), Some(key.1.clone()), start.unwrap_or(-1), ii, dur, 0));
                        Some(run.fixups.len() - 1)
                    }
                    None => {
                        run.out_of_range += 1;
                        None
                    }
                };
                if start.is_none() {
                    run.fix_orphans.push((key, row));
                }
                continue;
            }
        }
        if contains(t, b"probe ") {
            let row = |c: &regex::bytes::Captures, dev: usize, drv: Option<usize>, ret: usize, dur: usize| {
                match (ns(c, dur, 1_000), int(c, ret, INT_MAX, INT_MIN)) {
                    (Some(d), Some(r)) => Some((s(c, dev).unwrap_or_default(), drv.and_then(|k| s(c, k)), -1, ii, d, r)),
                    _ => None,
                }
            };
            let found = if let Some(c) = rx.probe.captures(t) {
                Some(row(&c, 1, None, 2, 3))
            } else {
                rx.probe_drv.captures(t).map(|c| row(&c, 2, Some(3), 4, 5))
            };
            match found {
                Some(Some(r)) => run.probes.push(r),
                Some(None) => run.out_of_range += 1,
                None => {}
            }
        }
    }
    Ok(run)
}

/// initcalls(texts, candidates) -> (calls, probes, fixups, not_understood, first_bad_index,
/// out_of_range)
///
/// The rows of `scan` as tuples (for the tests and fuzz/harness.py; the parser takes them as a
/// block: model/build.rs): calls are (fn, module, call_index|-1, return_index|-1,
/// duration_ns|None, pid|None, ret|None) in the scan's order (returned calls as they return,
/// then unfinished ones in line order); probes and fixups are
/// (device, fn-or-driver, start_index|-1, end_index, duration_ns, ret). A line whose
/// pid, return value or duration is out of range (numbers.py) is not used, only counted.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub(crate) fn initcalls(
    texts: &Bound<'_, PyAny>,
    candidates: &Bound<'_, PyAny>,
) -> PyResult<(Vec<CallRow>, Vec<DevRow>, Vec<DevRow>, usize, i64, usize)> {
    let r = scan(texts, candidates, -1)?;
    let nm = |k: u32| r.call_names[k as usize].clone();
    let calls = r.calls().map(|c| c.ids()).map(|c| (nm(c.0), c.1.map(nm), c.2, c.3, c.4, c.5, c.6)).collect();
    Ok((calls, r.probes, r.fixups, r.bad, r.first_bad, r.out_of_range))
}
