"""systemd's start jobs as unit events, in every form a log carries them.

    [  OK  ] Started Journal Service.                             console status lines (any systemd)
             Starting Journal Service...
    [  OK  ] Started systemd-journald.service - Journal Service.  systemd >= 250: "name - description"
    [FAILED] Failed to start Remount Root and Kernel File Systems.
    systemd[1]: Starting Journal Service...                       kmsg (a dmesg) and the journal
    systemd[1]: Startup finished in 2.1s (kernel) + 3.5s (userspace) = 5.6s.

A unit's event spans its job: from the begin line (Starting/Mounting/Activating swap/Expecting
device, "activating") to the line that says how the job ended (Started/Finished/Mounted/...,
"active", or Failed/Timed out/Dependency failed). A target reached, a socket listening, a slice
created with no begin line before them are instants (duration None).

The console middle-truncates texts at its width with ``…``, and a unit's begin and end lines
are truncated differently ("Starting" and "Started" are not the same length): a begin and an end
are paired when the text around the ``…`` of one is the start and the end of the other.

A console that shows both systemd's kmsg lines and its status lines (until journald starts,
systemd logs to kmsg too) would count a unit twice: jobs are read per source ("kmsg", "console",
or "journal" when the input is a journal) and one source is kept per job, the one that saw it
begin and end; with both complete, kmsg or the journal (their own printk-clock stamps, where a
console status line has a host time or an estimate from the kernel lines around it).

A systemd in the initrd (dracut) runs its own jobs, then ``Switching root.``: its jobs still open
then are closed unfinished, and the SYSTEMD_START milestone is the root file system's systemd
(the last "running in system mode" line), not the initrd's. A console that shows no systemd[1]
line has it at systemd's "Welcome to ...!" (the last one before status lines: the root's).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.lazyre import lazy
from ..core.lines import Lines, estimate_stamp, stamp_at
from ..core.model import ESTIMATE, EXACT, NOT_MEASURED, NS_PER_US, Clock, Event, Fact, Kind, Milestone, ParseResult, Stamp, UnitDetail
from . import REGISTRY
from .base import Parser
from ..core.options import ParseOptions

_SYSTEMD = "systemd[1]: "  # the system manager (PID 1) through kmsg or the journal
# Begin lines: (verb, unit type). All end with "...".
_BEGIN = (("Starting ", ""), ("Mounting ", "mount"), ("Activating swap ", "swap"), ("Expecting device ", "device"))
# End lines of a start job: (verb, result), longest first where one verb starts another.
_END = (
    ("Started ", "done"), ("Finished ", "done"), ("Mounted ", "done"), ("Reached target ", "done"),
    ("Listening on ", "done"), ("Created slice ", "done"), ("Set up automount ", "done"),
    ("Found device ", "done"), ("Activated swap ", "done"),
    ("Failed to start ", "failed"), ("Failed to mount ", "failed"), ("Failed to listen on ", "failed"),
    ("Failed to activate swap ", "failed"), ("Failed to set up automount ", "failed"),
    ("Dependency failed for ", "dependency"), ("Assertion failed for ", "assert"),
    ("Timed out waiting for device ", "timeout"), ("Timed out starting ", "timeout"),
    ("Timed out mounting ", "timeout"), ("Timed out activating swap ", "timeout"),
)
# Stop jobs and other status texts that are no start job: known, not counted as not understood.
_OTHER = ("Stopping ", "Stopped ", "Unmounting ", "Unmounted ", "Deactivating swap ", "Deactivated swap ",
          "Removed slice ", "Closed ", "Reloading ", "Reloaded ", "Unset automount ", "A start job is running",
          "A stop job is running", "Job ", "Ordering cycle", "Found ordering cycle", "Breaking ordering cycle")
# Console status column ("[  OK  ] ", "[FAILED] ", ...; colours already stripped by lines.py).
_STATUS = lazy(r"\[ *(OK|FAILED|TIME|DEPEND|SKIP|INFO|WARN|\*+) *\] ")
_INDENT = lazy(r" {2,12}(?=Starting |Mounting |Activating swap |Expecting device )")
# "[  OK  ] " and "[FAILED" as the console cut them; a begin line's indentation.
_CONSOLE_HEADS = ("[  OK  ]", "[FAILED]", "[ TIME ]", "[DEPEND]", "[ SKIP ]", "[ INFO ]")
_BEGIN_NEEDLES = ("Starting ", "Mounting ", "Activating swap ", "Expecting device ")
# systemd >= 250: "unit-name.type - Description".
_UNIT_SUFFIX = (".service", ".socket", ".target", ".mount", ".automount", ".swap", ".path", ".timer",
                ".slice", ".device", ".scope")
_SKIPPED = lazy(r"(?:Condition check resulted in (.+) being skipped|(.+) was skipped because (?:of|all) .*)\.?$")
_VERSION = lazy(r"systemd (\S+) running in system mode")
_FINISHED = lazy(r"Startup finished in (.*?)\.?$")
_PART = lazy(r"((?:\d+(?:\.\d+)?(?:y|month|w|d|h|min|s|ms|us|µs) ?)+) \((\w+)\)")
_SPAN = lazy(r"(\d+(?:\.\d+)?)(y|month|w|d|h|min|ms|us|µs|s)")
_UNIT_S = {"y": 31_557_600.0, "month": 2_629_800.0, "w": 604_800.0, "d": 86_400.0, "h": 3600.0, "min": 60.0,
           "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}
_PARTS = ("firmware", "loader", "kernel", "initrd", "userspace")
_ELLIPSIS = "…"
_ESC_TAIL = lazy(r"\[[0-9;]{0,16}m")
_WELCOME = lazy(r"Welcome to (?!GRUB)\S.*!\s*$")


class _Job:
    """A start job being read: its begin and end lines in one source (mutable while reading).

    A plain class with what ``@dataclass(slots=True)`` generated (equality by value, which
    ``list.remove`` relies on; unhashable): the dataclass was built at every start-up (~1 ms)."""

    __slots__ = ("source", "desc", "unit", "begin", "end", "result", "begin_st", "end_st", "kind", "names")
    __hash__ = None  # type: ignore[assignment]  # mutable, equal by value: as the dataclass was

    def __init__(self, source: str, desc: str, unit: str | None, begin: int | None = None, end: int | None = None,
                 result: str = "", begin_st: Stamp | None = None, end_st: Stamp | None = None, kind: str = "",
                 names: list[str] | None = None) -> None:
        self.source = source
        self.desc = desc  # the text as printed after the verb ("name - description" or the description),
        # maybe truncated with …
        self.unit = unit
        self.begin = begin  # index of the begin line
        self.end = end  # index of the end line
        self.result = result
        self.begin_st = begin_st
        self.end_st = end_st
        self.kind = kind  # unit type from the verb ("mount", "device"...), "" unknown
        self.names: list[str] = [] if names is None else names  # other texts seen for it (a fuller description)

    def _key(self) -> tuple[object, ...]:
        return (self.source, self.desc, self.unit, self.begin, self.end, self.result, self.begin_st, self.end_st,
                self.kind, self.names)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, _Job)
        return self._key() == other._key()

    def __repr__(self) -> str:
        return f"_Job{self._key()!r}"

    @property
    def first(self) -> int:
        return self.begin if self.begin is not None else self.end if self.end is not None else 0


def _split_unit(text: str) -> tuple[str | None, str]:
    """("name.service", "Description") from systemd >= 250's "name.service - Description"; (None,
    "Description") when the console cut the name ("modprobe@efi_pstore.servi… - Load Kernel
    Module efi_pstore", "systemd-initctl.socke…- initctl Compatibility Named Pipe")."""
    head, sep, tail = text.partition(" - ")
    if sep and " " not in head:
        if head.endswith(_UNIT_SUFFIX):
            return head, tail
        if _ELLIPSIS in head:  # the name was cut, the description after it is whole
            return None, tail
    head, sep, tail = text.partition(_ELLIPSIS + "- ")
    if sep and " " not in head:
        return None, tail
    return None, text


# The characters of a unit's file name ("systemd-fsck@dev-mmcblk0p1.service", "system-serial\x2dgetty.slice").
_NAME_CHARS = lazy(r"[\w@\\:.-]+")


def _complete_type(head: str) -> str | None:
    """A unit name whose type the console cut ("systemd-journal-flush.ser") completed, when the
    type's first two letters or more fit one unit type only (".se" service, ".so" socket); else None."""
    dot = head.rfind(".")
    part = head[dot:] if dot > 0 else ""
    fits = [t for t in _UNIT_SUFFIX if t.startswith(part)] if len(part) >= 3 else []
    return head[:dot] + fits[0] if len(fits) == 1 else None


def _cut_name(texts: list[str]) -> tuple[str | None, str, str] | None:
    """(unit or None, name to show, description) of a job whose every text is systemd >= 250's
    "name - description" with the console's cut inside the name: "systemd-journal-flush.ser…sh
    Journal to Persistent Storage" (Starting) and "…ser…lush Journal to ..." (Finished) are
    systemd-journal-flush.service; "systemd-tmpfiles-setup-de…Create Static Device Nodes in /dev"
    fits two units and stays "systemd-tmpfiles-setup-de…", its description "…Create Static Device
    Nodes in /dev" (its start unknown); "system-serial\\x2dget…slice - Slice /system/serial-getty"
    shows both ends of its name and its whole description. None when a text is no such cut
    (systemd < 250's descriptions: "Monitoring of LVM…meventd or progress polling")."""
    heads: list[str] = []
    ends: list[str] = []
    descs: list[str] = []
    for t in texts:
        head, cut, tail = t.partition(_ELLIPSIS)
        if not cut or not head or _NAME_CHARS.fullmatch(head) is None:
            return None
        heads.append(head)
        rest = tail.lstrip(" ")
        end, sep, d = rest.partition(" - ")
        if rest.startswith("- "):  # "systemd-initctl.socke…- initctl Compatibility Named Pipe"
            descs.append(rest[2:])
        elif sep and _NAME_CHARS.fullmatch(end) is not None:  # "…e - Record Runlevel Change in UTMP"
            ends.append(end)
            descs.append(d)
        else:
            descs.append(_ELLIPSIS + tail)
    head = max(heads, key=len)
    unit = head if head.endswith(_UNIT_SUFFIX) else _complete_type(head)
    whole = [d for d in descs if not d.startswith(_ELLIPSIS)]
    shown = head + _ELLIPSIS + max(ends, key=len, default="")
    return unit, unit or shown, whole[0] if whole else max(descs, key=len)


def _compatible(a: str, b: str) -> bool:
    """Whether two texts can be one, either middle-truncated with …."""
    if a == b:
        return True
    ea, eb = _ELLIPSIS in a, _ELLIPSIS in b
    if not ea and not eb:
        return False
    pa, _, sa = a.partition(_ELLIPSIS) if ea else (a, "", a)
    pb, _, sb = b.partition(_ELLIPSIS) if eb else (b, "", b)
    pre = pa.startswith(pb) or pb.startswith(pa)
    suf = sa.endswith(sb) or sb.endswith(sa)
    return pre and suf and bool(pa or pb)


def _fullest(texts: Iterable[str]) -> str:
    """The text that says most: an untruncated one, else the longest."""
    ts = list(texts)
    whole = [t for t in ts if _ELLIPSIS not in t]
    return whole[0] if whole else max(ts, key=len)


def _seconds(span: str) -> float | None:
    """systemd's format_timespan ("1min 2.345s", "988ms") in seconds."""
    parts = _SPAN.findall(span)
    if not parts:
        return None
    return sum(float(v) * _UNIT_S[u] for v, u in parts)


class _Reader:
    """Reads one boot's lines into jobs per source."""

    def __init__(self, lines: Lines) -> None:
        self.lines = lines
        self.jobs: list[_Job] = []
        self.open: dict[str, list[_Job]] = {}  # per source, jobs begun and not ended
        self.unknown = 0

    def stamp(self, i: int, source: str, glued: bool) -> Stamp | None:
        """A line's time: its own stamp; a console line's host time (the time of its first byte,
        also when a kernel line was glued after it), else bounded by the kernel lines around it."""
        lines = self.lines
        if source != "console":
            return stamp_at(lines, i)
        h = lines.host[i]
        if h is not None:
            return Stamp(Clock.HOST, h)
        if glued:  # printed before this line's printk stamp, after the previous stamped line
            k = lines.kernel[i]
            before = estimate_stamp(lines, i - 1) if i else None
            if k is not None and before is not None and before.clock is Clock.KERNEL and before.ns <= k:
                return Stamp(Clock.KERNEL, before.ns, True, k - before.ns)
        return estimate_stamp(lines, i)

    def message(self, i: int, text: str, source: str, glued: bool = False) -> bool:
        """Read one job message (status text after the status column, or a systemd[1]: message).
        Returns False when it is no job message this parser knows."""
        side = self.lines.fields.get(i, {})
        unit = side.get("UNIT")
        jt = side.get("JOB_TYPE")
        if jt is not None and jt != "start":
            return True  # a stop/reload/restart job: known, not a start
        for verb, kind in _BEGIN:
            if text.startswith(verb) and text.endswith("..."):
                body = text[len(verb):-3]
                job = _Job(source, body, unit or _split_unit(body)[0], begin=i, kind=kind)
                job.begin_st = self.stamp(i, source, glued)
                self.jobs.append(job)
                self.open.setdefault(source, []).append(job)
                return True
        for verb, result in _END:
            if text.startswith(verb):
                body = text[len(verb):]
                body = body[:-1] if body.endswith(".") else body
                self.end(i, source, unit or _split_unit(body)[0], body, side.get("JOB_RESULT") or result, glued,
                         "device" if verb == "Found device " or "waiting for device" in verb else "")
                return True
        m = _SKIPPED.match(text)
        if m is not None:
            body = m[1] or m[2]
            self.end(i, source, unit or _split_unit(body)[0], body, "skipped", glued, "")
            return True
        return text.startswith(_OTHER)

    def end(self, i: int, source: str, unit: str | None, desc: str, result: str, glued: bool, kind: str) -> None:
        """An end line: close the oldest open job it can be, else an instant."""
        pending = self.open.get(source, [])
        match = None
        for exact in (True, False):
            for job in pending:
                if unit is not None and job.unit is not None:
                    ok = unit == job.unit
                else:
                    ok = desc == job.desc if exact else _compatible(desc, job.desc)
                if ok:
                    match = job
                    break
            if match is not None:
                break
        if match is None:
            match = _Job(source, desc, unit, kind=kind)
            self.jobs.append(match)
        else:
            pending.remove(match)
            if desc != match.desc:
                match.names.append(desc)
            if match.unit is None:
                match.unit = unit
        match.end = i
        match.result = result
        match.end_st = self.stamp(i, source, glued)

    def switch_root(self) -> None:
        """The initrd's systemd hands over: its open jobs never end in this log."""
        self.open.clear()


def _console_text(lines: Lines, i: int) -> tuple[str, int] | None:
    """Status text glued before a kernel line's stamp, with the rest the console printed after
    that kernel line (the next lines' glued text or the untimed line that ends it):
    ``[  OK  ] Mounted Huge Pages [ 9.617883] cfg80211: ...`` then ``File System.[ 9.627933] ...``.
    Returns the text and the index of its last piece."""
    g = lines.glued[i]
    s = g.lstrip(" ")
    begin = _INDENT.match(g) is not None
    if not (s.startswith("[") or begin):
        return None
    text = g
    j = i
    n = len(lines)
    tail = "..." if begin else "."  # how a begin line and an end line end
    while not text.rstrip().endswith(tail) and j + 1 < n and j - i < 8:
        j += 1
        nxt = lines.glued.get(j)
        if nxt is not None:
            text += nxt
            continue
        if lines.kernel[j] is None:
            text += lines.text[j]
        break
    return text.rstrip(), j


@REGISTRY.register
class SystemdParser(Parser):
    """systemd units' start jobs (console status lines, kmsg, journal), systemd start, Startup finished."""

    name = "systemd"
    description = "systemd units: console status lines, systemd[1] lines in a dmesg or the journal, Startup finished"
    needles = (_SYSTEMD, "[  OK  ]", "[FAILED]")  # the sniff's: asked of every input

    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        if lines.fields or lines.grep(_SYSTEMD, "[  OK  ]", "[FAILED]"):
            return 0.6
        return 0.0

    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        texts = lines.text
        reader = _Reader(lines)
        facts: list[Fact] = []
        events: list[Event] = []
        starts: list[int] = []  # "running in system mode" lines
        switch: int | None = None
        finished: int | None = None
        first_pid1: list[int] = []
        cand = set(lines.grep(_SYSTEMD, *_CONSOLE_HEADS, *_BEGIN_NEEDLES, "[FAILED"))
        cand.update(i for i, g in lines.glued.items() if "[" in g or "Starting" in g or "Mounting" in g)
        src_pid1 = "journal" if lines.journal else "kmsg"
        for i in sorted(cand):
            t = texts[i]
            if i in lines.glued:
                ct = _console_text(lines, i)
                if ct is not None:
                    self._console(reader, i, ct[0], glued=True)
            if t.startswith(_SYSTEMD):
                msg = t[len(_SYSTEMD):]
                first_pid1.append(i)
                if _VERSION.match(msg):
                    starts.append(i)
                elif msg.startswith("Switching root"):
                    switch = i
                    reader.switch_root()
                elif msg.startswith("Startup finished in "):
                    finished = i
                elif not reader.message(i, msg, src_pid1) and msg.startswith(("Starting ", "Started ")):
                    reader.unknown += 1
            elif _STATUS.match(t) or _INDENT.match(t):
                self._console(reader, i, t, glued=False)
        first_job = min((j.first for j in reader.jobs if j.source != "console"), default=len(texts))
        events += self._milestones(lines, starts, switch, first_pid1, finished, facts, first_job)
        if not starts and not first_pid1:
            events += _welcome(reader)
        events += _unit_events(lines, reader.jobs)
        warnings = []
        if reader.unknown:
            warnings.append(f"{reader.unknown} systemd status lines not understood")
        events.sort(key=lambda e: e.line_no)
        return ParseResult(tuple(events), tuple(facts), tuple(warnings))

    @staticmethod
    def _console(reader: _Reader, i: int, text: str, glued: bool) -> None:
        m = _STATUS.match(text)
        if m is not None:
            body = text[m.end():]
        else:
            im = _INDENT.match(text)
            if im is None:
                return
            body = text[im.end():]
        if "[" in body:
            # systemd cuts the text with its colour escapes in it: the ESC goes with the cut, the
            # rest of the sequence stays ("Starting modprobe@configfs…[0m - Load Kernel Module ...")
            body = _ESC_TAIL.sub("", body)
        if not reader.message(i, body, "console", glued):
            reader.unknown += 1

    @staticmethod
    def _milestones(lines: Lines, starts: list[int], switch: int | None, first_pid1: list[int],
                    finished: int | None, facts: list[Fact], first_job: int) -> list[Event]:
        """SYSTEMD_START (the root's systemd), STARTUP_FINISHED and the facts of both lines."""
        out: list[Event] = []
        at: int | None = None
        if starts:
            at = starts[-1]  # the root's systemd runs last (after an initrd's)
            m = _VERSION.match(lines.text[at][len(_SYSTEMD):])
            if m is not None:
                facts.append(Fact("systemd_version", m[1], lines.no(at)))
            # systemd logs a line or two before its banner ("Inserted module 'autofs4'", 0.26 s
            # earlier on the reference target): the root's systemd started at the first of them
            floor = max(switch if switch is not None else -1, starts[-2] if len(starts) > 1 else -1)
            earlier = [i for i in first_pid1 if floor < i < at]
            if earlier and earlier[0] < first_job:
                at = earlier[0]
        else:
            after = [i for i in first_pid1 if switch is None or i > switch]
            # systemd's first line, if it is no job's: a log cut after systemd started (an
            # excerpt, a ring buffer's tail) starts with job messages, and shows no start
            if after and after[0] < first_job:
                at = after[0]
        if at is not None:
            out.append(Event(Kind.MILESTONE, Milestone.SYSTEMD_START, stamp_at(lines, at), None, lines.no(at)))
        if finished is not None:
            out.append(Event(Kind.MILESTONE, Milestone.STARTUP_FINISHED, stamp_at(lines, finished), None,
                             lines.no(finished)))
            side = lines.fields.get(finished, {})
            no = lines.no(finished)
            got: dict[str, str] = {}
            for part in _PARTS:
                usec = side.get(f"{part.upper()}_USEC", "")
                if usec.isdigit() and len(usec) <= 16:
                    got[part] = f"{int(usec) * NS_PER_US / 1e9:.6f}"
            if not got:
                fm = _FINISHED.match(lines.text[finished][len(_SYSTEMD):])
                for span, part in _PART.findall(fm[1] if fm is not None else ""):
                    sec = _seconds(span)
                    if sec is not None and part in _PARTS:
                        got[part] = f"{sec:.6f}".rstrip("0").rstrip(".") if sec else "0"
            for part in _PARTS:
                if part in got:
                    facts.append(Fact(f"systemd_time_{part}_s", got[part], no))
            # systemd's own clock of its start (userspace_timestamp, since the kernel started):
            # kernel + initrd. Its first log line comes later (0.5 s on the reference target
            # under TCG), so where the journal gives the figure, the milestone takes that time.
            if "kernel" in got and lines.has_kernel_time():
                start_ns = round((float(got["kernel"]) + float(got.get("initrd", "0"))) * 1e9)
                line_no = lines.no(at) if at is not None else no
                out = [e for e in out if e.name != Milestone.SYSTEMD_START]
                out.insert(0, Event(Kind.MILESTONE, Milestone.SYSTEMD_START, Stamp(Clock.KERNEL, start_ns), None,
                                    line_no))
        return out


def _welcome(reader: _Reader) -> list[Event]:
    """SYSTEMD_START on a console that shows no systemd[1] line: systemd's "Welcome to Debian
    GNU/Linux 12 (bookworm)!" as it starts; with an initrd's systemd before it, the last one that
    status lines follow is the root's."""
    lines = reader.lines
    firsts = [j.first for j in reader.jobs if j.source == "console"]
    if not firsts:
        return []
    last_job = max(firsts)
    found = [i for i in lines.starting("Welcome to ") if i < last_job and _WELCOME.match(lines.text[i])]
    if not found:
        return []
    i = found[-1]
    return [Event(Kind.MILESTONE, Milestone.SYSTEMD_START, reader.stamp(i, "console", False), None, lines.no(i))]


def _dedup(jobs: list[_Job]) -> list[_Job]:
    """One source per job: a console job that kmsg or the journal also saw is dropped when the
    other saw it begin and end, else the other is (the texts of both name it)."""
    own = [j for j in jobs if j.source != "console"]
    console = [j for j in jobs if j.source == "console"]
    if not own or not console:
        return jobs
    taken: set[int] = set()
    drop: set[int] = set()
    for c in console:
        for k, o in enumerate(own):
            if k in taken or o.kind != c.kind and (o.kind and c.kind):
                continue
            if (c.unit is not None and o.unit is not None and c.unit == o.unit) or any(
                    _compatible(a, b) for a in (c.desc, *c.names) for b in (o.desc, *o.names)):
                taken.add(k)
                complete_o = o.end is not None and (o.begin is not None or c.begin is None)
                complete_c = c.end is not None and (c.begin is not None or o.begin is None)
                if not complete_o and not complete_c and (o.begin is None) != (c.begin is None):
                    # kmsg saw it begin, the console end (journald took over systemd's log):
                    # one job from both halves
                    first, last = (o, c) if o.begin is not None else (c, o)
                    first.end, first.end_st, first.result = last.end, last.end_st, last.result
                    first.source = f"{first.source}+{last.source}"
                    first.names += [last.desc, *last.names]
                    first.unit = first.unit or last.unit
                    drop.add(id(last))
                    break
                loser, winner = (c, o) if complete_o or not complete_c else (o, c)
                drop.add(id(loser))
                winner.names += [loser.desc, *loser.names]
                winner.unit = winner.unit or loser.unit
                break
    return [j for j in jobs if id(j) not in drop]


def _duration(j: _Job) -> tuple[int | None, str, int | None]:
    """A job's duration, its bound and error (UnitDetail.duration_bound, duration_error_ns): exact
    between two lines with a time of their own; else an interval from the estimates' bounds (a
    console status line on a printk console lies between the kernel lines around it). Not
    measured where both ends rest on the same kernel line, no stamped line between them (a quiet
    kernel's console: every status line after its last printk line rests on that line, and 0 ns
    between two of them would be no measurement)."""
    b, e = j.begin_st, j.end_st
    if j.begin is None or j.end is None or b is None or e is None or b.clock is not e.clock:
        return None, EXACT, 0
    if not b.estimated and not e.estimated:
        return (e.ns - b.ns, EXACT, 0) if e.ns >= b.ns else (None, EXACT, 0)
    if b.estimated and e.estimated and e.ns <= b.ns:
        return None, NOT_MEASURED, None
    # begin in [b.ns, b.ns + b_err], end in [e.ns, e.ns + e_err]
    b_err = b.error_ns if b.estimated else 0
    e_err = e.error_ns if e.estimated else 0
    low = 0 if b_err is None else max(0, e.ns - b.ns - b_err)
    high = None if e_err is None else e.ns + e_err - b.ns
    if high is not None and high < low:
        return None, EXACT, 0
    return low, ESTIMATE, None if high is None else high - low


def _unit_events(lines: Lines, jobs: list[_Job]) -> list[Event]:
    """The jobs as unit events: a span from begin to end, or an instant at the one line seen."""
    out = []
    # systemd >= 250 names units on the console: a text cut inside the name is no description
    named = any(j.unit and _ELLIPSIS not in j.unit for j in jobs)
    for j in _dedup(jobs):
        start = j.begin_st if j.begin is not None else j.end_st
        dur, bound, err = _duration(j)
        unit, desc = _split_unit(_fullest([j.desc, *j.names]))
        unit = j.unit or unit
        name = unit or desc
        if unit is None and named and (cut := _cut_name([j.desc, *j.names])) is not None:
            unit, name, desc = cut  # the unit, else its cut name alone: never "name…description"
        end_line = lines.no(j.end) if j.begin is not None and j.end is not None else None
        out.append(Event(Kind.UNIT, name, start, dur, lines.no(j.first), end_line,
                         UnitDetail(unit, desc, j.result, j.source, bound, err)))
    return out
