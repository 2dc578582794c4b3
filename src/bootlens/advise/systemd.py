"""What the systemd rules share: the units a boot measured, the target's unit files, the
``After=`` map built from them, the critical chain to ready and the changes systemd takes.

Units are the boot's ``Kind.UNIT`` events (activating -> active, on the boot's axis). The unit
files come from the rule context (``rootfs_files``: a reference target's /etc/systemd and
/usr/lib/systemd/system); from them :func:`after_map` builds what ``systemd-analyze dump`` would
say of ordering: each unit's ``After=``, the ``Before=`` of others turned round, and systemd's
default dependencies (a service after ``basic.target``, a target after what it wants, a unit
with ``StandardOutput=journal`` after ``systemd-journald.socket``). With it the chain is
systemd-analyze's walk; without unit files it is chain.py's estimate, which says it is one.

A saving "on the chain" is the chain time a link accounts for: its activation time minus the
activation time of the link below it. Removing the unit removes that time from the chain at
most (another dependency may take its place), hence the MEDIUM confidence of such figures.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..timeline.analyze import BootAnalysis
from ..timeline.chain import Chain, critical_chain
from ..sources.systemd_analyze.deps import Deps
from ..core.kindpos import located
from ..core.model import Kind, UnitDetail, unit_text
from ..core.units import duration
from .base import Change, ChangeKind, Context, Evidence
from .evidence import evidence, secs
from .userspace import ready_marker

UNIT_DIRS = ("etc/systemd/system", "run/systemd/system", "usr/lib/systemd/system", "lib/systemd/system")
FILE_MODE = 0o100644
SUFFIXES = (".service", ".socket", ".target", ".mount", ".timer", ".path", ".device", ".swap", ".slice", ".scope")
# systemd's descriptions of the units the rules name, for logs of boards whose unit files are not
# known (systemd 229-257 wording; the console and kmsg print the description before systemd 250)
KNOWN = {
    "Flush Journal to Persistent Storage": "systemd-journal-flush.service",
    "Load/Save Random Seed": "systemd-random-seed.service",
    "Load/Save OS Random Seed": "systemd-random-seed.service",
    "Wait for Network to be Configured": "systemd-networkd-wait-online.service",
    "Network Manager Wait Online": "NetworkManager-wait-online.service",
    "udev Wait for Complete Device Initialization": "systemd-udev-settle.service",
    "Wait for udev To Complete Device Initialization": "systemd-udev-settle.service",
    "File System Check on Root Device": "systemd-fsck-root.service",
    "Remove Stale Online ext4 Metadata Check Snapshots": "e2scrub_reap.service",
    "Daily man-db regeneration": "man-db.service",
    "Daily apt download activities": "apt-daily.service",
    "Daily apt upgrade and clean activities": "apt-daily-upgrade.service",
    "Discard unused blocks on filesystems from /etc/fstab": "fstrim.service",
    "Rotate log files": "logrotate.service",
    "Permit User Sessions": "systemd-user-sessions.service",
    "Login Prompts": "getty.target",
    "Multi-User System": "multi-user.target",
    "Journal Service": "systemd-journald.service",
}
_IDENT = re.compile(r"([\w@.:-]+?)(?:\[\d+\])?: ")  # "app[236]: APP READY": the syslog identifier


@dataclass(frozen=True, slots=True)
class UnitRun:
    """One unit's start job in this boot: activating at ``start_ns``, active at ``active_ns``."""

    name: str  # the unit's file name when the log gave it, else its description
    start_ns: int
    active_ns: int
    span: bool  # a start job with a duration (not an instant: a target reached, a socket)
    result: str
    line_no: int
    end_line_no: int

    @property
    def duration_ns(self) -> int:
        return self.active_ns - self.start_ns


