"""Bootchart archives: what busybox ``bootchartd``, the original bootchart 0.8 logger and
bootchart2's collector write (``bootlog.tgz``, ``bootchart.tgz`` or the directory they were
unpacked to).

An archive holds ``header`` ("key = value" lines: the kernel's uname, its command line, the
CPU), ``proc_stat.log``, ``proc_ps.log`` and ``proc_diskstats.log`` (copies of /proc/stat,
/proc/[pid]/stat and /proc/diskstats taken every sample), and with bootchart2's collector an
optional ``taskstats.log``. Each log is a run of blocks separated by an empty line; a block
starts with the uptime in centiseconds (/proc/uptime times 100) on a line of its own.

Every time here is on the uptime clock (:attr:`bootlens.core.model.Clock.UPTIME`), in ns. A process
is first seen at its start time (field 22 of /proc/[pid]/stat, in clock ticks: USER_HZ is 100
on every Linux architecture user space sees) when that is before its first sample.

Nothing here raises on bad input: an unreadable archive, a missing log or a block that is not
understood becomes a warning with a count. Every number goes through
:class:`bootlens.core.numbers.Tally`, bounded to what the kernel writes there (an uptime or a CPU
time past 2**60 ns, a pid past PID_MAX_LIMIT, a sector count past 2**48 bytes is not used, and
counted): a damaged log's digit run must not become a time no reader can hold.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ...core.model import Clock
from ...core.numbers import BYTES_MAX, NS_PER_MS, PID_MAX, TIME_NS_MAX, Tally
# the sniff lives apart: sniffing a log must not import this reader (start-up)
from . import sniff_bootchart as sniff_bootchart

CS_NS = 10_000_000  # one centisecond (and one USER_HZ clock tick) in ns
SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's own sector size
TICKS_MAX = TIME_NS_MAX // CS_NS  # an uptime or CPU time in centiseconds (USER_HZ ticks)
LOGS = ("header", "proc_stat.log", "proc_ps.log", "proc_diskstats.log", "taskstats.log")
# Whole disks, not partitions: the regex pybootchartgui uses, plus nvme and virtio/xen disks.
_DISK = re.compile(r"^(?:[hsv]d[a-z]+|xvd[a-z]+|mtdblock\d+|mmcblk\d+|nvme\d+n\d+|cciss/c\d+d\d+|ubi\d+_\d+)$")


@dataclass(frozen=True, slots=True)
class BootchartProcess:
    """One process (or kernel thread) seen in proc_ps.log or taskstats.log."""

    pid: int
    ppid: int
    comm: str  # the last name seen (an exec renames it)
    first_ns: int  # uptime when it started (or was first sampled)
    last_ns: int  # uptime of the last sample that still showed it
    cpu_ns: int  # user + system CPU time at the last sample (taskstats: run time)
    samples: int


@dataclass(frozen=True, slots=True)
class CpuSample:
    """CPU use between the previous sample and this one, as fractions of all CPUs' time."""

    ns: int
    user: float  # user + nice
    sys: float  # system + irq + softirq
    io_wait: float


@dataclass(frozen=True, slots=True)
class DiskSample:
    """Whole-disk I/O between the previous sample and this one, summed over the disks."""

    ns: int
    read_bps: float  # bytes per second
    write_bps: float
    util: float  # fraction of the interval the busiest disk was doing I/O, 0..1


@dataclass(frozen=True, slots=True)
class Bootchart:
    """A bootchart archive, read."""

    source: str
    header: tuple[tuple[str, str], ...]  # ("system.uname", "Linux 2.6.27 ..."), in file order
    processes: tuple[BootchartProcess, ...]
    cpu: tuple[CpuSample, ...]
    disk: tuple[DiskSample, ...]
    collector: str  # "bootchart2" (taskstats.log present) or "bootchartd" (busybox / 0.8 logger)
    clock: Clock = Clock.UPTIME
    warnings: tuple[str, ...] = ()

    def fact(self, key: str) -> str | None:
        """A header value ("system.uname", "system.kernel.options", "system.cpu", ...)."""
        for k, v in self.header:
            if k == key:
                return v
        return None

    @property
    def kernel_version(self) -> str | None:
        """The release from "system.uname" ("Linux 2.6.27-10-generic #1 SMP ..." -> "2.6.27-10-generic")."""
        uname = self.fact("system.uname")
        parts = uname.split() if uname else []
        return parts[1] if len(parts) > 1 else None

    @property
    def cmdline(self) -> str | None:
        """The kernel command line the boot was charted with."""
        v = self.fact("system.kernel.options")
        return v.strip() if v is not None else None


# ------------------------------------------------------------------------------------- reading

