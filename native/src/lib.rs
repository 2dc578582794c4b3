//! Native accelerator for bootlens's per-line work (optional: bootlens runs without it).
//!
//! Every function has a Python reference implementation, named in its module's header;
//! `tests/test_native.py` checks that both give identical results. Semantics follow the Python
//! regexes, compiled with `re.ASCII`: digits and whitespace are ASCII only.

use pyo3::prelude::*;

mod fxhash;
mod model;
mod parse;
mod read;
mod render;

/// Count ASCII digits starting at `p`.
pub(crate) fn digits(b: &[u8], p: usize) -> usize {
    b[p..].iter().take_while(|c| c.is_ascii_digit()).count()
}

/// The value of a run of ASCII digits, exactly (callers bound the run's length so it fits).
pub(crate) fn num(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |a, c| a * 10 + (c - b'0') as u64)
}

// The bounds of bootlens/numbers.py (exported below so that tests compare them).
pub(crate) const TIME_NS_MAX: i64 = 1 << 60;
pub(crate) const PID_MAX: i64 = 4_194_304;
pub(crate) const INT_MIN: i64 = -(1 << 31);
pub(crate) const INT_MAX: i64 = (1 << 31) - 1;

/// numbers.to_int: `-?\d+` (the sign only when `lo` < 0) read when within lo..=hi, else None.
pub(crate) fn bounded(b: &[u8], hi: i64, lo: i64) -> Option<i64> {
    let (neg, d) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    if d.is_empty() || !d.iter().all(|c| c.is_ascii_digit()) || (neg && lo >= 0) {
        return None;
    }
    let z = d.iter().take_while(|c| **c == b'0').count();
    let d = if z == d.len() { &d[d.len() - 1..] } else { &d[z..] };
    if d.len() > 19 {
        return None;
    }
    let v = num(d) as i128;  // 19 digits fit a u64
    let v = if neg { -v } else { v };
    if v < lo as i128 || v > hi as i128 {
        return None;
    }
    Some(v as i64)
}

/// numbers.to_ns: a count of `unit` ns as ns, when at most TIME_NS_MAX.
pub(crate) fn to_ns(b: &[u8], unit: i64) -> Option<i64> {
    bounded(b, TIME_NS_MAX / unit, 0).map(|v| v * unit)
}

#[pymodule]
fn _scan(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read::frame::frame, m)?)?;
    m.add_function(wrap_pyfunction!(read::frame::printk_prefix, m)?)?;
    m.add_function(wrap_pyfunction!(read::frame::grabserial_sys_prefix, m)?)?;
    m.add_function(wrap_pyfunction!(read::frame::detect_framing, m)?)?;
    m.add_function(wrap_pyfunction!(read::frame::grabserial_t_delta, m)?)?;
    m.add_function(wrap_pyfunction!(read::text::grep, m)?)?;
    m.add_function(wrap_pyfunction!(read::text::starting, m)?)?;
    m.add_class::<read::text::TextColumn>()?;
    m.add_class::<read::text::Pinned>()?;
    m.add_class::<read::text::TimeColumn>()?;
    m.add_class::<read::index::IndexColumn>()?;
    m.add_function(wrap_pyfunction!(read::text::has_control, m)?)?;
    m.add_function(wrap_pyfunction!(read::text::is_utf8, m)?)?;
    m.add_function(wrap_pyfunction!(read::text::clean_as_is, m)?)?;
    m.add_function(wrap_pyfunction!(read::text::steps_back, m)?)?;
    m.add_function(wrap_pyfunction!(read::text::gaps, m)?)?;
    m.add_function(wrap_pyfunction!(parse::initcall::initcalls, m)?)?;
    m.add_function(wrap_pyfunction!(parse::initcall::initcall_events, m)?)?;
    m.add_function(wrap_pyfunction!(render::json::dump_initcalls, m)?)?;
    m.add_function(wrap_pyfunction!(render::page::text_piece, m)?)?;
    m.add_function(wrap_pyfunction!(render::page::page_escape, m)?)?;
    m.add_class::<render::page::JsonPiece>()?;
    m.add_function(wrap_pyfunction!(model::initcall_block, m)?)?;
    m.add_class::<model::EventBlock>()?;
    m.add_function(wrap_pyfunction!(model::report::report_lanes, m)?)?;
    m.add_function(wrap_pyfunction!(model::report::report_columns_all, m)?)?;
    m.add_function(wrap_pyfunction!(model::report::report_on_lines, m)?)?;
    m.add_function(wrap_pyfunction!(model::report::report_places, m)?)?;
    m.add_function(wrap_pyfunction!(model::report::report_process_texts, m)?)?;
    m.add_function(wrap_pyfunction!(model::report::timed_at, m)?)?;
    m.add_function(wrap_pyfunction!(model::query::pick, m)?)?;
    m.add_class::<model::query::Picked>()?;
    m.add_function(wrap_pyfunction!(model::report::report_line_times, m)?)?;
    m.add_function(wrap_pyfunction!(parse::ftrace::ftrace_graph, m)?)?;
    m.add_function(wrap_pyfunction!(parse::process::process_block, m)?)?;
    m.add_function(wrap_pyfunction!(model::procs::process_tree, m)?)?;
    m.add("BOUNDS", (TIME_NS_MAX, PID_MAX, INT_MIN, INT_MAX))?;
    Ok(())
}
