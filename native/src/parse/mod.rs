pub(crate) mod ftrace;
pub(crate) mod initcall;
pub(crate) mod process;
