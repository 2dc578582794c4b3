//! Native accelerator for bootlens's per-line work (optional: bootlens runs without it).
//!
//! Every function has a Python reference implementation, named in its module's header;
//! `tests/test_native.py` checks that both give identical results. Semantics follow the Python
//! regexes, compiled with `re.ASCII`: digits and whitespace are ASCII only.

use pyo3::prelude::*;

mod columns;
mod frame;
mod initcall;
mod json;

/// Count ASCII digits starting at `p`.
pub(crate) fn digits(b: &[u8], p: usize) -> usize {
    b[p..].iter().take_while(|c| c.is_ascii_digit()).count()
}

pub(crate) fn num(b: &[u8]) -> i64 {
    b.iter().fold(0i64, |a, c| a.saturating_mul(10).saturating_add((c - b'0') as i64))
}

#[pymodule]
fn _scan(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(frame::frame, m)?)?;
    m.add_function(wrap_pyfunction!(columns::grep, m)?)?;
    m.add_function(wrap_pyfunction!(columns::has_control, m)?)?;
    m.add_function(wrap_pyfunction!(columns::steps_back, m)?)?;
    m.add_function(wrap_pyfunction!(columns::gaps, m)?)?;
    m.add_function(wrap_pyfunction!(initcall::initcalls, m)?)?;
    m.add_function(wrap_pyfunction!(initcall::initcall_events, m)?)?;
    m.add_function(wrap_pyfunction!(json::dump_initcalls, m)?)?;
    Ok(())
}
