"""What a side file says beside what bootlens measured for the same boot: systemd-analyze
time's figures and blame's durations against bootlens's, the two critical chains, and a
bootchart's samples on the boot's axis. Read by the renderers; a boot without supplements never
imports it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .analyze import BootAnalysis
from ..core.model import NS_PER_MS, Boot, Clock, Kind, Milestone, UnitDetail, unit_text

# blame agreement: within 10 % or 50 ms (issue 12's "done when"), for units over 100 ms
TOLERANCE = 0.10
SLACK_NS = 50 * NS_PER_MS
SIGNIFICANT_NS = 100 * NS_PER_MS

@dataclass(frozen=True, slots=True)
class TimeRow:
    """One of systemd-analyze time's figures beside bootlens's for the same stretch."""

    name: str  # "firmware", "loader", "kernel", "initrd", "userspace", "total"
    systemd_ns: int
    bootlens_ns: int | None  # None: not measured by bootlens
    how: str  # what bootlens's figure spans


def _milestone(b: BootAnalysis, name: str) -> int | None:
    for e, t in zip(b.boot.events, b.times):
        if e.kind is Kind.MILESTONE and e.name == name and t is not None:
            return t
    return None


def time_rows(b: BootAnalysis) -> list[TimeRow]:
    """systemd-analyze time's figures, each with bootlens's own for the same stretch: kernel from
    the kernel clock's 0 to the root's systemd start (to ``Run /init`` when systemd ran in the
    initrd), initrd from there to the root's systemd, userspace from systemd's start to
    ``Startup finished``."""
    sup = b.supplement
    st = sup.startup if sup is not None else None
    if st is None:
        return []
    k0 = b.alignment.offsets.get(Clock.KERNEL)
    sd = _milestone(b, Milestone.SYSTEMD_START)
    fin = _milestone(b, Milestone.STARTUP_FINISHED)
    run_init = _milestone(b, Milestone.RUN_INIT)
    stages = {s.name: s for s in b.stages}
    rows: list[TimeRow] = []

    def span(a: int | None, z: int | None) -> int | None:
        return None if a is None or z is None else z - a

    for name, ns in (("firmware", st.firmware_ns), ("loader", st.loader_ns)):
        if ns is not None:
            s = stages.get("firmware" if name == "firmware" else "bootloader")
            rows.append(TimeRow(name, ns, s.duration_ns if s is not None else None, f"bootlens {name} stage"))
    if st.kernel_ns is not None:
        if st.initrd_ns is not None:
            rows.append(TimeRow("kernel", st.kernel_ns, span(k0, run_init), "kernel clock 0 to Run /init"))
        else:
            rows.append(TimeRow("kernel", st.kernel_ns, span(k0, sd), "kernel clock 0 to systemd's start"))
    if st.initrd_ns is not None:
        rows.append(TimeRow("initrd", st.initrd_ns, span(run_init, sd), "Run /init to the root's systemd"))
    if st.userspace_ns is not None:
        # the systemd stage where it runs to Startup finished (a boot of systemd's own figures ends
        # it at the printed parts' sum, its milestone at the printed total: timeline.analyze)
        s = stages.get("systemd")
        ours = s.duration_ns if s is not None and s.end is not None and s.end.what == Milestone.STARTUP_FINISHED \
            else span(sd, fin)
        rows.append(TimeRow("userspace", st.userspace_ns, ours, "systemd's start to Startup finished"))
    return rows


@dataclass(frozen=True, slots=True)
class BlameRow:
    """A unit of systemd-analyze blame and bootlens's duration of its start job."""

    unit: str
    blame_ns: int
    bootlens_ns: int | None  # None: bootlens has no finished start job of this unit
    line_no: int | None  # where bootlens's job starts

    @property
    def within(self) -> bool:
        """Within 10 % or 50 ms of blame."""
        if self.bootlens_ns is None:
            return False
        return abs(self.bootlens_ns - self.blame_ns) <= max(SLACK_NS, int(TOLERANCE * self.blame_ns))


@dataclass(frozen=True, slots=True)
class BlameCheck:
    """Every blame row with bootlens's figure; counts over the units over 100 ms too."""

    rows: tuple[BlameRow, ...]

    @property
    def matched(self) -> int:
        """Rows bootlens has a figure for."""
        return sum(1 for r in self.rows if r.bootlens_ns is not None)

    @property
    def within(self) -> int:
        """Rows within 10 % or 50 ms."""
        return sum(1 for r in self.rows if r.within)

    def significant(self) -> tuple[int, int]:
        """(within, of) for the units blame puts over 100 ms."""
        big = [r for r in self.rows if r.blame_ns > SIGNIFICANT_NS]
        return sum(1 for r in big if r.within), len(big)

    def worst(self, n: int = 3) -> list[BlameRow]:
        """The n rows furthest from blame among those bootlens measured, furthest first."""
        off = [r for r in self.rows if r.bootlens_ns is not None and not r.within]
        return sorted(off, key=lambda r: -abs((r.bootlens_ns or 0) - r.blame_ns))[:n]


