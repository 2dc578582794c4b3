"""The built-in reference targets: real Debian kernels booted under QEMU (../REFERENCE-TARGET).

``setup`` downloads Debian's kernel and busybox-static for the target's architecture with a
private apt state (the system's apt architectures are not touched, no root is needed), and
builds an initramfs that behaves like an unoptimised product (:mod:`.initramfs`); the systemd
target's image is :mod:`.qemu_systemd`'s.

``boot`` starts QEMU paused, releases it once the capture is reading (so t=0 is power-on, to
within the time of one monitor command) and captures its serial console into a recording.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import subprocess
import tempfile
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import BootlensError, printable
from ..capture.loop import CaptureResult, capture, stop_if_interrupted
from ..capture.sources import CommandSource, Source, ThrottledSource
from .base import (
    BOOTLOADER, CMDLINE, KERNEL, OVERLAY, READY_MARKER, REGISTRY, TRACE, UBOOT_ENV, BootConfig, Target, TargetError,
    TargetName, TargetOptions, check_uboot_var,
)
from .cmdline import KernelCmdline
from .initramfs import APP, build_initramfs, init_files

if TYPE_CHECKING:
    from ..kbuild.build import Built
    from .trace_plan import TracePlan


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """How to get and boot one reference target."""

    name: str
    debian_arch: str
    kernel_package: str  # a metapackage; its dependency names the versioned kernel
    qemu: str
    machine: tuple[str, ...]
    firmware: str | None  # U-Boot binary, None for QEMU's own (SeaBIOS)
    console: str
    apt_packages: tuple[str, ...]  # host packages the target needs
    env_size: int = 0  # U-Boot environment size at the start of pflash unit 1 (0: none)
    flash_size: int = 64 << 20  # size QEMU requires of a pflash image
    rootfs: bool = False  # boots a root filesystem image (target_systemd), not the busybox initramfs


TARGETS = {
    "qemu-arm64": TargetSpec(
        name="qemu-arm64", debian_arch="arm64", kernel_package="linux-image-arm64",
        qemu="qemu-system-aarch64", machine=("-M", "virt", "-cpu", "cortex-a57", "-m", "512"),
        firmware="/usr/lib/u-boot/qemu_arm64/u-boot.bin", console="ttyAMA0",
        apt_packages=("qemu-system-arm", "u-boot-qemu"),
        env_size=0x40000,  # CONFIG_ENV_SIZE; CONFIG_ENV_ADDR=0x4000000 is flash1's first byte
    ),
    "qemu-x86_64": TargetSpec(
        name="qemu-x86_64", debian_arch="amd64", kernel_package="linux-image-amd64",
        qemu="qemu-system-x86_64", machine=("-M", "pc", "-m", "512"),
        firmware=None, console="ttyS0", apt_packages=("qemu-system-x86",),
    ),
    "qemu-x86_64-systemd": TargetSpec(
        name="qemu-x86_64-systemd", debian_arch="amd64", kernel_package="linux-image-amd64",
        qemu="qemu-system-x86_64", machine=("-M", "pc", "-m", "512"),
        firmware=None, console="ttyS0", apt_packages=("qemu-system-x86", "mmdebstrap", "e2fsprogs"),
        rootfs=True,
    ),
}

BASE_CMDLINE = "printk.time=1 panic=-1"


def cache_root() -> Path:
    """Where downloaded images and built initramfs live (XDG cache dir)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bootlens" / "targets"


def spec(name: str) -> TargetSpec:
    """The spec of a target, or a one-line error naming the known ones."""
    try:
        return TARGETS[name]
    except KeyError:
        raise TargetError(f"unknown target {name!r}; known: {', '.join(TARGETS)}") from None


@dataclass(frozen=True, slots=True)
class TargetFiles:
    """A set-up target: the files QEMU needs."""

    spec: TargetSpec
    kernel: Path
    initramfs: Path
    kernel_version: str
    rootfs: Path | None = None  # the root filesystem image, for a target that boots one
    config: Path | None = None  # the kernel's .config (Debian's /boot/config-*), when kept by setup


