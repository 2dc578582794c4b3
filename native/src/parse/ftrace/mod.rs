mod graph;
mod line;

pub(crate) use graph::ftrace_graph;
