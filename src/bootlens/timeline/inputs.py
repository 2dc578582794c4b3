"""What ``report`` and ``compare`` take as INPUT: a log, a recording, or a run folder.

Each input becomes a :class:`Group`: the boots it holds, analysed. A run folder (written by
``bootlens run``) is one group of repeated boots; its ``run.json`` remembers the markers the
run was captured with, so a later ``report`` or ``compare`` measures to the same ready line.

Some inputs are told apart by their content (:func:`bootlens.sources.kinds.classify`): a
boot-data file (grab-boot-data.sh) is a group of its own, its kernel log analysed with line
numbers pointing into the file; side files (systemd-analyze outputs and a folder of them, a
bootchart, an ftrace buffer, an strace) add to the boot of the other inputs instead of being one
(see :mod:`bootlens.sources.supplements`), or, given without a log, make a boot of their own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence

from .analyze import Analysis, BootAnalysis, analyze_boot, analyze_paths, analyze_side_boot, paused_gc, stream_paths
from ..core.errors import InputError, printable
from ..core.model import READY, Fact, InputStats, NamedTuple
from ..core.options import ParseOptions
from ..sources.kinds import classify  # light: the supplement model is imported when an input is one (start-up)

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:  # pathlib is imported where a folder is read (start-up: ~8 ms to import)
    from pathlib import Path
    from typing import Any

    from ..sources.logic.align import LogicSetup
    from ..sources.supplements import Supplement

class Group(NamedTuple):
    """One INPUT: a single log or recording, or a folder of repeated boots."""

    name: str  # the input as the user gave it
    analysis: Analysis
    folder: bool  # True for a run folder (repeated boots of one configuration)


def analyze_folder(folder: Path, options: ParseOptions | None = None, top: int = 10,
                   supplement: Supplement | None = None) -> Analysis:
    """Analyse every boot of a run folder; markers given by the user win over run.json's."""
    from ..capture.run_folder import folder_files, read_run_options  # a run folder only (start-up of a log)

    files = folder_files(folder)
    if not files:
        raise InputError(str(folder), "no recordings (boot-N.rec) or logs in this folder")
    from ..sources.supplements import merge
    from ..sources.ftrace.attach import trace_supplement

    opts, problems = read_run_options(folder, options.markers if options is not None else ())
    traces = [trace_supplement(p) for p in files]  # run --trace: boot-N.trace.txt joins boot-N.rec
    if not any(traces):
        whole = analyze_paths([str(p) for p in files], opts, top, supplement=supplement)
    else:
        parts = [analyze_paths([str(p)], opts, top,
                               supplement=merge(supplement, t) if supplement and t else t or supplement)
                 for p, t in zip(files, traces)]
        whole = Analysis(tuple(s for a in parts for s in a.inputs), tuple(b for a in parts for b in a.boots))
    if problems:  # a damaged run.json: said with every boot it bears on (the folder's warnings count them once)
        whole = whole._replace(boots=tuple(b._replace(warnings=(*problems, *b.warnings)) for b in whole.boots))
    return whole


def analyze_bootdata(path: str, options: ParseOptions | None = None, top: int = 10,
                     supplement: Supplement | None = None) -> Analysis:
    """A boot-data file as one input: its KERNEL MESSAGES through the normal pipeline (line
    numbers are the file's), its SYSTEMD INFO and kernel CONFIG attached as a supplement, its
    machine facts (GBD_MACHINE, the CPU count, ...) added where the kernel log has none."""
    from .boots import boots_from_lines, index_keywords
    from ..read.reader import frame_bytes
    from ..sources.bootdata.reader import read_bootdata
    from ..sources.supplements import Supplement, merge

    opts = options or ParseOptions()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    source = printable(path)
    bd = read_bootdata(text, source)
    sec = bd.section("KERNEL MESSAGES")
    if sec is None or not sec.text.strip():
        raise InputError(path, "a boot-data file without KERNEL MESSAGES: no boot to analyse")
    lines, stats = frame_bytes(source, sec.text.encode(), *index_keywords(opts))
    lines.first = sec.line_no  # line numbers point into the boot-data file
    own = Supplement((("bootdata", source),), {"time": bd.startup, "blame": bd.blame, "kconfig": bd.config},
                     bd.warnings)
    sup = merge(own, supplement) if supplement else own
    ready_given = any(m.name == READY for m in opts.markers)
    with paused_gc():
        boots = boots_from_lines(source, lines, stats, opts)
        results = []
        for boot in boots:
            have = {f.key for f in boot.facts}
            extra = tuple(Fact(f.key, f.value, f.line_no) for f in bd.facts if f.key not in have)
            boot = type(boot)(boot.source, boot.index, boot.lines, boot.events, boot.facts + extra, boot.warnings,
                              boot.formats + ("boot-data",), boot.split_reason)
            results.append(analyze_boot(boot, top, stats.host_origin, ready_given, sup))
    return Analysis((stats,), tuple(results))