def files(name: str) -> TargetFiles:
    """The files of a target set up earlier, or an error saying how to set it up."""
    s = spec(name)
    d = cache_root() / name
    if s.rootfs:
        from .qemu_systemd import files as rootfs_target_files

        return rootfs_target_files(s, d)
    kernels = sorted(d.glob("vmlinuz-*"))
    initrd = d / "initramfs.cpio.gz"
    if not kernels or not initrd.exists() or not (d / "busybox").exists():
        raise TargetError(f"{name} is not set up: run `bootlens target setup {name}`")
    version = kernels[-1].name.removeprefix("vmlinuz-")
    config = d / f"config-{version}"
    return TargetFiles(s, kernels[-1], initrd, version, config=config if config.exists() else None)


def _run(cmd: list[str], what: str, cwd: str | None = None, timeout_s: float = 600, hint: str = "",
         stderr_only: bool = False) -> str:
    """A set-up command's standard output (with ``stderr_only``: its standard error, which is
    where debugfs reports), or a one-line TargetError with its last line of standard error."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=cwd)
    except FileNotFoundError:
        raise TargetError(f"{what}: {cmd[0]} not found{hint}") from None
    except subprocess.TimeoutExpired:
        raise TargetError(f"{what}: timed out") from None
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["no message"])[-1]
        raise TargetError(f"{what} failed: {last}")
    return p.stderr if stderr_only else p.stdout


def setup(name: str, force: bool = False, log: bool = True) -> TargetFiles:
    """Download the kernel and busybox for a target and build its initramfs (cached)."""
    s = spec(name)
    if not force:
        try:
            return files(name)
        except TargetError:
            pass
    d = cache_root() / name
    if s.rootfs:
        from .qemu_systemd import build

        return build(s, d, log)
    d.mkdir(parents=True, exist_ok=True)
    state = d / "apt"
    for sub in ("lists/partial", "cache/archives/partial"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    apt = ["-o", f"APT::Architecture={s.debian_arch}", "-o", f"APT::Architectures={s.debian_arch}",
           "-o", f"Dir::State::Lists={state / 'lists'}", "-o", f"Dir::Cache={state / 'cache'}",
           "-o", "Dir::State::Status=/dev/null", "-o", "Debug::NoLocking=1", "-qq"]
    if log:
        print(f"bootlens: fetching Debian {s.debian_arch} package lists", file=sys.stderr, flush=True)
    _run(["apt-get", *apt, "update"], "apt-get update")
    deps = _run(["apt-cache", *apt, "depends", s.kernel_package], "apt-cache depends")
    kpkg = next((ln.split(":", 1)[1].strip() for ln in deps.splitlines()
                 if ln.strip().startswith("Depends:") and "linux-image-" in ln), None)
    if kpkg is None:
        raise TargetError(f"cannot find the kernel package {s.kernel_package} depends on")
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        if log:
            print(f"bootlens: downloading {kpkg} and busybox-static", file=sys.stderr, flush=True)
        _run(["apt-get", *apt, "download", kpkg, "busybox-static"], "apt-get download", cwd=tmp)
        debs = list(Path(tmp).glob("*.deb"))
        root = Path(tmp) / "x"
        for deb in debs:
            _run(["dpkg-deb", "-x", str(deb), str(root)], f"unpacking {deb.name}")
        kernels = sorted((root / "boot").glob("vmlinuz-*"))
        busybox = root / "bin" / "busybox"
        if not kernels or not busybox.exists():
            raise TargetError("the downloaded packages hold no kernel image or busybox")
        for old in [*d.glob("vmlinuz-*"), *d.glob("config-*")]:
            old.unlink()
        shutil.copy(kernels[-1], d / kernels[-1].name)
        config = root / "boot" / kernels[-1].name.replace("vmlinuz-", "config-", 1)
        if config.exists():  # the base of a rebuilt kernel's Kconfig diff (bootlens.kbuild)
            shutil.copy(config, d / config.name)
        shutil.copy(busybox, d / "busybox")  # kept to rebuild the initramfs with an overlay
        (d / "initramfs.cpio.gz").write_bytes(build_initramfs(busybox.read_bytes()))
    return files(name)


def rootfs_files(target: str | None = None) -> dict[str, bytes]:
    """The init files of the reference initramfs (path without leading /, content): what the
    advisor reads to propose script edits, and what an overlay replaces. For a target that
    boots a root filesystem image: its unit files and their configuration (empty until set up)."""
    if target is not None and spec(target).rootfs:
        from .qemu_systemd import rootfs_files as unit_files

        return unit_files(cache_root() / target)
    return init_files()


# --- U-Boot environment ------------------------------------------------------------------


def default_uboot_env(firmware: bytes) -> dict[str, str]:
    """U-Boot's built-in default environment, read out of its binary.

    It is stored as NUL-separated ``name=value`` strings ending in a double NUL and (for the
    distro boot configs Debian builds) starting with ``bootcmd=``. A valid environment in flash
    replaces the default whole, so overrides must start from it.
    """
    start = firmware.find(b"\0bootcmd=") + 1
    if start <= 0:
        raise TargetError("cannot find U-Boot's default environment in its binary")
    end = firmware.find(b"\0\0", start)
    env: dict[str, str] = {}
    for item in firmware[start:end].split(b"\0"):
        key, sep, value = item.decode("latin-1").partition("=")
        if not sep or not key:
            raise TargetError("U-Boot's default environment does not parse")
        env[key] = value
    if "bootdelay" not in env:
        raise TargetError("U-Boot's default environment has no bootdelay: not the block expected")
    return env


def uboot_env_image(env: dict[str, str], size: int) -> bytes:
    """A non-redundant U-Boot environment: CRC32 (little-endian) of the data, then the data
    (``name=value`` NUL-separated, a final NUL) padded with NULs to ``size`` - 4 bytes."""
    data = b"".join(f"{k}={v}".encode("latin-1") + b"\0" for k, v in env.items()) + b"\0"
    if len(data) > size - 4:
        raise TargetError(f"U-Boot environment too large ({len(data)} > {size - 4} bytes)")
    data += b"\0" * (size - 4 - len(data))
    return zlib.crc32(data).to_bytes(4, "little") + data


def parse_env_overrides(items: Sequence[str]) -> dict[str, str]:
    """NAME=VALUE pairs (a value may be empty: NAME= clears the variable)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise TargetError(f"--uboot-env '{printable(item)}': expected NAME=VALUE, e.g. bootdelay=0")
        check_uboot_var(key, value)
        out[key] = value
    return out


