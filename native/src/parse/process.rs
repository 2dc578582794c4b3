//! sched_process_fork/exec/exit trace events printed through tp_printk: scan, track the pids,
//! build the process events. The one implementation of this format (docs/performance.md step 19);
//! bootlens/parsers/process.py calls it and words the warnings.
//!
//!     sched_process_fork: comm=init pid=1 child_comm=init child_pid=79
//!     sched_process_exec: filename=/bin/busybox pid=79 old_pid=79
//!     sched_process_exit: comm=busybox pid=79 prio=120
//!
//! The line shapes are those of the regexes this replaced, matched by hand with their exact
//! semantics (the crate's regex is built without Unicode classes, and these regexes used Python's
//! Unicode `\d`):
//!
//!     sched_process_fork: comm=(.*?) pid=(\d+) child_comm=(.*?) child_pid=(\d+)
//!     sched_process_exec: filename=(.*?) pid=(\d+)(?: old_pid=(\d+))?
//!     sched_process_exit: comm=(.*?) pid=(\d+)
//!
//! A lazy `(.*?)` ends at the first place where the rest matches; a `\d+` takes every decimal
//! digit of any script, so "pid=12\u{0663}" reads "12\u{0663}", which is then refused as a pid (not
//! ASCII) and counted, never read as 12.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::fxhash::FxMap;
use crate::model::{rows_block, EventBlock, ProcRow, Types, NONE, NO_CLOCK};
use crate::num::{bounded, PID_MAX};
use crate::read::index::IndexColumn;
use crate::read::text::{gather, slices, LineBytes, TextColumn};
use crate::read::time::axis_times;

const KTHREADD: i64 = 2;

/// The zeros of Unicode's decimal digit runs (category Nd, ten code points each), as CPython
/// 3.11's `\d` knows them (Unicode 14; checked against `re` in tests/test_process_native.py).
const DIGIT_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66, 0xde6,
    0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90, 0x1b50,
    0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10, 0x104a0,
    0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650, 0x116c0,
    0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0, 0x16b50, 0x1d7ce,
    0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

/// Python's `\d` on a str: a Unicode decimal digit.
fn is_digit(c: char) -> bool {
    let c = c as u32;
    if c < 0x80 {
        return (0x30..0x3a).contains(&c);
    }
    // the last zero at or below c
    let k = DIGIT_ZEROS.partition_point(|&z| z <= c);
    k > 0 && c - DIGIT_ZEROS[k - 1] < 10
}

/// The end of the run of decimal digits starting at byte `p` of `t` (p itself when none).
fn digit_run(t: &str, p: usize) -> usize {
    let mut e = p;
    for c in t[p..].chars() {
        if !is_digit(c) {
            break;
        }
        e += c.len_utf8();
    }
    e
}

/// Byte offsets at or after `from` where `needle` (ASCII) starts, ascending.
fn places<'a>(t: &'a str, from: usize, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    let b = t.as_bytes();
    let n = needle.as_bytes();
    (from..b.len().saturating_sub(n.len() - 1)).filter(move |&i| b[i] == n[0] && b[i..].starts_with(n))
}

/// `text(.*?) key=(\d+)` from byte `from`: (text end, digits start, digits end) of the first
/// place where ` key=` is followed by a digit and `then` (a check from the digits' end) holds.
fn lazy_field(t: &str, from: usize, key: &str, mut then: impl FnMut(usize) -> bool) -> Option<(usize, usize, usize)> {
    for e in places(t, from, key) {
        let d = e + key.len();
        let de = digit_run(t, d);
        if de > d && then(de) {
            return Some((e, d, de));
        }
    }
    None
}

/// One line of the format: its text fields and pid digits (the parent's comm is not used).
enum Shape<'a> {
    Fork { pid: &'a str, child_comm: &'a str, child_pid: &'a str },
    Exec { filename: &'a str, pid: &'a str },
    Exit { comm: &'a str, pid: &'a str },
}

fn shape(t: &str) -> Option<Shape<'_>> {
    const FORK: &str = "sched_process_fork: comm=";
    const EXEC: &str = "sched_process_exec: filename=";
    const EXIT: &str = "sched_process_exit: comm=";
    if t.starts_with(FORK) {
        // the first " pid=<digits> child_comm=" (the parent's comm as short as it can be) ...
        let (_, d, de) = lazy_field(t, FORK.len(), " pid=", |de| t[de..].starts_with(" child_comm="))?;
        // ... then the first " child_pid=<digit>" after it. When there is none, a later
        // " pid=" cannot give one either (it leaves less of the line to search): no match, as the
        // regex found after trying each, without the quadratic walk.
        let b = de + " child_comm=".len();
        let (e3, d4, de4) = lazy_field(t, b, " child_pid=", |_| true)?;
        return Some(Shape::Fork { pid: &t[d..de], child_comm: &t[b..e3], child_pid: &t[d4..de4] });
    }
    if t.starts_with(EXEC) {
        let a = EXEC.len();
        let (e, d, de) = lazy_field(t, a, " pid=", |_| true)?;
        return Some(Shape::Exec { filename: &t[a..e], pid: &t[d..de] });
    }
    if t.starts_with(EXIT) {
        let a = EXIT.len();
        let (e, d, de) = lazy_field(t, a, " pid=", |_| true)?;
        return Some(Shape::Exit { comm: &t[a..e], pid: &t[d..de] });
    }
    None
}