def unit_runs(boot: BootAnalysis, uf: UnitFiles | None = None) -> list[UnitRun]:
    """The boot's unit events that can be placed on its axis, in log order; with unit files, a
    unit the log named by its description only gets its file name (:meth:`UnitFiles.resolve`)."""
    out: list[UnitRun] = []
    times = boot.times or ()
    evs = [(e, t) for i, e in located(boot.boot.events, Kind.UNIT) if i < len(times) and (t := times[i]) is not None]
    named = {d.unit for e, _ in evs if isinstance(d := e.detail, UnitDetail) and d.unit}
    for e, t in evs:
        assert t is not None
        det = e.detail if isinstance(e.detail, UnitDetail) else None
        name = det.unit if det is not None and det.unit else e.name
        if uf is not None and (det is None or not det.unit):
            name = uf.resolve(unit_text(name, det), named)
        out.append(UnitRun(name, t, t + (e.duration_ns or 0), e.duration_ns is not None,
                           det.result if det is not None else "", e.line_no, e.end_line_no or e.line_no))
    return out


def by_name(runs: Iterable[UnitRun]) -> dict[str, UnitRun]:
    """Name -> its last start job (a unit restarted during boot: the later one)."""
    return {r.name: r for r in runs}


def ready_ns(boot: BootAnalysis) -> tuple[int, int] | None:
    """(axis time, line) of the ready marker, or None."""
    m = ready_marker(boot)
    return (m[1], m[0].line_no) if m is not None else None


# --- unit files ----------------------------------------------------------------------------


UnitFile = dict[str, dict[str, list[str]]]  # section -> key -> values, in order


def parse_unit(text: str, into: UnitFile | None = None) -> UnitFile:
    """An INI-style unit file (or drop-in merged ``into`` one): continuation lines joined,
    comments dropped, an empty assignment resetting the key's list (systemd's rule)."""
    out: UnitFile = into if into is not None else {}
    section = ""
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            out.setdefault(section, {})
            continue
        key, eq, value = line.partition("=")
        if not eq:
            continue
        vals = out.setdefault(section, {}).setdefault(key.strip(), [])
        if value.strip():
            vals.append(value.strip())
        else:
            vals.clear()
    return out


@dataclass(frozen=True, slots=True)
class UnitFiles:
    """The unit files a target ships: name -> parsed file (drop-ins merged), and where it lives;
    ``wants``: target -> units enabled into it (``.wants/``/``.requires/`` symlinks);
    ``masked``: units linked to /dev/null."""

    units: Mapping[str, UnitFile]
    paths: Mapping[str, str]  # name -> path in the root filesystem (the file that wins)
    texts: Mapping[str, str]
    wants: Mapping[str, frozenset[str]] = field(default_factory=dict)
    masked: frozenset[str] = frozenset()

    def description(self, unit: str) -> str | None:
        """Its Description=, a template's %i/%I filled in from the instance name."""
        d = self.value(unit, "Unit", "Description")
        m = re.fullmatch(r"[^@]+@([^.]*)\.\w+", unit)
        if d is not None and m:
            d = d.replace("%I", m[1]).replace("%i", m[1])
        return d

    def resolve(self, name: str, instances: Iterable[str] = ()) -> str:
        """A unit's file name for a name the console gave: a description ("Permit User
        Sessions"), or systemd's 80-column cut "systemd-networkd-…Wait for Network to be
        Configured" (chain.Deps.resolve, over the unit files' descriptions, else systemd's own
        for the units the rules name); a template's instance by its description ("Serial Getty
        on ttyS0"); ``name`` itself when none fits."""
        if name.endswith(SUFFIXES) and "…" not in name:
            return name
        descs = {u: self.description(u) or "" for u in dict.fromkeys([*self.units, *instances]) if "@." not in u}
        found = Deps({}, descriptions=descs or {u: d for d, u in KNOWN.items()}).resolve(name)
        if found is not None:
            return found
        hits: set[str] = set()
        # a name the console cut keeps its whole description after " - " ("serial-getty@ttyS0…rvice
        # - Serial Getty on ttyS0"): the instance is found by it and must begin like the name
        head, cut, rest = name.partition("…")
        desc = rest.partition(" - ")[2] if cut else name
        for u in self.units:  # a template's instance the log never named
            d = self.value(u, "Unit", "Description")
            if "@." in u and d and ("%I" in d or "%i" in d) and (not cut or head.startswith(u.split("@")[0] + "@")):
                pat = re.escape(d).replace("%I", "(.+)").replace("%i", "(.+)")
                if m := re.fullmatch(pat, desc):
                    hits.add(u.replace("@.", f"@{m[1]}."))
        return hits.pop() if len(hits) == 1 else name

    def get(self, unit: str) -> UnitFile | None:
        """A unit's file; a template instance (serial-getty@ttyS0.service) reads its template's."""
        if unit in self.units:
            return self.units[unit]
        m = re.fullmatch(r"([^@]+@)[^.]*(\.\w+)", unit)
        return self.units.get(m[1] + m[2]) if m else None

    def values(self, unit: str, section: str, key: str) -> list[str]:
        """Every value of ``key`` (space-separated lists split)."""
        f = self.get(unit)
        vals = f.get(section, {}).get(key, []) if f is not None else []
        return [w for v in vals for w in v.split()]

    def value(self, unit: str, section: str, key: str) -> str | None:
        f = self.get(unit)
        vals = f.get(section, {}).get(key, []) if f is not None else []
        return vals[-1] if vals else None