def flash_image(tf: TargetFiles, overrides: dict[str, str], path: str) -> None:
    """Write a pflash image for unit 1 holding the default environment with ``overrides``."""
    s = tf.spec
    if not s.env_size or not s.firmware:
        raise TargetError(f"{s.name} has no U-Boot environment to change")
    for key, value in overrides.items():  # from --uboot-env, a configuration, the pytest plugin: checked here
        check_uboot_var(key, value, "U-Boot variable")
    env = default_uboot_env(Path(s.firmware).read_bytes())
    env.update(overrides)
    image = uboot_env_image({k: v for k, v in env.items() if v != "" or k not in overrides}, s.env_size)
    with open(path, "wb") as f:
        f.write(image)
        f.write(b"\xff" * (s.flash_size - len(image)))  # the rest reads as erased flash


# --- booting --------------------------------------------------------------------------------


def kernel_cmdline(tf: TargetFiles, cmdline: str | None = None, append: str = "") -> KernelCmdline:
    """The target's kernel command line: ``console=`` (and ``root=`` for a target booting an
    image) always, then BASE_CMDLINE or ``cmdline`` in its place, then ``append``."""
    kept: tuple[str, ...] = (f"console={tf.spec.console}",)
    if tf.rootfs is not None:
        from .qemu_systemd import ROOT_ARGS

        kept += (ROOT_ARGS,)
    return KernelCmdline(kept, BASE_CMDLINE).replacing(cmdline).append(append)


def qemu_opt(value: str | Path) -> str:
    """A path as the value of a QEMU option list (``-drive file=...,format=...``): a comma
    separates options there, a doubled one is a comma (the cache or temporary folder is the
    user's, any name)."""
    return str(value).replace(",", ",,")