def _members(path: Path, notes: list[str]) -> dict[str, bytes]:
    """The archive's logs by base name, from a tar(.gz) or a directory."""
    import tarfile  # here, as in sniff_bootchart: tarfile (shutil, bz2, lzma) costs start-up

    found: dict[str, bytes] = {}
    try:
        if path.is_dir():
            for name in LOGS:
                p = path / name
                if p.is_file():
                    found[name] = p.read_bytes()
            return found
        with tarfile.open(path, "r:*") as tar:  # gzip, bzip2, xz or plain: tarfile sniffs it
            for m in tar:
                base = m.name.rsplit("/", 1)[-1]
                if m.isfile() and base in LOGS and base not in found:
                    f = tar.extractfile(m)
                    if f is not None:
                        found[base] = f.read()
    except (OSError, tarfile.TarError, EOFError) as e:
        notes.append(f"{path}: not a readable bootchart archive ({e})")
    return found


def _blocks(data: bytes, what: str, notes: list[str], tally: Tally) -> Iterator[tuple[int, list[str]]]:
    """(uptime in cs, lines) per block, in one pass; a block whose first line is no integer is
    counted and skipped (a torn last block when the logger was killed mid-write, or junk), and so
    is one whose uptime is out of range (counted by ``tally``)."""
    bad = 0
    for block in _split_blocks(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")):
        head = block[0]
        if not head.isascii() or not head.isdigit():
            bad += 1
            continue
        t = tally.take(head, TICKS_MAX, field="uptime")
        if t is not None:
            yield t, block[1:]
    if bad:
        notes.append(f"{what}: {bad} block{'s' if bad != 1 else ''} without an uptime skipped")


def _split_blocks(lines: Iterable[str]) -> Iterator[list[str]]:
    block: list[str] = []
    for raw in lines:
        line = raw.strip()
        if line:
            block.append(line)
        elif block:
            yield block
            block = []
    if block:
        yield block


def _header(data: bytes) -> tuple[tuple[str, str], ...]:
    """"key = value" lines; a line without "=" continues the previous value (bootchart 0.8
    writes "system.cpu = model name : ..." over two lines on SMP machines)."""
    out: list[list[str]] = []
    for line in data.decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and " " not in key.strip():
            out.append([key.strip(), value.strip()])
        elif out and line.strip():
            out[-1][1] = (out[-1][1] + " " + line.strip()).strip()
    return tuple((k, v) for k, v in out)


def _cpu(data: bytes, notes: list[str], tally: Tally) -> list[CpuSample]:
    samples: list[CpuSample] = []
    last: list[int] | None = None
    bad = 0
    for t, lines in _blocks(data, "proc_stat.log", notes, tally):
        tokens = lines[0].split() if lines else []
        if len(tokens) < 6 or tokens[0] != "cpu" or not all(x.isascii() and x.isdigit() for x in tokens[1:8]):
            bad += 1
            continue
        got = [tally.take(x, TICKS_MAX, field="CPU time") for x in tokens[1:8]]
        if None in got:
            continue
        v = [x for x in got if x is not None] + [0] * max(0, 8 - len(tokens))
        if last is not None:
            user = (v[0] + v[1]) - (last[0] + last[1])
            sys_ = (v[2] + v[5] + v[6]) - (last[2] + last[5] + last[6])
            idle, iow = v[3] - last[3], v[4] - last[4]
            total = max(user + sys_ + idle + iow, 1)
            samples.append(CpuSample(t * CS_NS, user / total, sys_ / total, iow / total))
        last = v
    if bad:
        notes.append(f"proc_stat.log: {bad} block{'s' if bad != 1 else ''} without a cpu line")
    return samples


def _disk(data: bytes, notes: list[str], tally: Tally) -> list[DiskSample]:
    samples: list[DiskSample] = []
    last: tuple[int, dict[str, tuple[int, int, int]]] | None = None
    for t, lines in _blocks(data, "proc_diskstats.log", notes, tally):
        disks: dict[str, tuple[int, int, int]] = {}
        for line in lines:
            tok = line.split()
            if len(tok) >= 13 and _DISK.match(tok[2]) and all(tok[k].isascii() and tok[k].isdigit()
                                                               for k in (5, 9, 12)):
                # sectors read, sectors written, ms doing I/O
                rd = tally.take(tok[5], BYTES_MAX // SECTOR, field="sector count")
                wr = tally.take(tok[9], BYTES_MAX // SECTOR, field="sector count")
                io_ms = tally.take(tok[12], TIME_NS_MAX // NS_PER_MS, field="I/O time")
                if rd is not None and wr is not None and io_ms is not None:
                    disks[tok[2]] = (rd, wr, io_ms)
        if last is not None and t > last[0]:
            dt_s = (t - last[0]) / 100
            rd = wr = 0
            busy = 0
            for name, (r, w, io_ms) in disks.items():
                pr, pw, pio = last[1].get(name, (r, w, io_ms))
                rd, wr = rd + max(r - pr, 0), wr + max(w - pw, 0)
                busy = max(busy, io_ms - pio)
            util = min(max(busy / 1000 / dt_s, 0.0), 1.0)
            samples.append(DiskSample(t * CS_NS, rd * SECTOR / dt_s, wr * SECTOR / dt_s, util))
        last = (t, disks)
    return samples


class _Proc:
    """A process being accumulated (mutable; frozen into BootchartProcess at the end)."""

    __slots__ = ("pid", "ppid", "comm", "first", "last", "cpu", "n")

    def __init__(self, pid: int, ppid: int, comm: str, first: int) -> None:
        self.pid, self.ppid, self.comm, self.first, self.last, self.cpu, self.n = pid, ppid, comm, first, first, 0, 0


def _ps(data: bytes, notes: list[str], tally: Tally) -> dict[int, _Proc]:
    procs: dict[int, _Proc] = {}
    bad = 0
    for t, lines in _blocks(data, "proc_ps.log", notes, tally):
        for line in lines:
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split at the
            # last ")" as the kernel's own readers do.
            head, paren, rest = line.rpartition(")")
            pid_s, _, comm = head.partition(" (")
            f = rest.split()
            if not paren or not comm or len(f) < 20 or not all(
                    x.isascii() and x.isdigit() for x in (pid_s.strip(), f[1], f[11], f[12], f[19])):
                bad += 1
                continue
            pid, ppid = tally.take(pid_s.strip(), PID_MAX, field="pid"), tally.take(f[1], PID_MAX, field="pid")
            utime = tally.take(f[11], TICKS_MAX, field="CPU time")
            stime = tally.take(f[12], TICKS_MAX, field="CPU time")
            start = tally.take(f[19], TICKS_MAX, field="start time")
            if pid is None or ppid is None or utime is None or stime is None or start is None:
                continue
            p = procs.get(pid)
            if p is None:
                p = procs[pid] = _Proc(pid, ppid, comm, min(t, start) * CS_NS)
            p.comm, p.ppid, p.last, p.cpu, p.n = comm, ppid, t * CS_NS, (utime + stime) * CS_NS, p.n + 1
    if bad:
        notes.append(f"proc_ps.log: {bad} line{'s' if bad != 1 else ''} not understood")
    return procs


def _taskstats(data: bytes, procs: dict[int, _Proc], notes: list[str], tally: Tally) -> None:
    """bootchart2's taskstats.log: "pid ppid (comm) cpu_run_ns blkio_delay_ns swapin_delay_ns"
    per process and sample; its CPU time is exact where /proc's is in ticks, so it wins."""
    bad = 0
    for t, lines in _blocks(data, "taskstats.log", notes, tally):
        for line in lines:
            f = line.split()
            if len(f) != 6 or not all(x.isascii() and x.isdigit() for x in (f[0], f[1], f[3])):
                bad += 1
                continue
            pid, ppid = tally.take(f[0], PID_MAX, field="pid"), tally.take(f[1], PID_MAX, field="pid")
            cpu = tally.take(f[3], TIME_NS_MAX, field="CPU time")
            if pid is None or ppid is None or cpu is None:
                continue
            comm = f[2].strip("()")
            p = procs.get(pid)
            if p is None:
                p = procs[pid] = _Proc(pid, ppid, comm, t * CS_NS)
            p.comm, p.ppid, p.last, p.cpu, p.n = comm, ppid, t * CS_NS, cpu, p.n + 1
    if bad:
        notes.append(f"taskstats.log: {bad} line{'s' if bad != 1 else ''} not understood")


def read_bootchart(path: str | Path) -> Bootchart:
    """Read a bootchart archive (``.tgz``/``.tar`` or its unpacked directory); never raises."""
    p = Path(path)
    notes: list[str] = []
    files = _members(p, notes)
    if not notes:  # an unreadable archive has said so already
        notes.extend(f"{p}: no {name}" for name in LOGS[:4] if name not in files)
    tally = Tally("bootchart")
    procs = _ps(files["proc_ps.log"], notes, tally) if "proc_ps.log" in files else {}
    if "taskstats.log" in files:
        _taskstats(files["taskstats.log"], procs, notes, tally)
    processes = tuple(BootchartProcess(q.pid, q.ppid, q.comm, q.first, q.last, q.cpu, q.n)
                      for q in sorted(procs.values(), key=lambda q: (q.first, q.pid)))
    cpu = tuple(_cpu(files["proc_stat.log"], notes, tally)) if "proc_stat.log" in files else ()
    disk = tuple(_disk(files["proc_diskstats.log"], notes, tally)) if "proc_diskstats.log" in files else ()
    return Bootchart(str(path), _header(files.get("header", b"")), processes, cpu, disk,
                     "bootchart2" if "taskstats.log" in files else "bootchartd", Clock.UPTIME,
                     (*notes, *tally.warnings()))
