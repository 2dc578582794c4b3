"""Side format: ftrace buffers (function_graph, function, trace events), their KFT table, and a buffer dumped beside a recording."""