def unit_files(files: Mapping[str, bytes], links: Mapping[str, str] | None = None) -> UnitFiles:
    """The unit files among ``files`` (rule context): /etc over /run over /usr/lib, each unit's
    ``NAME.d/*.conf`` drop-ins merged in name order; ``links`` (path -> target) gives the
    enablement symlinks and masks."""
    units: dict[str, UnitFile] = {}
    paths: dict[str, str] = {}
    texts: dict[str, str] = {}
    for d in reversed(UNIT_DIRS):  # the higher-priority directory last: it wins
        for path, data in files.items():
            if not path.startswith(d + "/"):
                continue
            rest = path[len(d) + 1:]
            if "/" not in rest and rest.endswith(SUFFIXES):
                text = data.decode("utf-8", "replace")
                units[rest], paths[rest], texts[rest] = parse_unit(text), path, text
    for path in sorted(files, key=lambda p: p.rsplit("/", 1)[-1]):
        m = re.fullmatch(r"(?:%s)/([^/]+)\.d/[^/]+\.conf" % "|".join(map(re.escape, UNIT_DIRS)), path)
        if m and m[1] in units:
            parse_unit(files[path].decode("utf-8", "replace"), units[m[1]])
    wants: dict[str, set[str]] = {}
    masked: set[str] = set()
    dirs = "|".join(map(re.escape, UNIT_DIRS))
    for path, target in (links or {}).items():
        m = re.fullmatch(r"(?:%s)/([^/]+)\.(?:wants|requires)/([^/]+)" % dirs, path)
        if m:
            wants.setdefault(m[1], set()).add(m[2])
        elif target == "/dev/null" and (m := re.fullmatch(r"(?:%s)/([^/]+)" % dirs, path)):
            masked.add(m[1])
    return UnitFiles(units, paths, texts, {k: frozenset(v) for k, v in wants.items()}, frozenset(masked))


def context_unit_files(ctx: Context) -> UnitFiles:
    """The unit files of the rule context, with the target image's symlinks when the context
    names a reference target that boots one (its cached unit-file archive)."""
    links: dict[str, str] = {}
    if ctx.target is not None:
        from ..targets.qemu import TARGETS, cache_root

        if ctx.target in TARGETS and TARGETS[ctx.target].rootfs:
            from ..targets.qemu_systemd import rootfs_links

            links = rootfs_links(cache_root() / ctx.target)
    return unit_files(ctx.rootfs_files, links)


def conf_value(files: Mapping[str, bytes], conf: str, section: str, key: str) -> str | None:
    """A key of one of systemd's own configuration files (``journald.conf``, ``system.conf``)
    with its drop-ins in /etc and /usr/lib (``NAME.d/*.conf``, in name order): the last one set wins."""
    value: str | None = None
    stem = f"systemd/{conf}.d/"
    paths = [f"etc/systemd/{conf}", *sorted(p for p in files if p.startswith((f"etc/{stem}", f"usr/lib/{stem}"))
                                             and p.endswith(".conf"))]
    for p in paths:
        if p in files:
            v = parse_unit(files[p].decode("utf-8", "replace")).get(section, {}).get(key, [])
            value = v[-1] if v else value
    return value