/// A time: (0 kernel / 1 host, ns), or None when the line had neither.
type At = Option<(u8, i64)>;

/// A process while the log is read (bootlens's _Proc before this moved here).
struct Proc<'a> {
    pid: i64,
    ppid: Option<i64>,
    comm: &'a str,
    start: At,
    line: i64,
    exe: Option<&'a str>,
    exec_at: At,
    end: At,
    end_line: Option<i64>,
    forks: i64,
    kthread: bool,
}

impl<'a> Proc<'a> {
    fn new(pid: i64, ppid: Option<i64>, comm: &'a str, start: At, line: i64, kthread: bool) -> Self {
        Proc { pid, ppid, comm, start, line, exe: None, exec_at: None, end: None, end_line: None, forks: 0, kthread }
    }
}

/// What the scan found: every process in line order (a process starts on its own line, and the
/// lines are read in order), pids refused (count, first line), events without their fork.
struct Scan<'a> {
    procs: Vec<Proc<'a>>,
    refused: usize,
    first_refused: i64,
    orphans: usize,
}

fn scan_lines<'a>(
    candidates: impl Iterator<Item = usize>,
    strs: &LineBytes<'a>,
    kernel: &[i64],
    host: &[i64],
    first: i64,
) -> PyResult<Scan<'a>> {
    let mut procs: Vec<Proc<'a>> = Vec::new();
    let mut live: FxMap<i64, usize> = FxMap::default(); // pid -> index in procs
    let (mut refused, mut first_refused, mut orphans) = (0usize, -1i64, 0usize);
    for (k, i) in candidates.enumerate() {
        let b = strs.get(k, i)?;
        // a str's UTF-8 (anything else is not a line of this format)
        let t = match std::str::from_utf8(b) {
            Ok(t) => t,
            Err(_) => continue,
        };
        let s = match shape(t) {
            Some(s) => s,
            None => continue,
        };
        let no = first + i as i64;
        let at: At = if kernel[i] != i64::MIN {
            Some((0, kernel[i]))
        } else if host[i] != i64::MIN {
            Some((1, host[i]))
        } else {
            None
        };
        // numbers.to_int(text, PID_MAX), each refusal counted (Tally.take)
        let mut pid_of = |x: &str| -> Option<i64> {
            let v = bounded(x.as_bytes(), PID_MAX, 0);
            if v.is_none() {
                refused += 1;
                if first_refused < 0 {
                    first_refused = no;
                }
            }
            v
        };
        match s {
            Shape::Fork { pid, child_comm, child_pid } => {
                let ppid = pid_of(pid);
                let cpid = pid_of(child_pid);
                let (ppid, cpid) = match (ppid, cpid) {
                    (Some(a), Some(b)) => (a, b),
                    _ => continue,
                };
                let parent = live.get(&ppid).copied();
                if let Some(p) = parent {
                    procs[p].forks += 1;
                }
                // a pid forked again without an exit line: the old process stays as it was
                live.remove(&cpid);
                // Children of kthreadd and of kernel threads are kernel threads until they exec
                // (a kworker that execs /sbin/modprobe is user space).
                let kt = cpid == KTHREADD || ppid == KTHREADD
                    || parent.map_or(false, |p| procs[p].kthread && procs[p].exe.is_none());
                live.insert(cpid, procs.len());
                procs.push(Proc::new(cpid, Some(ppid), child_comm, at, no, kt));
            }
            Shape::Exec { filename, pid } => {
                let pid = match pid_of(pid) {
                    Some(p) => p,
                    None => continue,
                };
                let p = match live.get(&pid) {
                    Some(&p) => p,
                    None => {
                        orphans += 1;
                        let comm = filename.rsplit('/').next().unwrap_or(filename);
                        live.insert(pid, procs.len());
                        procs.push(Proc::new(pid, None, comm, at, no, false));
                        procs.len() - 1
                    }
                };
                procs[p].exe = Some(filename);
                procs[p].exec_at = at;
            }
            Shape::Exit { comm, pid } => {
                let pid = match pid_of(pid) {
                    Some(p) => p,
                    None => continue,
                };
                let p = match live.remove(&pid) {
                    Some(p) => p,
                    None => {
                        orphans += 1;
                        procs.push(Proc::new(pid, None, comm, at, no, false));
                        procs.len() - 1
                    }
                };
                let p = &mut procs[p];
                p.comm = comm;
                p.end = at;
                p.end_line = Some(no);
            }
        }
    }
    Ok(Scan { procs, refused, first_refused, orphans })
}

