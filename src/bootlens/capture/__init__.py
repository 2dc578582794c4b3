"""Stage 1, capture: a console (serial port, command, network, QEMU) into a recording with
exact host times (:mod:`.loop`), read from a source (:mod:`.sources`; a command runs under
:mod:`.keeper`); the recording format, the contract between capture and everything else
(:mod:`.recording`); a run folder of repeated boots and its ``run.json`` (:mod:`.run_folder`);
a trace buffer dumped on the console (:mod:`.trace_dump`). Capture never imports analysis.
"""