def default_deps(uf: UnitFiles, unit: str) -> bool:
    v = uf.value(unit, "Unit", "DefaultDependencies")
    return v is None or v.lower() not in ("no", "false", "0", "off")


def after_map(uf: UnitFiles, names: Iterable[str]) -> dict[str, list[str]]:
    """unit -> the units it is ordered after, for the units ``names`` (those the boot ran), from
    their files: After=, others' Before=, default dependencies, targets after what they want
    (their Wants=/Requires= and the WantedBy=/RequiredBy= of units naming them)."""
    names = list(dict.fromkeys(names))
    after: dict[str, set[str]] = {n: set() for n in names}
    for n in names:
        if uf.get(n) is None:
            continue
        after[n].update(uf.values(n, "Unit", "After"))
        for b in uf.values(n, "Unit", "Before"):
            after.setdefault(b, set()).add(n)
        out = " ".join(uf.values(n, "Service", "StandardOutput") + uf.values(n, "Service", "StandardError"))
        if n.endswith(".service") and not n.startswith("systemd-journald") and \
                (not out or any(w in out for w in ("journal", "syslog", "kmsg"))):
            after[n].add("systemd-journald.socket")  # the journal is the default output
        dd = default_deps(uf, n)
        if n.endswith(".service") and dd:
            after[n].update(("sysinit.target", "basic.target"))
        elif n.endswith((".socket", ".timer", ".path")) and dd:
            after[n].add("sysinit.target")
        for key in ("WantedBy", "RequiredBy"):
            for t in uf.values(n, "Install", key):
                if t.endswith(".target") and default_deps(uf, t):
                    after.setdefault(t, set()).add(n)
        if n.endswith(".target") and dd:
            after[n].update(uf.values(n, "Unit", "Wants") + uf.values(n, "Unit", "Requires"))
            after[n].update(uf.wants.get(n, ()))
    if "systemd-journald.socket" in after:
        after["systemd-journald.socket"].discard("systemd-journald.socket")
    return {k: sorted(v - {k}) for k, v in after.items()}


def chain_for(boot: BootAnalysis, uf: UnitFiles) -> Chain:
    """The critical chain to ready: over the unit files' After= map when there are unit files,
    else chain.py's estimate."""
    runs = unit_runs(boot, uf)
    if not uf.units:
        return critical_chain(boot, None)
    after = after_map(uf, [r.name for r in runs])
    # the chain looks units up by the log's names: a unit the log named by its description
    # gets its file's After= list under that name too
    for _, e in located(boot.boot.events, Kind.UNIT):
        if isinstance(e.detail, UnitDetail) and not e.detail.unit:
            r = uf.resolve(unit_text(e.name, e.detail), after)
            if r in after:
                after.setdefault(e.name, after[r])
                for deps in after.values():
                    if r in deps and e.name not in deps:
                        deps.append(e.name)
    return critical_chain(boot, after)


def chain_text(chain: Chain, limit: int = 6, uf: UnitFiles | None = None) -> str:
    """The chain's top links in words, for an arithmetic: 'app.service @99.650s <- ...'."""
    parts = [f"{uf.resolve(lk.name) if uf is not None and lk.kind == 'unit' else lk.name} "
             f"@{duration(lk.at_ns, {'s': 3}, sep='')}" for lk in chain.links[:limit] if lk.at_ns is not None]
    return " <- ".join(parts) + (" <- ..." if len(chain.links) > limit else "")


def chain_source(chain: Chain) -> str:
    return ("chain over the target's unit files (After=, Before=, default dependencies)" if not chain.estimated
            else "chain estimated from unit times (no unit files known)")


ASSUMED = "assumed"  # UnitRun.result of a unit the log never showed starting (see printer_unit)


