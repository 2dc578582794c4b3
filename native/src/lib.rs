//! bootlens's native core, the extension module `bootlens._scan` (required: setup.py stops
//! without cargo). The hot formats are parsed here only, with no Python twin to keep in step
//! (docs/performance.md, "Where each format's knowledge lives"); Python calls these functions
//! and classes by name. Byte classes are ASCII, as the `re.ASCII` patterns they replaced.
//!
//! One room per stage of the pipeline:
//! - read/: an input's bytes to line columns: cleaning checks, framing (the host and printk
//!   prefixes), the text, time and keyword-index columns, keyword search (bootlens/lines.py)
//! - parse/: the formats read in Rust: initcall_debug, kernel symbols, sched_process trace
//!   events, function_graph traces (bootlens/parsers/)
//! - model/: a boot's events as columns, `EventBlock` (bootlens/model.py), and the advisor's
//!   questions to them (bootlens/advise/)
//! - render/: the JSON of events, the report's passes and page pieces (bootlens/render/)
//!
//! and two shared helpers: num.rs (numbers read as bootlens/numbers.py reads them) and fxhash.rs.
//! This file only declares the rooms and registers what Python sees.

use pyo3::prelude::*;

mod fxhash;
mod model;
mod num;
mod parse;
mod read;
mod render;

#[pymodule]
fn _scan(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read::frame::frame, m)?)?;
    m.add_function(wrap_pyfunction!(read::prefix::printk_prefix, m)?)?;
    m.add_function(wrap_pyfunction!(read::prefix::grabserial_sys_prefix, m)?)?;
    m.add_function(wrap_pyfunction!(read::prefix::detect_framing, m)?)?;
    m.add_function(wrap_pyfunction!(read::prefix::grabserial_t_delta, m)?)?;
    m.add_function(wrap_pyfunction!(read::grep::grep, m)?)?;
    m.add_function(wrap_pyfunction!(read::grep::starting, m)?)?;
    m.add_class::<read::text::TextColumn>()?;
    m.add_class::<read::text::Pinned>()?;
    m.add_class::<read::time::TimeColumn>()?;
    m.add_class::<read::index::IndexColumn>()?;
    m.add_function(wrap_pyfunction!(read::clean::has_control, m)?)?;
    m.add_function(wrap_pyfunction!(read::clean::is_utf8, m)?)?;
    m.add_function(wrap_pyfunction!(read::clean::clean_as_is, m)?)?;
    m.add_function(wrap_pyfunction!(read::time::steps_back, m)?)?;
    m.add_function(wrap_pyfunction!(read::time::gaps, m)?)?;
    m.add_function(wrap_pyfunction!(parse::initcall::initcalls, m)?)?;
    m.add_function(wrap_pyfunction!(parse::symbol::initcall_func, m)?)?;
    m.add_function(wrap_pyfunction!(render::json::dump_initcalls, m)?)?;
    m.add_function(wrap_pyfunction!(render::page::text_piece, m)?)?;
    m.add_function(wrap_pyfunction!(render::page::page_escape, m)?)?;
    m.add_class::<render::page::JsonPiece>()?;
    m.add_function(wrap_pyfunction!(model::initcall_block, m)?)?;
    m.add_class::<model::EventBlock>()?;
    m.add_function(wrap_pyfunction!(render::report::report_lanes, m)?)?;
    m.add_function(wrap_pyfunction!(render::report::report_columns_all, m)?)?;
    m.add_function(wrap_pyfunction!(render::report::report_on_lines, m)?)?;
    m.add_function(wrap_pyfunction!(render::report::report_places, m)?)?;
    m.add_function(wrap_pyfunction!(render::report::report_process_texts, m)?)?;
    m.add_function(wrap_pyfunction!(render::report::timed_at, m)?)?;
    m.add_function(wrap_pyfunction!(model::query::pick, m)?)?;
    m.add_class::<model::query::Picked>()?;
    m.add_function(wrap_pyfunction!(render::report::report_line_times, m)?)?;
    m.add_function(wrap_pyfunction!(parse::ftrace::ftrace_graph, m)?)?;
    m.add_function(wrap_pyfunction!(parse::process::process_block, m)?)?;
    m.add_function(wrap_pyfunction!(model::procs::process_tree, m)?)?;
    m.add("BOUNDS", (num::TIME_NS_MAX, num::PID_MAX, num::INT_MIN, num::INT_MAX))?;
    Ok(())
}
