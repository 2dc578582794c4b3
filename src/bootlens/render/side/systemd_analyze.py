"""systemd-analyze's outputs given with the log (and what else came with it: a bootchart, a
boot-data file's kernel config): what they say beside bootlens's own figures, in the terminal
summary and in ``analyze --json``'s ``systemd_analyze`` object (docs/json.md), and their critical
chains under bootlens's (``analyze --critical-chain``). ``text`` and ``json`` are the side
renderer's hooks (:mod:`bootlens.render.side`): asked of every boot that came with side files."""

from __future__ import annotations

from ...core.units import duration
from ..visible import visible
from ...sources.systemd_analyze import ALONE

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import Any

    from rich.console import Console

    from ...timeline.analyze import BootAnalysis
    from ...timeline.chain import Chain


def _sec(ns: int | None) -> str:
    """A time in seconds to the microsecond, its unit said by the text around it."""
    return duration(ns, {"s": 6}, sep=None)


def _dur(ns: int | None) -> str:
    """A systemd unit's time beside systemd's own: 2.089 s, 84.102 ms (a negative one in ms)."""
    return duration(ns, {"s": 3, "ms": 3}, by_magnitude=False)


def _s(ns: int) -> str:
    """systemd-analyze's form: 1.234s."""
    return duration(ns, {"s": 3}, sep="")


def _js(ns: int | None) -> float | None:
    return None if ns is None else ns / 1e9


def supplement_lines(b: BootAnalysis, worst: int = 3) -> list[str]:
    """What the systemd-analyze outputs given with the log say beside bootlens's own figures:
    time per stage, the blame check (how many units agree, the worst misses), what was added."""
    sup = b.supplement
    if sup is None:
        return []
    from ...timeline.agreement import blame_check, time_rows  # here: a log without supplements never needs it
    if b.boot.split_reason == ALONE:  # systemd's figures are the boot's: nothing to set them beside
        return [f"systemd's own figures (systemd-analyze {', '.join(w for w, _ in sup.sources)}), no boot log: "
                "every stage is systemd's, on its monotonic clock"]
    out: list[str] = []
    rows = time_rows(b)
    if rows:
        out.append("systemd-analyze time: " + " · ".join(
            f"{r.name} {_dur(r.systemd_ns)} (bootlens {'not measured' if r.bootlens_ns is None else _dur(r.bootlens_ns)})"
            for r in rows))
    check = blame_check(b)
    if check is not None:
        within, big = check.significant()
        line = (f"systemd-analyze blame: {check.within} of {len(check.rows)} units within 10 % or 50 ms of "
                f"bootlens's ({check.matched} measured; over 100 ms: {within} of {big})")
        miss = check.worst(worst)
        if miss:
            line += "; worst: " + ", ".join(f"{r.unit} {_dur(r.bootlens_ns)} vs {_dur(r.blame_ns)}" for r in miss)
        unseen = [r.unit for r in check.rows if r.bootlens_ns is None]
        if unseen:
            line += f"; not in the log: {', '.join(unseen[:worst])}" + (" …" if len(unseen) > worst else "")
        out.append(line)
    if sup.added_units:
        out.append(f"{sup.added_units} units from systemd-analyze plot (the log has none), on the kernel clock")
    if sup.added_processes:
        out.append(f"{sup.added_processes} processes from the bootchart, on the uptime clock (approximate)")
    return out


def systemd_chain_lines(b: BootAnalysis, chain: Chain) -> list[str]:
    """Below bootlens's chain: each systemd-analyze critical-chain given with the log, its "@"
    also on this boot's axis, and how far it agrees with bootlens's."""
    from ...timeline.agreement import chain_agreement, userspace_start

    sup = b.supplement
    if sup is None or not sup.chains:
        return []
    base = userspace_start(b)
    out: list[str] = []
    for c in sup.chains:
        if not c.nodes:
            continue
        out.append("")
        out.append("systemd-analyze says (its @ from the start of user space" +
                   (f", at {_sec(base)} s on this axis; = the axis time):" if base is not None else "):"))
        for n in c.nodes:
            at = "" if n.at_ns is None else f" @{_s(n.at_ns)}" + (
                f" (= {duration(base + n.at_ns, {'s': 3}, sep=None)})" if base is not None else "")
            plus = "" if n.duration_ns is None else f" +{_s(n.duration_ns)}"
            out.append(visible(("  " * (n.depth - 1) + "└─" if n.depth else "") + n.unit + at + plus))
        _, said = chain_agreement([n.unit for n in c.nodes], chain.units())
        out.append(visible(f"bootlens's chain and systemd-analyze's: {said}"))
    return out