def printer_unit(boot: BootAnalysis, runs: Sequence[UnitRun], uf: UnitFiles | None = None) -> UnitRun | None:
    """The unit that printed the ready line: the journal's _SYSTEMD_UNIT, or the syslog
    identifier journald puts before a forwarded line ("app[236]: APP READY"). A capture that
    stops at the ready line ends before systemd's "Started app.service" (journald forwarded the
    app's line first): when the unit files know the unit, it is taken as started at the ready
    line, with result ASSUMED, which :func:`replay` starts as soon as its dependencies are."""
    r = ready_marker(boot)
    if r is None:
        return None
    lines = boot.boot.lines
    i = lines.index_of(r[0].line_no)
    names: list[str] = []
    fields = lines.fields.get(i) if lines.fields else None
    if fields:
        names += [v for k in ("_SYSTEMD_UNIT", "UNIT") if (v := fields.get(k))]
    if 0 <= i < len(lines):
        m = _IDENT.match(lines.text[i].strip())
        if m:
            names.append(m[1] if m[1].endswith(SUFFIXES) else m[1] + ".service")
    for n in names:
        found = [u for u in runs if u.name == n]
        if found:  # the console may show "Started app.service" after the app's first line
            return min(found, key=lambda u: abs(u.start_ns - r[1]))
    known = [n for n in names if uf is not None and uf.get(n) is not None]
    if known:
        return UnitRun(known[0], r[1], r[1], False, ASSUMED, r[0].line_no, r[0].line_no)
    return None


def unit_evidence(boot: BootAnalysis, runs: Iterable[UnitRun], extra: Iterable[int] = ()) -> tuple[Evidence, ...]:
    """The Starting and Started lines of these units (and ``extra`` lines)."""
    nos: list[int] = list(extra)
    for r in runs:
        nos += [r.line_no, r.end_line_no]
    return evidence(boot.boot, nos)


# --- changes -------------------------------------------------------------------------------


def mask_change(units: Sequence[str], why: str) -> Change:
    """Mask units for the boot: ``systemd.mask=`` on the kernel command line (systemd's
    debug generator), which any systemd >= 215 reads; the same as a /dev/null symlink in
    /etc/systemd/system, without touching the image."""
    value = " ".join(f"systemd.mask={u}" for u in units)
    return Change(ChangeKind.CMDLINE, value,
                  f"mask {', '.join(units)} ({why}): add {value} to the kernel command line, or make the mask "
                  f"permanent with `systemctl mask {' '.join(units)}` (a symlink to /dev/null in /etc/systemd/system)")


def dropin(path: str, text: str, value: str, description: str) -> Change:
    """An overlay laying one configuration file (a drop-in) over the root filesystem."""
    return Change(ChangeKind.OVERLAY, value, description, ((path, text.encode(), FILE_MODE),))


