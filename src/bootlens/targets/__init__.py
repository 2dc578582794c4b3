"""The targets: things that boot. The Target protocol and the configuration
a target boots in (:mod:`.base`); the QEMU reference targets with real Debian kernels
(:mod:`.qemu`, their busybox initramfs :mod:`.initramfs`) and the Debian 12 systemd image
(:mod:`.qemu_systemd`); a real board with its power-cycle command and hook (:mod:`.board`); the
kernel command line as one value (:mod:`.cmdline`); boot-time ftrace on the busybox targets
(:mod:`.trace_plan`, :mod:`.tracerun`); repeated boots of a target into a run folder
(:mod:`.runs`). labgrid's target is :mod:`bootlens.lab.labgrid`; every target by name,
:mod:`bootlens.lab.catalogue`.
"""
