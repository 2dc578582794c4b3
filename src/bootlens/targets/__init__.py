"""The targets bootlens boots itself: the QEMU reference targets with real Debian kernels
(:mod:`.qemu`, their busybox initramfs :mod:`.initramfs`), the Debian 12 systemd image
(:mod:`.qemu_systemd`), the kernel command line as one value (:mod:`.cmdline`), boot-time ftrace
runs on them (:mod:`.tracerun`), and repeated boots of a target or a board into a run folder
(:mod:`.runs`).
"""
