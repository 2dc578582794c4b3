"""Fork-heavy init scripts: many short processes (cat, grep, expr, cut, subshells) doing what the
shell's builtins do without a fork.

On a slow CPU every fork + exec of busybox costs milliseconds (page tables copied, the binary
mapped, the applet started); a builtin costs microseconds. The rewrite is done for a handful of
idioms whose builtin form means exactly the same (:data:`IDIOMS`); a script that uses others gets
the finding with a described edit instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding
from ..evidence import evidence, secs
from ..userspace import (ProcessRule, NOT_MEASURED, SCRIPT_MODE, Proc, ProcTree, commands, known_scripts,
                         proc_evidence, ready_marker, rootfs_key, run_init_line, script_text, sharing_note, union_ns)

# Programs a shell script commonly forks for a job its builtins can do ([, test, echo, printf and
# true are builtins of busybox ash, dash and bash: they appear only when run in a subshell).
SHORT_TOOLS = frozenset({"echo", "printf", "[", "test", "true", "false", "cat", "grep", "egrep", "fgrep", "expr",
                         "cut", "tr", "uname", "basename", "dirname", "head", "tail", "wc", "seq", "sed"})
MIN_FORKS = 5  # below this a script is not "fork-heavy": the saving would be in the noise
# a fixed string that means the same as a grep regex and inside a shell glob
WORD = r"[A-Za-z0-9_,:=/+-]+"
# files of one line, where `read` (first line) sees what `grep` (every line) sees
ONE_LINE_FILE = r"/proc/cmdline|/proc/sys/[\w./-]+|/sys/[\w./:-]+"
FORKING = re.compile(r"\$\((?!\()|`|(?<!\|)\|(?!\|)|(?<![\w.-])(?:" + "|".join(
    re.escape(t) for t in sorted(SHORT_TOOLS - {"echo", "printf", "[", "test", "true", "false"})) + r")(?![\w.-])")


def _case(subject: str, word: str) -> str:
    return f'case "{subject}" in *{word}*) true ;; *) false ;; esac'


# (what it replaces, pattern, replacement): each replacement means exactly what the original did
IDIOMS: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    ("$(expr $n + 1) -> $((n + 1))",
     re.compile(r"(?:\$\(expr|`expr) +\$\{?(\w+)\}? +([+-]) +(\d+) *(?:\)|`)"),
     lambda m: f"$(({m[1]} {m[2]} {m[3]}))"),
    ("$(uname -r | cut -d- -f1) -> read < /proc/sys/kernel/osrelease; ${v%%-*}",
     re.compile(r"^(\s*)(\w+)=(?:\$\(uname -r *\| *cut -d *([\"']?)(.)\3 *-f *1\))[ \t]*$", re.M),
     lambda m: f"{m[1]}read -r {m[2]} < /proc/sys/kernel/osrelease; {m[2]}=${{{m[2]}%%{m[4]}*}}"),
    ("$(uname -r) -> read < /proc/sys/kernel/osrelease",
     re.compile(r"^(\s*)(\w+)=\$\(uname -r\)[ \t]*$", re.M),
     lambda m: f"{m[1]}read -r {m[2]} < /proc/sys/kernel/osrelease"),
    ("$(cat FILE) -> read < FILE (one-line /proc and /sys files)",
     re.compile(r"^(\s*)(\w+)=\$\(cat (" + ONE_LINE_FILE + r")\)[ \t]*$", re.M),
     lambda m: f"{m[1]}read -r {m[2]} < {m[3]}"),
    ("cat FILE | grep -q WORD -> read < FILE; case",
     re.compile(r"(?:cat (" + ONE_LINE_FILE + r") *\| *grep -q|grep -q) +([\"']?)(" + WORD + r")\2(?: +("
                + ONE_LINE_FILE + r"))?(?=\s*(?:;|&&|\|\||$))", re.M),
     lambda m: (f"{{ read -r _bl_line < {m[1] or m[4]}; {_case('$_bl_line', m[3])}; }}"
                if (m[1] or m[4]) else m[0])),
    ('echo "$v" | grep -q WORD -> case "$v" in *WORD*)',
     re.compile(r"echo +\"?\$\{?(\w+)\}?\"? *\| *grep -q +([\"']?)(" + WORD + r")\2(?=\s*(?:;|&&|\|\||$))", re.M),
     lambda m: _case("$" + m[1], m[3])),
)


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A script rewritten with builtins: the new text, the idioms used, and what still forks."""

    text: str
    used: tuple[str, ...]
    left: tuple[str, ...]  # command lines that still fork


def rewrite(text: str) -> Rewrite:
    """``text`` with every known idiom replaced by its builtin form (comment lines untouched)."""
    used: list[str] = []
    out: list[str] = []
    for ln in text.splitlines(keepends=True):
        if ln.strip().startswith("#") or not ln.strip():
            out.append(ln)
            continue
        for name, pat, repl in IDIOMS:
            new = pat.sub(repl, ln)
            if new != ln:
                used.append(name)
                ln = new
        out.append(ln)
    new_text = "".join(out)
    left = tuple(c for c in commands(new_text) if FORKING.search(c))
    return Rewrite(new_text, tuple(dict.fromkeys(used)), left)