def supplement_dict(b: BootAnalysis) -> dict[str, Any]:
    """What came with the log (systemd-analyze outputs, a boot-data file, a bootchart) and how
    bootlens's own figures compare with systemd's: time per stage, blame per unit, the chain."""
    from ...timeline.agreement import blame_check, time_rows

    sup = b.supplement
    assert sup is not None
    st = sup.startup
    check = blame_check(b)
    sig = check.significant() if check is not None else (0, 0)
    return {
        "sources": [{"what": w, "path": p} for w, p in sup.sources],
        "time": None if st is None else {
            "firmware_s": _js(st.firmware_ns), "loader_s": _js(st.loader_ns), "kernel_s": _js(st.kernel_ns),
            "initrd_s": _js(st.initrd_ns), "userspace_s": _js(st.userspace_ns), "total_s": _js(st.total_ns),
            "target": st.target, "target_s": _js(st.target_ns),
            "compared": [{"name": r.name, "systemd_s": _js(r.systemd_ns), "bootlens_s": _js(r.bootlens_ns),
                          "bootlens_span": r.how} for r in time_rows(b)],
        },
        "blame": None if check is None else {
            "tolerance": "10 % or 50 ms",
            "units": len(check.rows), "measured": check.matched, "within": check.within,
            "over_100ms": sig[1], "over_100ms_within": sig[0],
            "rows": [{"unit": r.unit, "bootlens_s": _js(r.bootlens_ns), "blame_s": _js(r.blame_ns),
                      "within": r.within, "line": r.line_no} for r in check.rows],
        },
        "critical_chains": [[{"unit": n.unit, "at_s": _js(n.at_ns), "duration_s": _js(n.duration_ns),
                              "depth": n.depth} for n in c.nodes] for c in sup.chains],
        "dump_units": len(sup.dump.units) if sup.dump is not None else None,
        "plot_units": len(sup.plot.units) if sup.plot is not None else None,
        "units_from_plot": sup.added_units,
        "processes_from_bootchart": sup.added_processes,
        "bootchart": None if sup.bootchart is None else {
            "collector": sup.bootchart.collector, "processes": len(sup.bootchart.processes),
            "cpu_samples": len(sup.bootchart.cpu), "disk_samples": len(sup.bootchart.disk)},
        "kconfig": len(sup.kconfig) or None,
    }


def systemd_chain_dict(b: BootAnalysis, chain: Chain) -> dict[str, Any]:
    """``analyze --critical-chain --json``: the systemd-analyze chains given with the log, "@"
    from the start of user space and on the boot's axis, and their agreement with bootlens's."""
    from ...timeline.agreement import chain_agreement, userspace_start

    sup = b.supplement
    if sup is None or not sup.chains:
        return {}
    base = userspace_start(b)
    out = []
    for c in sup.chains:
        same, said = chain_agreement([n.unit for n in c.nodes], chain.units())
        out.append({
            "nodes": [{"unit": n.unit, "depth": n.depth, "at_userspace_s": _js(n.at_ns),
                       "at_s": _js(base + n.at_ns) if base is not None and n.at_ns is not None else None,
                       "duration_s": _js(n.duration_ns)} for n in c.nodes],
            "agree_units": same, "agreement": said})
    return {"systemd_analyze": out}


def text(b: BootAnalysis, console: Console, top: int) -> None:
    from rich.text import Text

    for line in supplement_lines(b):
        console.print(Text(visible(line)))


def json(b: BootAnalysis) -> dict[str, Any]:
    return {"systemd_analyze": supplement_dict(b)}