def qemu_command(tf: TargetFiles, monitor: str, cmdline: KernelCmdline | None = None, flash: str | None = None,
                 initramfs: Path | None = None, rootfs: Path | None = None,
                 collect_disk: Path | None = None, deterministic: bool = False, direct: bool = False) -> list[str]:
    """The QEMU command line: paused (-S), serial on stdout, a monitor socket to release it.

    ``cmdline``: the kernel's (default: the target's own, :func:`kernel_cmdline`). A root
    filesystem image (``rootfs``, else the target's own) is attached with ``snapshot=on``: the
    guest's writes (journal, random seed) are dropped, every boot starts from the same image.
    The network is QEMU's user net restricted to the guest and its DHCP server;
    ``collect_disk`` is a second disk for the collector (target_systemd). ``deterministic``:
    QEMU counts instructions for the guest's clocks (:data:`.guestclock.ICOUNT`). ``direct``: no
    firmware (U-Boot): QEMU starts the kernel itself, as U-Boot's falcon mode has SPL do on a board.
    """
    s = tf.spec
    kernel_args = (cmdline if cmdline is not None else kernel_cmdline(tf)).text()
    cmd = [s.qemu, *s.machine, "-display", "none", "-no-reboot", "-S", "-serial", "stdio",
           "-monitor", f"unix:{qemu_opt(monitor)},server,nowait", "-kernel", str(tf.kernel),
           "-initrd", str(initramfs or tf.initramfs), "-append", kernel_args]
    if s.firmware and not direct:
        cmd[1:1] = ["-bios", s.firmware]
    if deterministic:
        from .guestclock import ICOUNT

        cmd[1:1] = list(ICOUNT)
    if flash:
        cmd += ["-drive", f"if=pflash,format=raw,unit=1,file={qemu_opt(flash)}"]
    if tf.rootfs is not None:
        cmd += ["-drive", f"file={qemu_opt(rootfs or tf.rootfs)},format=raw,if=virtio,snapshot=on",
                "-netdev", "user,id=n0,restrict=on", "-device", "virtio-net-pci,netdev=n0"]
        if collect_disk is not None:
            cmd += ["-drive", f"file={qemu_opt(collect_disk)},format=raw,if=virtio"]
    return cmd


def check_deterministic(tf: TargetFiles) -> None:
    """Refuse the deterministic mode where it cannot read the guest's clock (TargetError)."""
    if tf.spec.debian_arch != "arm64" or tf.rootfs is not None:
        raise TargetError(f"{tf.spec.name}: --deterministic is for qemu-arm64 (its guest clock reader is an "
                          "AArch64 program for the busybox initramfs)")


