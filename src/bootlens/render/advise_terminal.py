"""The terminal listing of ``bootlens advise``: first a summary, one line per finding (saving,
confidence, the change) that fits one screen at 80 columns; then each finding in full, worst
first, with its saving, confidence, change, trade-off, arithmetic and evidence lines. An input of
several boots (a run folder, a log of many boots) gets one merged set of findings, each with the
number of boots it applied to; its analysis warnings go to standard error once each, counted
(:func:`warning_lines`).

Every string from a log or a rule reaches the console as a rich ``Text`` (never parsed as
markup), so a device printing ``[bold]`` or an escape sequence shows it as text, and through
:func:`~.visible.visible`, so a bidi control (U+202E) shows as ``\\u202e`` instead of turning the
text around.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..advise.base import Change, Finding
from ..advise.summary import BootAdvice, InputAdvice, MergedFinding
from ..stats.figures import Stat
from .fit import fit_table
from ..core.units import duration, short
from .visible import visible

_CONF_STYLE = {"high": "bold green", "medium": "yellow", "low": "magenta"}
_KIND = {"cmdline": "kernel command line", "uboot_env": "U-Boot variable", "overlay": "root filesystem files",
         "kconfig": "Kconfig", "bootloader": "boot path", "manual": "by hand"}
_KIND_SHORT = {"cmdline": "cmdline", "uboot_env": "U-Boot", "overlay": "rootfs", "kconfig": "Kconfig",
               "bootloader": "boot path", "manual": "by hand"}


def _dur(ns: float) -> str:
    return duration(ns, {"s": 3, "ms": 1})


def saving_text(f: Finding, s: Stat | None = None) -> str:
    """The saving as shown: one figure, a median with its range, or 'no estimate'."""
    if s is not None:
        if s.n > 1:
            return f"{_dur(s.median)} (median; {_dur(s.min)}–{_dur(s.max)} over {s.n} boots)"
        return _dur(s.median)
    if f.saving_ns is None:
        return "no estimate"
    return _dur(f.saving_ns)


def change_text(c: Change) -> str:
    """'U-Boot variable bootdelay=0 (automatic): set ...'."""
    auto = "automatic" if c.automatic else "not automatic"
    return f"{_KIND.get(c.kind.value, c.kind.value)} {c.value} ({auto}): {c.description}"


def _finding(console: Console, n: int, f: Finding, s: Stat | None = None, seen: str = "") -> None:
    head = Text(f"{n:>2}. ")
    head.append(saving_text(f, s), style="bold")
    head.append("  ")
    head.append(f.confidence.value.upper(), style=_CONF_STYLE.get(f.confidence.value, ""))
    head.append(f"  {f.rule} · {f.stage}", style="dim")
    console.print(head)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("", Text(visible(f.title), style="bold"))
    if seen:
        grid.add_row("boots", Text(seen))
    grid.add_row("change", Text(visible(change_text(f.change))))
    grid.add_row("trade-off", Text(visible(f.tradeoff)))
    arithmetic = f.arithmetic
    if f.saving_ns is None and s is None and not arithmetic.startswith("no estimate"):
        arithmetic = "no estimate: " + arithmetic
    grid.add_row("arithmetic", Text(visible(arithmetic)))
    if f.evidence:
        ev = Text()
        for i, e in enumerate(f.evidence):
            if i:
                ev.append("\n")
            ev.append(f"line {e.line_no}: ", style="cyan")
            ev.append(visible(e.text))
        grid.add_row("evidence", ev)
    console.print(grid)
    console.print()


def _context_line(ga: InputAdvice) -> str:
    c = ga.context
    parts = []
    if ga.folder:
        parts.append(f"run folder of {ga.boots:,} boot{'s' if ga.boots != 1 else ''}")
    elif ga.boots > 1:
        parts.append(f"{ga.boots:,} boots in one input")
    if c.target:
        parts.append(f"target {c.target}")
    rates = ga.rates
    if c.baud:
        parts.append(f"console {c.baud} baud")
    elif rates:
        parts.append(f"console {', '.join(rates)} baud (the kernel command line's console=)")
    elif ga.console:  # systemd's figures alone went through no console
        parts.append("console baud unknown")
    return " · ".join(parts) or "no console output in this input (a side file's own figures)"


def _boot_findings(ba: BootAdvice, console: Console, which: str) -> None:
    b = ba.boot.boot
    console.print(Text(f"{which} · lines {b.first_line}–{b.last_line}", style="bold"))
    if not ba.findings:
        console.print(Text("no findings: no rule found anything to change in this boot", style="dim"))
        console.print()
        return
    for n, f in enumerate(ba.findings, 1):
        _finding(console, n, f)


def _merged(ms: Sequence[MergedFinding], console: Console) -> None:
    console.print(Text(f"findings merged over {ms[0].boots:,} boots, worst median saving first "
                       "(evidence lines are those of the boot named)", style="bold"))
    for n, m in enumerate(ms, 1):
        seen = f"seen in {m.seen:,} of {m.boots:,} boots; shown from boot {m.boot + 1}"
        _finding(console, n, m.finding, m.saving, seen)


def _summary(ga: InputAdvice, console: Console) -> None:
    """One line per finding of an input, worst first: number, saving, confidence, the change."""
    items: list[tuple[Finding, Stat | None, str]]
    if ga.merged:
        items = [(m.finding, m.saving, f"{m.seen}/{m.boots}") for m in ga.merged]
    else:
        items = [(f, None, "") for f in (ga.only.findings if ga.only else ())]
    if not items:
        return
    auto = sum(1 for f, _, _ in items if f.change.automatic)
    rows: list[list[str | Text]] = []
    for n, (f, st, seen) in enumerate(items, 1):
        saving = short(st.median) if st is not None else ("no estimate" if f.saving_ns is None else short(f.saving_ns))
        conf = Text(f.confidence.value, style=_CONF_STYLE.get(f.confidence.value, ""))
        change = f"{_KIND_SHORT.get(f.change.kind.value, f.change.kind.value)}: {f.change.value}"
        rows.append([str(n), saving, conf, seen, Text(visible(change))])
    if ga.merged and all(m.seen == m.boots for m in ga.merged):
        for r in rows:
            r[3] = ""  # found in every boot: the column would say n/n on every row
    several = ga.boots > 1 and not ga.merged  # one finding list per boot: numbers go on
    every = bool(ga.merged) and not rows[0][3]
    title = (f"{len(items)} finding{'s' if len(items) != 1 else ''}{', boot by boot' if several else ''}"
             f"{', each in every boot' if every else ''}, largest saving first; {auto} automatic")
    cols = (("#", "right"), ("saving", "right"), ("confidence", "left"), ("boots", "right"), ("change", "left"))
    console.print(fit_table(title, cols, rows, console.width, flex=(4,), keep=(0, 1, 2, 4)))


def _header(ga: InputAdvice, console: Console) -> None:
    console.rule(Text(visible(ga.name)))
    console.print(Text(visible(_context_line(ga)), style="dim"))


def render_advise(groups: Sequence[InputAdvice], console: Console) -> None:
    """Print a summary of every input's findings, then each finding in full: per boot, or merged
    over a run folder's boots."""
    for gi, ga in enumerate(groups):
        if gi:
            console.print()
        _header(ga, console)
        if not ga.boots:
            console.print(Text("no boot found in this input", style="dim"))
        elif not ga.found:
            console.print(Text("no findings: no rule found anything to change", style="dim"))
        else:
            _summary(ga, console)
    if not any(ga.found for ga in groups):
        return
    console.print()
    console.print(Text("Each finding in full", style="bold"))
    total = automatic = 0
    for gi, ga in enumerate(groups):
        if not ga.found:
            continue
        console.print()
        if len(groups) > 1:
            _header(ga, console)
        if ga.merged:
            _merged(ga.merged, console)
            total += len(ga.merged)
            automatic += sum(1 for m in ga.merged if m.finding.change.automatic)
            continue
        if ga.only is not None:
            ba = ga.only
            _boot_findings(ba, console, "boot 1 of 1")
            total += len(ba.findings)
            automatic += sum(1 for f in ba.findings if f.change.automatic)
    console.print(Text(f"{total} finding{'s' if total != 1 else ''}; {automatic} can be applied automatically "
                       "to a target bootlens controls (kernel command line, U-Boot variables, root filesystem "
                       "files)", style="dim"))


def warning_lines(groups: Sequence[InputAdvice]) -> list[str]:
    """The inputs' analysis warnings for standard error, each once per input: "N of M boots: ..."
    where several boots gave it."""
    out = []
    for ga in groups:
        n = ga.boots
        for w in ga.warnings:
            count = f"{w.boots} of {n} boots: " if n > 1 else ""
            out.append(visible(f"bootlens: warning: {ga.name}: {count}{w.text}"))
    return out