def unit_durations(boot: Boot, known: Sequence[str] = ()) -> Mapping[str, tuple[int, int]]:
    """Unit file name -> (duration, line) of its last finished start job (blame reports a unit's
    last activation); a name cut at 80 columns is the one unit of ``known`` it begins."""
    from ..sources.systemd_analyze.deps import Deps

    names = Deps({}, descriptions={u: "" for u in known})
    out: dict[str, tuple[int, int]] = {}
    for e in boot.events:
        if e.kind is not Kind.UNIT or e.duration_ns is None:
            continue
        det = e.detail if isinstance(e.detail, UnitDetail) else None
        name = det.unit if det is not None and det.unit else e.name
        out[name if name in names.descriptions else names.resolve(unit_text(name, det)) or name] = (
            e.duration_ns, e.line_no)
    return out


def blame_check(b: BootAnalysis) -> BlameCheck | None:
    """bootlens's unit durations against systemd-analyze blame, in blame's order."""
    sup = b.supplement
    if sup is None or sup.blame is None or not sup.blame.rows:
        return None
    ours = unit_durations(b.boot, [r.unit for r in sup.blame.rows])
    rows = []
    for r in sup.blame.rows:
        got = ours.get(r.unit)
        rows.append(BlameRow(r.unit, r.ns, got[0] if got else None, got[1] if got else None))
    return BlameCheck(tuple(rows))


def chain_agreement(theirs: Sequence[str], ours: Sequence[str]) -> tuple[int, str]:
    """How far systemd-analyze's chain (unit names, top first) and bootlens's agree: the number
    of units in a row both name, from the first of systemd's that bootlens's holds, and a
    sentence ("the same 12 units, in order" or where they part)."""
    start = next(((j, ours.index(u)) for j, u in enumerate(theirs) if u in ours), None)
    if start is None:
        return 0, "no unit in common"
    j, i = start
    n = 0
    while j + n < len(theirs) and i + n < len(ours) and theirs[j + n] == ours[i + n]:
        n += 1
    top = ", ".join(theirs[:j]) if j <= 3 else f"{theirs[0]} and {j - 1} more"
    skipped = f" (below systemd's top {top})" if j else ""
    if j + n == len(theirs) or i + n == len(ours):
        return n, f"the same {n} unit{'s' if n != 1 else ''}, in order, from {theirs[j]}{skipped}"
    return n, (f"the same {n} from {theirs[j]}{skipped}, then systemd-analyze has {theirs[j + n]} where "
               f"bootlens has {ours[i + n]}")


def userspace_start(b: BootAnalysis) -> int | None:
    """Where systemd-analyze's user space starts on the boot's axis (its chain's "@" counts from
    there): the root's systemd start."""
    return _milestone(b, Milestone.SYSTEMD_START)


@dataclass(frozen=True, slots=True)
class Samples:
    """A bootchart's CPU and disk samples on the boot's axis, for the report's panel."""

    t_ns: tuple[int, ...] = ()
    user: tuple[float, ...] = ()
    sys: tuple[float, ...] = ()
    io_wait: tuple[float, ...] = ()
    disk_t_ns: tuple[int, ...] = ()
    read_bps: tuple[float, ...] = ()
    write_bps: tuple[float, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def samples(b: BootAnalysis) -> Samples | None:
    """The bootchart's samples moved onto the boot's axis through the uptime clock's offset
    (approximate, as align says), or None when the boot has no bootchart or no samples."""
    sup = b.supplement
    bc = sup.bootchart if sup is not None else None
    if bc is None or not (bc.cpu or bc.disk):
        return None
    off = b.alignment.offsets.get(Clock.UPTIME)
    if off is None:
        return None
    return Samples(tuple(s.ns + off for s in bc.cpu), tuple(s.user for s in bc.cpu), tuple(s.sys for s in bc.cpu),
                   tuple(s.io_wait for s in bc.cpu), tuple(s.ns + off for s in bc.disk),
                   tuple(s.read_bps for s in bc.disk), tuple(s.write_bps for s in bc.disk))