def boot(tf: TargetFiles, out: str, cmdline: KernelCmdline | None = None, timeout_s: float = 180.0,
         uboot_env: dict[str, str] | None = None, overlay: Path | None = None, baud: int | None = None,
         ready: str = READY_MARKER, collect: Path | None = None, trace: TracePlan | None = None,
         deterministic: bool = False, direct: bool = False) -> CaptureResult:
    """Boot once and capture the console from power-on into the recording ``out``, until a line
    matches ``ready`` (QEMU is stopped then), the target powers off or ``timeout_s`` passes;
    ``cmdline`` is the kernel's (default: the target's own, :func:`kernel_cmdline`);
    ``baud`` reads the console no faster than a serial line at that rate (ThrottledSource);
    ``uboot_env`` overrides variables of U-Boot's default environment (e.g. bootdelay=0),
    ``overlay`` is laid over the initramfs (or over a cached copy of the root filesystem
    image). ``collect`` (a target booting an image): the guest's collector runs after the app,
    the capture goes on until the guest powers off, and what it wrote (systemd-analyze,
    journalctl outputs) is unpacked into that directory. ``trace`` (busybox targets):
    boot-time ftrace on the command line; the capture goes on past the ready line until the
    guest has dumped its trace buffer, which is split out of the recording into ``out``'s
    ``.trace.txt`` sibling (:mod:`bootlens.targets.tracerun`). ``deterministic`` (qemu-arm64):
    QEMU's ``-icount``, and the guest reads its reset-based counter just before the ready line
    (:mod:`bootlens.targets.guestclock`): the boot is read on the guest's clocks, which the
    host's load does not move. ``direct``: QEMU starts the kernel with no U-Boot in between."""
    if cmdline is None:
        cmdline = kernel_cmdline(tf)
    if trace is not None:
        from .tracerun import check_trace

        check_trace(tf, trace, cmdline)
    if collect is not None and tf.rootfs is None:
        raise TargetError(f"{tf.spec.name} has no collector: collection is for targets booting systemd")
    if shutil.which(tf.spec.qemu) is None:
        raise TargetError(f"{tf.spec.qemu} not found: install {' '.join(tf.spec.apt_packages)}")
    if tf.spec.firmware and not os.path.exists(tf.spec.firmware):
        raise TargetError(f"{tf.spec.firmware} not found: install u-boot-qemu")
    if deterministic:
        check_deterministic(tf)
    with tempfile.TemporaryDirectory(prefix="bootlens-") as tmp:
        monitor = os.path.join(tmp, "monitor.sock")
        flash = None
        if uboot_env:
            flash = os.path.join(tmp, "flash1.img")
            flash_image(tf, uboot_env, flash)
        initramfs = rootfs = disk = None
        if deterministic:
            from .guestclock import write_overlay as clock_overlay

            overlay = clock_overlay(Path(tmp) / "clock-overlay", overlay)
        if trace is not None:
            from .tracerun import end_pattern, write_overlay

            cmdline = cmdline.append_own(trace.kernel_args)
            overlay = write_overlay(Path(tmp) / "trace-overlay", overlay, APP.encode())
            ready = end_pattern()  # the capture ends after the dump, the analysis still at ready
        if overlay is not None and tf.rootfs is not None:
            from .qemu_systemd import overlay_image

            rootfs = overlay_image(tf, overlay)
        elif overlay is not None:
            initramfs = Path(tmp) / "initramfs.cpio.gz"
            initramfs.write_bytes(build_initramfs((tf.initramfs.parent / "busybox").read_bytes(), overlay))
        if collect is not None:
            from .qemu_systemd import COLLECT_ARG, collect_disk

            disk = Path(tmp) / "collect.img"
            collect_disk(disk)
            cmdline = cmdline.append_own(COLLECT_ARG)
        source: Source = CommandSource(qemu_command(tf, monitor, cmdline, None if direct else flash, initramfs,
                                                    rootfs, disk, deterministic, direct))
        if baud:
            source = ThrottledSource(source, baud)

        def release() -> None:
            _monitor_command(monitor, b"cont\n")

        # collecting, the capture runs on past the ready line until the guest powers off
        result = stop_if_interrupted(capture(source, out, origin="power_on", quit_pattern=None if disk else ready,
                                             end_s=timeout_s, on_ready=release, echo=None))
        if disk is not None and collect is not None:
            from .qemu_systemd import read_collection

            read_collection(disk, collect)
        if trace is not None:
            from ..capture.trace_dump import save_dump

            save_dump(Path(out))
        return result