def overlap_ns(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def fmt_at(ns: int) -> str:
    """A time on the boot's axis, in seconds to the millisecond: '4.403 s'."""
    return duration(ns, {"s": 3})




# --- what if -------------------------------------------------------------------------------


def replay(runs: Sequence[UnitRun], after: Mapping[str, Sequence[str]], drop: Iterable[str] = (),
           reorder: Mapping[str, Sequence[str]] | None = None) -> dict[str, int]:
    """The units' start times had ``drop`` not run and the units in ``reorder`` been ordered
    after only the listed units, every other unit keeping its measured duration and the gap
    systemd took between its last dependency becoming active and starting it. A unit with no
    dependency known keeps its measured start (it is not moved earlier on a guess). Returns
    name -> new start (axis ns). CPU freed by a dropped unit is not modelled: on a loaded CPU
    the real saving can be larger."""
    gone = set(drop)
    new_order = reorder or {}
    by = by_name(runs)
    start: dict[str, int] = {}
    active: dict[str, int] = {}
    for r in sorted(by.values(), key=lambda r: (r.start_ns, r.active_ns, r.line_no)):
        old = [d for d in after.get(r.name, ()) if d in by and d != r.name and by[d].active_ns <= r.start_ns]
        new = [d for d in new_order.get(r.name, old) if d in by and d != r.name]
        base_old = max((by[d].active_ns for d in old), default=None)
        base_new = max((active.get(d, by[d].active_ns) for d in new), default=None)
        if r.name in gone:
            start[r.name] = active[r.name] = base_new if base_new is not None else 0
            continue
        if r.result == ASSUMED and r.name in new_order and base_new is not None:
            # its start is not in the log (nor the targets it waited for): reordered, it starts as
            # soon as what it is now ordered after is up
            s = base_new
        elif base_old is None or base_new is None:
            s = r.start_ns
        else:
            s = base_new + (r.start_ns - base_old)
        start[r.name], active[r.name] = s, s + r.duration_ns
    return start


# --- the model every systemd rule reads ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Model:
    """One boot's units with what the context knows of them: the unit files, the After= map,
    the chain to ready, the ready marker and the unit that printed it."""

    boot: BootAnalysis
    uf: UnitFiles
    runs: tuple[UnitRun, ...]
    by: Mapping[str, UnitRun]
    after: Mapping[str, Sequence[str]]
    chain: Chain
    ready: tuple[int, int] | None  # (axis ns, line)
    app: UnitRun | None  # the unit that printed the ready line

    def ready_without(self, drop: Iterable[str] = (),
                      reorder: Mapping[str, Sequence[str]] | None = None) -> int | None:
        """The ready time had ``drop`` not run (and ``reorder`` applied): :func:`replay`."""
        if self.ready is None or self.app is None:
            return None
        new = replay(self.runs, self.after, drop, reorder)
        return new.get(self.app.name, self.app.start_ns) + (self.ready[0] - self.app.start_ns)

    def started_before_ready(self, name: str) -> UnitRun | None:
        """The start job of unit ``name`` when it began before the ready line, else None."""
        r = self.by.get(name)
        if r is None or not r.span or self.ready is None or r.start_ns >= self.ready[0]:
            return None
        return r

    def saving(self, drop: Iterable[str] = (), reorder: Mapping[str, Sequence[str]] | None = None) -> int | None:
        """Measured ready minus the replayed one; None without a ready marker or its unit."""
        new = self.ready_without(drop, reorder)
        return None if new is None or self.ready is None else self.ready[0] - new

    def unmoved(self, what: str = "it") -> str:
        """Why a replay gave no figure, in words."""
        if self.app is None:
            return "the unit that printed the ready line is not known, so the boot cannot be replayed"
        if not self.after:
            return "no unit files are known: there is no After= map to replay the boot over"
        return f"replayed without {what}, the ready line does not move"

    def before_ready(self) -> list[UnitRun]:
        """The units that started before the ready line (all of them when there is none)."""
        return [r for r in self.runs if self.ready is None or r.start_ns < self.ready[0]]

    def chain_text(self) -> str:
        """The chain's source and its top links, for an arithmetic."""
        return f"{chain_source(self.chain)}: {chain_text(self.chain, 6, self.uf)}"

    def on_chain(self, name: str) -> bool:
        return any(lk.name == name or self.uf.resolve(lk.name) == name for lk in self.chain.links
                   if lk.kind == "unit")


_models: list[tuple[BootAnalysis, Mapping[str, bytes], str | None, Model | None]] = []


def model(boot: BootAnalysis, ctx: Context) -> Model | None:
    """The boot's :class:`Model` (kept for the last few boots: every systemd rule asks), None
    when the boot has no units."""
    for b, f, t, kept in _models:
        if b is boot and f is ctx.rootfs_files and t == ctx.target:
            return kept
    uf = context_unit_files(ctx)
    runs = tuple(unit_runs(boot, uf))
    m: Model | None = None
    if runs:
        app = printer_unit(boot, runs, uf)
        if app is not None and app.result == ASSUMED:
            runs += (app,)
        after = after_map(uf, [r.name for r in runs]) if uf.units else {}
        chain = chain_for(boot, uf)
        m = Model(boot, uf, runs, by_name(runs), after, chain, ready_ns(boot), app)
    _models.insert(0, (boot, ctx.rootfs_files, ctx.target, m))
    del _models[4:]
    return m


# --- what an application needs -------------------------------------------------------------

PATH = re.compile(r"(?<![\w.$-])/[\w./-]+")
NET_USE = re.compile(r"(?<![\w-])(?:wget|curl|ping|nc|ntpd|ntpdate|telnet|ssh|scp|tftp|mosquitto_pub|httpd|"
                     r"ip|ifconfig|dig|host|nslookup)(?![\w-])")
LOG_USE = re.compile(r"(?<![\w-])logger(?![\w-])|/dev/log")
WRITES = re.compile(r"(?:>>?\s*|(?<![\w-])(?:touch|mkdir|cp|mv|rm|tee|ln|install)\s+(?:-\S+\s+)*)(/[\w./-]+)")
SHELLS = ("/bin/sh", "/bin/bash", "/usr/bin/sh", "/usr/bin/bash", "/bin/dash")


@dataclass(frozen=True, slots=True)
class AppNeeds:
    """What a unit's program needs of the boot: units to be ordered after, and why."""

    known: bool  # False when the program's text is not known (a binary, or not in the files)
    units: tuple[str, ...]  # to order after (beyond the journal socket systemd adds itself)
    reasons: tuple[str, ...]
    network: bool


def exec_paths(uf: UnitFiles, unit: str) -> list[str]:
    """The programs a service's ExecStartPre=/ExecStart= run (prefixes like '-' and '@' off)."""
    out: list[str] = []
    for key in ("ExecStartPre", "ExecStart"):
        f = uf.get(unit)
        for v in (f.get("Service", {}).get(key, []) if f is not None else []):
            word = v.lstrip("-@:+!").split()[0] if v.lstrip("-@:+!").split() else ""
            if word.startswith("/"):
                out.append(word)
    return out


def app_needs(uf: UnitFiles, files: Mapping[str, bytes], unit: str) -> AppNeeds:
    """Read from the program's text (a script bootlens knows): the mounts below which it names
    paths (local-fs.target when a path lies below a mount other than /), a writable root when
    it writes a file (systemd-remount-fs.service), the network (network-online.target) when it
    uses a network tool, syslog's socket for logger. A program whose text is not known leaves
    the question open (``known`` False)."""
    progs = exec_paths(uf, unit)
    if not progs:
        return AppNeeds(False, (), ("its ExecStart= is not known",), False)
    texts: list[str] = []
    for p in progs:
        data = files.get(p.lstrip("/"))
        if data is None or not data.startswith(b"#!"):
            return AppNeeds(False, (), (f"{p} is not a script bootlens knows",), False)
        texts.append(data.decode("utf-8", "replace"))
    body = "\n".join(ln for t in texts for ln in t.splitlines() if ln.strip() and not ln.strip().startswith("#"))
    units: list[str] = []
    reasons: list[str] = []
    mounts = fstab_mounts(files)
    below = sorted({m for p in PATH.findall(body) for m in mounts if m != "/" and (p == m or p.startswith(m + "/"))})
    if below:
        units.append("local-fs.target")
        reasons.append(f"it names paths below {', '.join(below)} (mounted from /etc/fstab)")
    written = [w for w in WRITES.findall(body) if not w.startswith(("/dev/", "/proc/", "/sys/", "/run/"))]
    if written:
        units += ["systemd-remount-fs.service", "local-fs.target"]
        reasons.append(f"it writes {written[0]} (the root must be read-write)")
    net = bool(NET_USE.search(body))
    if net:
        units.append("network-online.target")
        reasons.append("it uses the network")
    if LOG_USE.search(body):
        units.append("systemd-journald-dev-log.socket")
        reasons.append("it logs through /dev/log")
    if not reasons:
        reasons.append("it names nothing beyond the root filesystem, which the initramfs mounted")
    return AppNeeds(True, tuple(dict.fromkeys(units)), tuple(reasons), net)


def fstab_mounts(files: Mapping[str, bytes]) -> list[str]:
    """Mount points /etc/fstab lists (swap and noauto entries left out)."""
    out: list[str] = []
    for ln in files.get("etc/fstab", b"").decode("utf-8", "replace").splitlines():
        f = ln.split()
        if len(f) >= 4 and not f[0].startswith("#") and f[1].startswith("/") and "noauto" not in f[3]:
            out.append(f[1].rstrip("/") or "/")
    return out


__all__ = ["ASSUMED", "AppNeeds", "Model", "UnitFiles", "UnitRun", "after_map", "app_needs", "by_name", "chain_for",
           "chain_source", "chain_text", "context_unit_files", "dropin", "fmt_at", "mask_change", "model",
           "overlap_ns", "parse_unit", "printer_unit", "ready_ns", "replay", "secs", "unit_evidence", "unit_files",
           "unit_runs"]
