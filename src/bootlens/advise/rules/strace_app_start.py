"""What an strace of the application's start shows (given with the log: ``bootlens analyze
console.log strace.txt``): the loader's library search storm, the loader's own time, and execs a
direct call would have saved.

Every figure is the trace's measured ``-T`` time (without ``-T``: the time to the process's next
call, an upper bound, and the confidence drops). A traced program runs slower than an untraced
one (strace stops it at every call), so the saving without strace is smaller: the arithmetic
says so. The userspace.dynamic_linking rule reads the ELF header or a guess from the console;
this one rests on the calls themselves.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from ...core.model import NS_PER_MS
from ...sources.strace.summary import Summary
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Evidence, Finding, Rule
from ..evidence import evidence, secs

MIN_LOOKUPS = 3  # fewer failed lookups than this is a normal search (one hwcap dir)
MIN_LOADER_NS = 5 * NS_PER_MS  # below this the loader is not worth a relink
TRACED = "times measured under strace, which stops the program at every call: the untraced saving is smaller"
STATIC_TRADEOFF = ("a static binary carries its own copy of the libraries (larger, and a library fix needs a "
                   "relink; LGPL libraries need their object files shipped); prelinking must be redone whenever a "
                   "library changes")


def _anchor(boot: BootAnalysis, s: Summary) -> tuple[Evidence, ...]:
    return evidence(boot.boot, [s.placement.console_line if s.placement else None])


def _confidence(s: Summary) -> Confidence:
    return Confidence.MEDIUM if s.has_durations else Confidence.LOW


def _cost_word(s: Summary) -> str:
    return "-T" if s.has_durations else "the time to the next call (no -T: an upper bound)"


@REGISTRY.register
class StraceAppStart(Rule):
    """Library search storms, loader time and needless execs in an strace of the app's start."""

    id = "strace.app_start"
    title = "what an strace of the application's start shows"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        sup = boot.supplement
        s = sup.strace if sup is not None else None
        if s is None or s.tool != "strace":
            return
        yield from self._searches(boot, s)
        yield from self._loaders(boot, s)
        yield from self._execs(boot, s)

    def _searches(self, boot: BootAnalysis, s: Summary) -> Iterable[Finding]:
        for p in s.processes:
            storms = [x for x in p.searches if len(x.tried) >= MIN_LOOKUPS]
            if not storms:
                continue
            cost = sum(x.cost_ns or 0 for x in storms)
            tried = sum(len(x.tried) for x in storms)
            dirs = list(dict.fromkeys(t.rsplit("/", 1)[0] for x in storms for t in x.tried
                                      if not t.startswith("/etc/ld.so")))
            libs = ", ".join(f"{x.library} ({len(x.tried)} lookups, {secs(x.cost_ns or 0)}, trace line {x.line_no})"
                             for x in storms[:4])
            found = sorted({x.found.rsplit("/", 1)[0] for x in storms if x.found})
            yield Finding(
                rule=self.id,
                title=f"{p.program} (pid {p.pid}): the loader tried {tried} paths in vain before finding "
                      f"{len(storms)} librar{'y' if len(storms) == 1 else 'ies'}",
                stage="userspace",
                saving_ns=cost,
                arithmetic=(f"sum of {_cost_word(s)} of the failed opens and stats: {libs}; found in "
                            f"{', '.join(found) or 'not found in the trace'}; {TRACED}"),
                confidence=_confidence(s),
                tradeoff="none for a fixed product image; a library moved later must be put back on the path",
                change=Change(ChangeKind.MANUAL, "library search path",
                              f"drop the directories that do not hold the libraries from LD_LIBRARY_PATH/RPATH "
                              f"({', '.join(dirs[:4])}{' …' if len(dirs) > 4 else ''}) and run ldconfig when the "
                              "image is built so /etc/ld.so.cache names every library; or link statically"),
                evidence=_anchor(boot, s),
            )

    def _loaders(self, boot: BootAnalysis, s: Summary) -> Iterable[Finding]:
        for p in s.processes:
            if p.loader_ns is None or p.loader_ns < MIN_LOADER_NS:
                continue
            search = sum(x.cost_ns or 0 for x in p.searches if len(x.tried) >= MIN_LOOKUPS)
            saving = max(0, p.loader_ns - search)  # the search has its own finding
            life = None if p.exec_ns is None or p.end_ns is None else p.end_ns - p.exec_ns
            share = f" ({100 * p.loader_ns / life:.0f} % of its {secs(life)} from exec to exit)" if life else ""
            yield Finding(
                rule=self.id,
                title=f"{p.program} (pid {p.pid}) spends {secs(p.loader_ns)} in the dynamic loader{share}",
                stage="userspace",
                saving_ns=saving,
                arithmetic=(f"from execve's return to its first call the loader does not make (the process "
                            f"starts at trace line {p.line_no}): {secs(p.loader_ns)}, less the library search "
                            f"counted on its own ({secs(search)}) = {secs(saving)}; a static binary still maps "
                            f"itself, so this is an upper bound; {TRACED}"),
                confidence=Confidence.LOW,
                tradeoff=STATIC_TRADEOFF,
                change=Change(ChangeKind.MANUAL, f"link {p.program} statically",
                              f"link {p.exe or p.program} statically (-static; with musl or uClibc-ng it stays "
                              "small), or prelink it; with glibc at least -Wl,-z,now -Wl,--hash-style=gnu and "
                              "fewer libraries"),
                evidence=_anchor(boot, s),
            )

    def _execs(self, boot: BootAnalysis, s: Summary) -> Iterable[Finding]:
        walks = [n for n in s.needless if n.kind == "path-walk"]
        shells = [n for n in s.needless if n.kind == "shell"]
        if walks:
            cost = sum(n.cost_ns or 0 for n in walks)
            what = ", ".join(f"{n.what} ({n.failed} failed, pid {n.pid}, trace line {n.line_no})" for n in walks[:4])
            yield Finding(
                rule=self.id,
                title=f"{sum(n.failed for n in walks)} failed execve calls walking PATH",
                stage="userspace",
                saving_ns=cost,
                arithmetic=f"sum of {_cost_word(s)} of the failed execve calls: {what}; {TRACED}",
                confidence=_confidence(s),
                tradeoff="an absolute path ties the script to where the program is installed",
                change=Change(ChangeKind.MANUAL, "exec by absolute path",
                              "call the programs by their absolute path (or put their directory first in PATH)"),
                evidence=_anchor(boot, s),
            )
        if shells:
            cost = sum(n.cost_ns or 0 for n in shells)
            what = ", ".join(f"sh -c {n.what!r} (pid {n.pid}, {secs(n.cost_ns or 0)})" for n in shells[:4])
            yield Finding(
                rule=self.id,
                title=f"{len(shells)} shell{'s' if len(shells) > 1 else ''} started to run one command",
                stage="userspace",
                saving_ns=cost,
                arithmetic=(f"the shell's own time around its one command (exec to the command's exec, or its "
                            f"start and end around its one child): {what}; {TRACED}"),
                confidence=_confidence(s),
                tradeoff="none when the command needs no shell syntax (no pipes, redirections or variables)",
                change=Change(ChangeKind.MANUAL, "exec the command directly",
                              "run the command itself instead of `sh -c CMD` (`exec CMD` in a script, the program "
                              "in inittab or ExecStart=)"),
                evidence=_anchor(boot, s),
            )