/// ``b - a`` (at least 0) when both times are in the same clock.
fn span(a: At, b: At) -> Option<i64> {
    match (a, b) {
        (Some((ca, va)), Some((cb, vb))) if ca == cb => Some((vb - va).max(0)),
        _ => None,
    }
}

/// The process rows of a scan, in line order: the one place the events' fields are made from
/// the processes tracked (name, kernel thread, spans).
fn proc_rows<'a>(r: &Scan<'a>, self_exe: &str) -> Vec<ProcRow<'a>> {
    let clock = |at: At| match at {
        Some((c, v)) => (c + 1, v), // KERNEL 1, HOST 2
        None => (NO_CLOCK, 0),
    };
    r.procs.iter().map(|p| {
        let exe = p.exe.filter(|e| !e.is_empty());
        let name = match exe {
            // busybox's shell runs an applet by re-executing itself through /proc/self/exe and
            // names the process after the applet: the comm at exit ("sleep", "mdev") says what ran.
            Some(e) if e == self_exe && p.end.is_some() => p.comm,
            Some(e) => e.rsplit('/').next().unwrap_or(e),
            None => p.comm,
        };
        let (c, start) = clock(p.start);
        ProcRow {
            line: p.line,
            clock: c,
            start,
            dur: span(p.start, p.end).unwrap_or(NONE),
            end: p.end_line.unwrap_or(NONE),
            name,
            pid: p.pid,
            ppid: p.ppid.unwrap_or(NONE),
            comm: p.comm,
            exe: p.exe,
            kthread: p.kthread && p.exe.is_none(),
            exec_ns: span(p.start, p.exec_at).unwrap_or(NONE),
            exited: p.end.is_some(),
            forks: p.forks,
        }
    }).collect()
}

/// process_block(texts, candidates, kernel, host, first, types) -> (block, pids refused, first
/// line with one refused or -1, events for pids whose fork was not in the log): the process
/// events of the candidate lines (ascending indices into ``texts``, the lines starting with
/// ``sched_process_``) as the rows of an EventBlock (kind 3, model/), in line order.
/// ``types``: model.BLOCK_TYPES and then process.py's SELF_EXE, the path of busybox's re-exec
/// of itself.
#[pyfunction]
pub(crate) fn process_block<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    candidates: &Bound<'py, PyAny>,
    kernel: &Bound<'py, PyAny>,
    host: &Bound<'py, PyAny>,
    first: i64,
    types: &Bound<'py, PyTuple>,
) -> PyResult<(EventBlock, usize, i64, usize)> {
    let owned: Vec<usize>;
    let idx: Box<dyn Iterator<Item = usize> + '_> = match candidates.downcast::<IndexColumn>() {
        Ok(c) => c.get().values(),
        Err(_) => {
            owned = candidates.extract()?;
            Box::new(owned.iter().copied())
        }
    };
    // the time columns borrowed, not copied (2 x 8 bytes a line of the whole log)
    let kernel = axis_times(kernel)?;
    let host = axis_times(host)?;
    let n = kernel.len().min(host.len());
    // the lines borrowed, as initcall.rs's scan does: a TextColumn's buffer, or a list's strs
    let col = match texts.downcast::<TextColumn>() {
        Ok(c) => Some(c.try_borrow()?),
        Err(_) => None,
    };
    let mut held = Vec::new();
    let spans;
    let cands: Vec<usize> = idx.collect();
    if cands.iter().any(|&i| i >= n) {
        return Err(pyo3::exceptions::PyIndexError::new_err("line index out of range"));
    }
    let strs = match &col {
        Some(c) => LineBytes::column(py, c)?,
        None => {
            spans = gather(texts, Some(&cands), &mut held)?;
            LineBytes::Held(slices(&held, &spans)?)
        }
    };
    let r = scan_lines(cands.iter().copied(), &strs, &kernel, &host, first)?;
    let self_exe: String = types.get_item(11)?.extract()?;
    let block = rows_block(py, Types::of(types)?, &proc_rows(&r, &self_exe));
    Ok((block, r.refused, r.first_refused, r.orphans))
}