def _is_short(script: Proc, p: Proc) -> bool:
    """A child the script forked for a job builtins could do: a short tool, or a subshell (a
    copy of the script's shell that never exec'd: command substitution, a pipeline stage)."""
    return p.name in SHORT_TOOLS or (p.exe is None and p.name == script.name)


@REGISTRY.register
class ForkHeavyScript(ProcessRule):
    """An init script whose time goes into forking short processes."""

    id = "userspace.fork_heavy"
    title = "fork-heavy init script"


    def _measured(self, boot: BootAnalysis, ctx: Context, tree: ProcTree) -> Iterable[Finding]:
        ready = ready_marker(boot)
        for script in tree.scripts():
            kids = [p for p in tree.children(script) if _is_short(script, p) and p.end_ns is not None
                    and (ready is None or (p.end_ns or 0) <= ready[1])]
            if len(kids) >= MIN_FORKS:
                yield self._finding(boot, ctx, tree, script, kids)

    def _finding(self, boot: BootAnalysis, ctx: Context, tree: ProcTree, script: Proc, kids: list[Proc]) -> Finding:
        path = script.script_path or script.name
        everything = list(kids)
        for k in kids:  # what the subshells forked in turn (uname | cut inside $(...))
            everything += tree.children(k)
        counts: dict[str, int] = {}
        for p in everything:
            label = "subshell" if p.exe is None and p.name == script.name else p.name
            counts[label] = counts.get(label, 0) + 1
        tally = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in sorted(counts.items(), key=lambda kv: -kv[1]))
        first, last = min(k.start_ns for k in kids), max(k.end_ns or 0 for k in kids)
        others = [p for p in tree.children(script) if p not in kids and p.end_ns is not None
                  and p.start_ns < last and (p.end_ns or 0) > first]
        other_ns = union_ns((max(p.start_ns, first), min(p.end_ns or 0, last)) for p in others)
        busy = union_ns((k.start_ns, k.end_ns or k.start_ns) for k in kids)
        saving = max(0, last - first - other_ns)
        arithmetic = (f"{len(kids)} forks from {path} ({len(everything)} processes: {tally}); from the first "
                      f"fork (line {min(kids, key=lambda k: k.start_ns).line_no}) to the last exit (line "
                      f"{max(kids, key=lambda k: k.end_ns or 0).end_line_no}) {secs(last - first)}"
                      + (f" - {secs(other_ns)} in other commands" if other_ns else "")
                      + f"; the children themselves ran {secs(busy)} of it, the rest is the shell forking and "
                      f"reaping them; builtins do the same work in the shell itself, taken as 0: saving "
                      f"{secs(saving)} (the shell's start-up and its own work stay)")
        note = sharing_note(boot, tree, script)
        if note is not None:
            arithmetic += "; " + note
        text = script_text(ctx.rootfs_files, path)
        rw = rewrite(text) if text is not None else None
        if rw is not None and rw.used and not rw.left:
            change = Change(ChangeKind.OVERLAY, f"{path}: shell builtins",
                            f"rewrite {path} with shell builtins: " + "; ".join(rw.used),
                            ((rootfs_key(path), rw.text.encode(), SCRIPT_MODE),))
        else:
            left = f" (still forking: {'; '.join(rw.left[:3])})" if rw is not None and rw.left else ""
            change = Change(ChangeKind.MANUAL, f"{path}: shell builtins",
                            f"rewrite {path} with shell builtins{left}: $((n + 1)) for expr, `read -r v < FILE` "
                            "for $(cat FILE), `case \"$v\" in *WORD*)` for echo | grep -q, ${v%%-*} / ${v##*/} "
                            "for cut and basename; or merge the checks into one program")
        return Finding(
            rule=self.id,
            title=f"{path} forks {len(everything)} short processes ({tally})",
            stage="userspace",
            saving_ns=saving,
            arithmetic=arithmetic,
            confidence=Confidence.MEDIUM,
            tradeoff="none at run time when the rewrite means the same; the script becomes less familiar to "
                     "read, and builtins behave slightly differently from the tools on odd input (multi-line "
                     "files, regex characters), which the rewrite must respect",
            change=change,
            evidence=proc_evidence(boot, [script, kids[0], kids[-1]]),
        )

    def _from_scripts(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        """No process events: a known script whose idioms all have a builtin form."""
        for path, text in known_scripts(ctx.rootfs_files):
            rw = rewrite(text)
            if len(rw.used) < 2 or rw.left:
                continue
            yield Finding(
                rule=self.id,
                title=f"{path} forks short processes for work shell builtins do",
                stage="userspace",
                saving_ns=None,
                arithmetic=NOT_MEASURED,
                confidence=Confidence.MEDIUM,
                tradeoff="none at run time when the rewrite means the same; the script becomes less familiar",
                change=Change(ChangeKind.OVERLAY, f"{path}: shell builtins",
                              f"rewrite {path} with shell builtins: " + "; ".join(rw.used),
                              ((rootfs_key(path), rw.text.encode(), SCRIPT_MODE),)),
                evidence=evidence(boot.boot, [run_init_line(boot)]),
            )
            return