class QemuTarget(Target):
    """A reference target (:data:`TARGETS`) under QEMU, a fresh QEMU each boot: bootlens builds
    its kernel command line (``cmdline``: the product's own, a configuration's arguments are
    appended), U-Boot's environment image and its root filesystem (initramfs, or an overlay of
    the image) itself. ``baud`` reads the console no faster than a serial line at that rate."""

    takes = frozenset({"deterministic"})

    def __init__(self, files: TargetFiles, cmdline: KernelCmdline | None = None, ready: str = READY_MARKER,
                 timeout_s: float = 300.0, baud: int | None = None, deterministic: bool = False) -> None:
        if deterministic:
            check_deterministic(files)
        self.files, self.deterministic = files, deterministic
        self.name = files.spec.name
        self.cmdline = cmdline if cmdline is not None else kernel_cmdline(files)
        self.ready, self.timeout_s, self.baud = ready, timeout_s, baud
        self.rate_limited = baud is not None  # QEMU's UART is infinitely fast unless throttled to a line's rate
        env = (UBOOT_ENV,) if files.spec.env_size and files.spec.firmware else ()
        # a kernel bootlens builds: arm64 (the cross compiler), busybox initramfs (no modules to match)
        kernel = (KERNEL,) if files.spec.debian_arch == "arm64" and files.rootfs is None else ()
        direct = (BOOTLOADER,) if files.spec.firmware else ()
        self.can_change = frozenset((CMDLINE, OVERLAY, *env, *kernel, *direct,
                                     *((TRACE,) if files.rootfs is None else ())))

    @classmethod
    def from_options(cls, opts: TargetOptions) -> QemuTarget:
        """The reference target, set up first when it is not (downloads, builds: see :func:`setup`)."""
        KernelCmdline().replacing(opts.cmdline).append(opts.append)  # refused before minutes of setup
        tf = setup(opts.name)
        return cls(tf, kernel_cmdline(tf, opts.cmdline, opts.append), opts.ready, opts.timeout_s, opts.baud,
                   opts.deterministic)

    @classmethod
    def refusal(cls, name: str) -> str:
        return f"{name} is a reference target (bootlens boots it itself)"

    def meta(self, config: BootConfig) -> dict[str, object]:
        m = super().meta(config)
        m.update(append=self.cmdline.append(config.kernel_args).appended, cmdline=self.cmdline.user_base)
        if self.deterministic:  # read on the guest's clocks (capture.run_folder.run_options)
            from .guestclock import ICOUNT

            m.update(clock="guest", qemu=" ".join(ICOUNT))
        return m

    def check(self, config: BootConfig) -> None:
        super().check(config)
        if config.trace is not None:
            from .tracerun import check_trace

            check_trace(self.files, config.trace, self.cmdline.append(config.kernel_args))

    def cannot(self, what: str, config: BootConfig) -> BootlensError:
        if what == UBOOT_ENV:
            return TargetError(f"{config.name + ': ' if config.name else ''}{self.name} has no U-Boot environment to "
                               "change")
        if what == TRACE:
            from .tracerun import not_traceable

            return not_traceable(self.files)
        return super().cannot(what, config)

    def default_bootdelay(self) -> str | None:
        fw = self.files.spec.firmware
        if not fw or not self.files.spec.env_size:
            return None
        try:
            return default_uboot_env(Path(fw).read_bytes()).get("bootdelay", "2")
        except (OSError, TargetError):
            return "2"  # U-Boot's CONFIG_BOOTDELAY default

    def known_files(self) -> dict[str, bytes]:
        return rootfs_files(self.name)

    def build_kernel(self, lines: tuple[str, ...]) -> Built:
        from ..kbuild.build import build

        return build(lines, self.files.config, self.files.spec.debian_arch)

    def kernel_config(self) -> Path | None:
        return self.files.config

    def initramfs_head(self) -> bytes:
        with open(self.files.initramfs, "rb") as f:
            return f.read(16)

    def host_clock(self) -> QemuTarget | None:
        if not self.deterministic:
            return None
        return QemuTarget(self.files, self.cmdline, self.ready, self.timeout_s, self.baud)

    def boot(self, config: BootConfig, out: Path) -> None:
        tf = self.files if config.kernel is None else replace(self.files, kernel=config.kernel)
        boot(tf, str(out), self.cmdline.append(config.kernel_args), self.timeout_s,
             uboot_env=dict(config.uboot_env) or None, overlay=config.overlay, baud=self.baud, ready=self.ready,
             trace=config.trace, deterministic=self.deterministic, direct=config.direct)


def _monitor_command(path: str, command: bytes, wait_s: float = 10.0) -> None:
    """Send one command to QEMU's human monitor on a unix socket, waiting for it to appear.

    The monitor drops input sent before it has printed its greeting, so read up to the first
    "(qemu) " prompt, send, and wait for the next prompt (the command has run by then).
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sk:
                sk.settimeout(wait_s)
                sk.connect(path)
                _read_until(sk, b"(qemu) ")
                sk.sendall(command)
                _read_until(sk, b"(qemu) ")
                return
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                raise TargetError("QEMU's monitor did not come up") from None
            time.sleep(0.005)
        except OSError as e:
            raise TargetError(f"QEMU's monitor: {e}") from None


def _read_until(sk: socket.socket, marker: bytes) -> None:
    buf = b""
    while marker not in buf:
        data = sk.recv(4096)
        if not data:
            raise TargetError("QEMU's monitor closed the connection")
        buf += data


for _name in TARGETS:  # the reference targets, one name each
    REGISTRY.register(TargetName(_name, QemuTarget))