def analyze_inputs(inputs: Sequence[str], options: ParseOptions | None = None, top: int = 10,
                   supplements: Sequence[str] = (), logic: LogicSetup | None = None, *,
                   side: Mapping[str, object] | None = None) -> list[Group]:
    """One group per input, in the order given; systemd-analyze outputs (and the folders of
    them in ``supplements``, from ``--systemd-analyze DIR``) and bootcharts attach to the boot of
    the others. Raises InputError when they would attach to several boots, or to none. ``side``:
    what the user gave for a side format, by its name (``{"logic": LogicSetup}``,
    :func:`bootlens.sources.base.configured`); ``logic`` is its older spelling for a logic
    analyzer capture, kept for one release."""
    kinds = {name: classify(name) for name in inputs}
    extra = [(kind, name) for name, kind in kinds.items() if kind is not None and kind != "bootdata"]
    logs = [name for name in inputs if kinds[name] is None or kinds[name] == "bootdata"]
    for d in supplements:
        if not os.path.isdir(d):
            raise InputError(d, "--systemd-analyze takes a folder (as target boot --collect writes)")
        extra.append(("collection", d))
    if not logs:
        if len(extra) == 1 and (alone := _alone(extra[0][0])) is not None:  # a bootchart or a trace alone
            return [_alone_group(extra[0][1], alone, top)]
        if (made := _made_of(extra)) is not None:  # systemd-analyze outputs, or a trace, alone
            return [_made_group(extra, made, top, side)]
        what = ", ".join(printable(n) for _, n in extra)
        raise InputError(what, "side files of several formats add to a boot: give the boot's log "
                         "(a console log, a recording, a journal) with them, or each file alone")
    sup = None
    if extra:
        from ..sources.supplements import read_supplements

        sup = read_supplements(extra, {**({"logic": logic} if logic is not None else {}), **(side or {})})
    groups = []
    for name in logs:
        if kinds[name] == "bootdata":
            groups.append(Group(name, analyze_bootdata(name, options, top, sup), False))
        elif name != "-" and os.path.isdir(name):
            from pathlib import Path

            groups.append(Group(name, analyze_folder(Path(name), options, top, sup), True))
        else:
            groups.append(Group(name, analyze_paths([name], options, top, supplement=sup), False))
    boots = sum(len(g.analysis.boots) for g in groups)
    if sup is not None and boots > 1:
        raise InputError(", ".join(printable(n) for _, n in extra),
                         f"describes one boot, and the other inputs hold {boots}: give the log of that boot alone")
    return groups


class GroupStream(NamedTuple):
    """One INPUT whose boots are analysed as they are read (:func:`stream_inputs`)."""

    name: str  # the input as the user gave it
    inputs: tuple[InputStats, ...]
    boots: Iterator[BootAnalysis]  # read once
    folder: bool  # True for a run folder
    group: Group | None = None  # the input analysed whole (a run folder, side files): ``boots`` are its

    def whole(self) -> Group:
        """The input as a Group, every boot analysed (what is left of the stream)."""
        if self.group is not None:
            return self.group
        return Group(self.name, Analysis(self.inputs, tuple(self.boots)), self.folder)


def stream_inputs(inputs: Sequence[str], options: ParseOptions | None = None, top: int = 10,
                  supplements: Sequence[str] = (), *, side: Mapping[str, object] | None = None
                  ) -> list[GroupStream]:
    """:func:`analyze_inputs` with the boots of each log analysed one at a time as they are read
    (:func:`bootlens.timeline.analyze.stream_paths`): every input is read and its first boot
    found now, so an unusable input fails before anything is printed. Inputs that add to one
    boot (side files, a boot-data file) and run folders are analysed whole, as analyze_inputs
    does."""
    if supplements or side or any(name != "-" and (classify(name) is not None or os.path.isdir(name))
                                  for name in inputs):
        return [GroupStream(g.name, g.analysis.inputs, iter(g.analysis.boots), g.folder, g)
                for g in analyze_inputs(inputs, options, top, supplements, side=side)]
    out = []
    for name in inputs:
        stats, boots = stream_paths([name], options, top)
        out.append(GroupStream(name, stats, boots, False))
    return out


def _alone(kind: str) -> Any:
    """The side format's way to stand alone as a boot of its own (sources/<format>/attach.py
    ``alone``), or None when it adds to a boot only."""
    from ..sources.base import format_of, hooks

    fmt = format_of(kind)
    return getattr(hooks(fmt), "alone", None) if fmt.attaches else None


def _made_of(extra: Sequence[tuple[str, str]]) -> Any:
    """When every side file is of one format that makes a boot of its parts (attach.py
    ``alone_boot``: systemd-analyze's outputs, the files of an strace), that hook; else None."""
    from ..sources.base import format_of, hooks

    fmts = {format_of(kind) for kind, _ in extra}
    if len(fmts) != 1:
        return None
    (fmt,) = fmts
    return getattr(hooks(fmt), "alone_boot", None) if fmt.attaches else None


def _made_group(extra: Sequence[tuple[str, str]], made: Any, top: int, side: Mapping[str, object] | None) -> Group:
    """Side files that make a boot of their own parts, analysed as one boot."""
    from ..sources.base import format_of
    from ..sources.supplements import read_supplements

    from ..read.reader import read_path

    sup = read_supplements(extra, side)
    name = ", ".join(printable(n) for _, n in extra)
    b = analyze_side_boot(made(name, sup), top, sup)
    framing = format_of(extra[0][0]).name.replace("_", "-")  # "systemd-analyze", "strace"
    # each file read (a folder's too) as the framing counts it: its real bytes and lines
    stats = []
    for path in dict.fromkeys(p for _, p in sup.sources):
        try:
            stats.append(read_path(path)[1].replace(framing=framing))
        except InputError:  # read by its format already: an empty or vanished file counts nothing
            stats.append(InputStats(printable(path), 0, 0, framing))
    return Group(name, Analysis(tuple(stats) or (InputStats(name, 0, 0, framing),), (b,)), False)


def _alone_group(name: str, alone: Any, top: int) -> Group:
    """A side file given without a log: the boot its format makes of it, analysed."""
    boot, sup, stats = alone(name)
    b = analyze_side_boot(boot, top, sup)
    return Group(name, Analysis((stats,), (b,)), False)
