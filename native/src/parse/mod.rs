//! The parse room: the formats whose knowledge lives in Rust only (docs/performance.md, "Where
//! each format's knowledge lives"), each read by hand or by regexes with ASCII classes:
//! initcall_debug with its probe and fixup lines (initcall.rs), the kernel symbols in them and
//! in ftrace's initcall events (symbol.rs), the sched_process trace events (process.rs) and
//! function_graph traces (ftrace/). The Python parsers of bootlens/parsers/ call them and word
//! the warnings.

pub(crate) mod ftrace;
pub(crate) mod initcall;
pub(crate) mod process;
pub(crate) mod symbol;
