"""strace/ltrace input: the parser on real public traces and traces made here by real tools,
the summary's figures against what grep says (tests/golden/strace/README.md), the placement on a
real qemu-arm64 console, the analyze/advise output, and bad input."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from bootlens.sources.strace.reader import pid_from_name, read_trace, sniff
from bootlens.sources.strace.args import unescape
from bootlens.sources.strace.summary import read_summary, summarize
from bootlens.sources.supplements import classify

G = Path(__file__).parent / "golden" / "strace"
NS = 1_000_000_000


def _summary(name: str):  # type: ignore[no-untyped-def]
    return summarize(read_trace((G / name).read_text(), name))


# ---------------------------------------------------------------------------- public traces

def test_timesyncd_library_search_storm_without_T() -> None:
    """systemd#5024: -f -tt, no -T, old open()/stat(): the search for libsystemd-shared."""
    tr = read_trace((G / "timesyncd-5024.txt").read_text())
    assert (tr.clock, tr.has_durations, tr.unparsed, len(tr.calls)) == ("wall", False, 0, 11)
    assert tr.calls[0].pid == 286 and tr.calls[0].t_ns == (15 * 3600 + 12 * 60 + 6) * NS + 713_695_000
    s = summarize(tr)
    (p,) = s.processes
    assert p.program == "systemd-timesyncd" and p.exit_code is None
    assert len(p.failed_paths) == 8  # grep -c ENOENT
    (search,) = p.searches
    assert search.library == "libsystemd-shared-232.so" and search.found is None  # the excerpt ends before
    # the access() of /etc/ld.so.nohwcap and /etc/ld.so.preload (lines 3, 5) are the loader's checks of
    # its own configuration, not a lookup: the search is the 6 opens and stats from line 6
    assert len(search.tried) == 6 and search.line_no == 6
    # without -T: each failed call's gap to the next call; the last has none: 24 + 22 + 20 + 21 + 21 us
    assert search.cost_ns == 108_000
    assert s.cost_source == "gaps"


def test_npm_install_path_walks() -> None:
    """straceprof's npm-install.log: -f -ttt with exec/exit only; 41 ENOENT execs in two walks."""
    tr = read_trace((G / "npm-install.txt").read_text())
    assert (tr.clock, tr.unparsed, tr.unfinished) == ("epoch", 0, 0)
    assert len(tr.calls) == 98 - 6  # 6 unfinished/resumed pairs joined
    s = summarize(tr)
    assert len(s.processes) == 24  # 24 pids (grep: 24 "exited with")
    walks = {n.what: n for n in s.needless if n.kind == "path-walk"}
    assert walks["node"].failed == 13 and walks["sh"].failed == 28  # 13 + 28 = 41 ENOENT
    # no -T: from the first failed execve (026.688591) to the one that worked (026.691061)
    assert walks["node"].cost_ns == 2_470_000
    node = s.process(20055)
    assert node is not None and node.program == "node" and node.exit_code == 0
    assert node.linkage is None and node.loader_ns is None  # an exec/exit-only trace cannot tell
    assert s.process(21115) is not None and s.process(21115).argv == ("sh", "-c", "node install.js")


def test_process_tree_events_clone_vfork() -> None:
    """strace-process-tree's test_events: unfinished clone resumed after the child's execve."""
    tr = read_trace((G / "process-tree-events.txt").read_text())
    assert tr.unparsed == 0 and len(tr.calls) == 7  # the tool's own expected count
    clone = next(c for c in tr.calls if c.name == "clone")
    assert clone.t_ns == (13 * 3600 + 53 * 60 + 27) * NS + 213_383_000  # stamped at its start
    assert clone.ret == "27370" and clone.dur_ns == 1_466_000 and "CLONE_VFORK" in clone.args
    s = summarize(tr)
    child = s.process(27370)
    assert child is not None and child.ppid == 27369 and child.program == "sh" and child.exit_code == 0
    assert child.argv == ("sh", "-c", "uname -p 2> /dev/null")


def test_vfork_split_unavailable_and_pid_form() -> None:
    tr = read_trace((G / "process-tree-vfork.txt").read_text())
    assert tr.unparsed == 0 and tr.clock == "wall"
    futex = next(c for c in tr.calls if c.name == "futex")
    assert futex.ret == "?" and futex.dur_ns is None  # "= ? <unavailable>"
    s = summarize(tr)
    assert s.process(230474) is not None and s.process(230474).ppid == 230473
    tr = read_trace((G / "process-tree-pidform.txt").read_text())
    assert [c.pid for c in tr.calls] == [27369, 123] and tr.clock == "none"


def test_ltrace_public_and_made_here() -> None:
    """A public plain ltrace (unfinished/resumed around malloc@libc.so.6) and ltrace -f -tt -T
    made here (Debian ltrace 0.7.3): vfork resumed in both processes, exec, SIGCHLD."""
    tr = read_trace((G / "ltrace-os-193.txt").read_text())
    assert (tr.tool, tr.unparsed, len(tr.calls)) == ("ltrace", 0, 7)
    assert next(c for c in tr.calls if c.name == "fopen").ret == "0x562983d1e2a0"
    tr = read_trace((G / "ltrace-sh-date.txt").read_text())
    assert (tr.tool, tr.clock, tr.has_durations, tr.unparsed) == ("ltrace", "wall", True, 0)
    s = summarize(tr)
    parent, child = s.process(29368), s.process(29369)
    assert parent is not None and child is not None
    assert child.ppid == 29368 and parent.children == (29369,)  # "<... vfork resumed> ) = 0x72b9"
    assert child.exit_code == 0 and parent.exit_code == 0
    assert child.exec_ns == (3 * 3600 + 47 * 60 + 28) * NS + 86_834_000  # "--- Called exec() ---"
    assert any(c.kind == "signal" and c.name == "SIGCHLD" for c in tr.calls)


# ----------------------------------------------------------------- made here by Debian's strace

def test_relative_times_are_summed() -> None:
    tr = read_trace((G / "host-f-r.txt").read_text())
    assert tr.clock == "relative" and tr.unparsed == 0
    stamps = [c.t_ns for c in tr.calls]
    assert stamps[0] == 0 and stamps[1] == 385_000 and stamps[2] == 385_000 + 341_000
    # the exit line, the last, is at the sum of every line's delta (awk '{s+=$2}': 0.027002)
    assert tr.calls[-1].kind == "exit" and tr.calls[-1].t_ns == 27_002_000


def test_yy_paths_and_killed() -> None:
    s = _summary("host-yy.txt")
    sh = s.roots()[0]
    assert sh.exit_code == 3 and sh.first_output is None  # fd 1 is a file (-yy says so), not a terminal
    cat = s.process(sh.children[0])
    assert cat is not None and cat.program == "cat" and cat.exit_code == 1
    assert ("openat", "/nonexistent", "ENOENT") in cat.failed_paths
    assert cat.first_output is None  # its stderr is /dev/null<char 1:3>
    k = _summary("host-killed.txt")
    assert [(p.killed_by, p.exit_code) for p in k.processes if p.killed_by] == [("SIGKILL", None)]


def test_ff_files_take_the_pid_from_the_name() -> None:
    files = sorted((G / "host-ff").iterdir())
    assert [pid_from_name(f.name) for f in files] == [1335, 1336, 1337]
    assert all(classify(str(f)) == "strace" for f in files)
    s = read_summary(files)
    assert s.clock == "epoch" and s.has_durations
    sh = s.process(1335)
    assert sh is not None and sh.children == (1336, 1337)
    echo = s.process(1337)
    assert echo is not None and echo.ppid == 1335 and echo.first_output == "APP READY\n"
    assert sh.loader_ns is not None and 0 < sh.loader_ns < 50_000_000


# -------------------------------------------------------------------- the reference target

def test_qemu_arm64_trace_figures() -> None:
    """The app start traced on qemu-arm64 (tests/strace_target.py): figures against grep."""
    s = _summary("qemu-arm64-app.strace")
    assert [(p.pid, p.ppid, p.program) for p in s.processes] == [
        (127, None, "rc.app"), (128, 127, "strace"), (129, 127, "app"), (130, 129, "cat")]
    strace = s.process(128)
    assert strace is not None
    assert [p.linkage for p in s.processes] == ["static", "dynamic", "static", "static"]  # busybox, strace
    (search,) = strace.searches
    # grep '^128 .*ENOENT': 24, less /etc/ld.so.preload (line 43, <0.000403>): the loader's check of its
    # configuration, made by every dynamic process, is no lookup
    assert search.found == "/lib/aarch64-linux-gnu/libc.so.6" and len(search.tried) == 23
    assert search.cost_ns == 8_592_000 - 403_000 and search.line_no == 44  # awk sum of their <...>
    # exec return (34.161097 + 0.003280) to getpid at 34.290228, its first call of its own
    assert strace.loader_ns == 290_228_000 - 164_377_000
    assert strace.first_output is None  # rc.app sent it to /dev/null
    app = s.process(129)
    assert app is not None and app.first_output == "uptime: 6.51 0.99\n"
    assert app.exec_to_output_ns == 471_507_000 - (371_191_000 + 2_535_000)
    assert [(n.kind, n.what, n.cost_ns) for n in s.needless] == [("shell", "/usr/bin/app", 371_191_000 - 335_294_000)]
    wait4 = next(t for t in s.totals() if t.name == "wait4")
    assert wait4.count == 6 and wait4.errors == 3


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bootlens", *args], capture_output=True, text=True, timeout=120)


def test_analyze_places_the_trace_on_the_console() -> None:
    console, trace = G / "qemu-arm64-console.txt", G / "qemu-arm64-app.strace"
    assert classify(str(trace)) == "strace" and classify(str(console)) is None
    r = _cli("analyze", "--json", str(console), str(trace))
    assert r.returncode == 0, r.stderr
    boot = json.loads(r.stdout)["boots"][0]
    st = boot["strace"]
    pl = st["placement"]
    assert (pl["marker"], pl["console_line"], pl["trace_line"], pl["clock"]) == ("uptime: 6.51 0.99", 254, 207, "host")
    # APP READY: console 10.884241, predicted 10.882697 + (34.473436 - 34.471507)
    (res,) = pl["residuals"]
    assert res["text"] == "APP READY" and res["console_line"] == 255 and res["residual_s"] == pytest.approx(-0.000385)
    procs = [e for e in boot["events"] if e["kind"] == "process"]
    assert [e["name"] for e in procs] == ["rc.app", "strace", "app", "cat"]
    # on the axis the console line "uptime: ..." (host 10.882697) is the trace's 34.471507;
    # the app was forked at 34.327590 (rc.app's clone), 143.917 ms before
    marker = next(e for e in boot["events"] if e["kind"] == "marker" and e["line"] == 254)
    app = next(e for e in procs if e["name"] == "app")
    assert marker["start_s"] - app["start_s"] == pytest.approx(0.143917, abs=1e-6)
    assert st["processes_added"] == 4 and "strace" in boot["formats"]
    text = _cli("analyze", str(console), str(trace)).stdout
    assert "libc.so.6 after 23 failed lookups, 8.2 ms (-T)" in text
    assert "residual at 'APP READY' (console line 255): -0.4 ms" in text
    assert all(len(ln) <= 80 for ln in text.splitlines())


def test_advise_figures_come_from_the_trace() -> None:
    r = _cli("advise", "--json", str(G / "qemu-arm64-console.txt"), str(G / "qemu-arm64-app.strace"))
    assert r.returncode == 0, r.stderr
    found = [f for i in json.loads(r.stdout)["inputs"] for b in i["boots"] for f in b["findings"]
             if f["rule"] == "strace.app_start"]
    savings = sorted(round(f["saving_s"], 6) for f in found)
    assert savings == [0.008189, 0.035897, round(0.125851 - 0.008189, 6)]


# ------------------------------------------------------------------------------- bad input

def test_console_logs_are_not_traces() -> None:
    golden = Path(__file__).parent / "golden"
    for f in sorted(golden.glob("*/*")):
        if f.is_file() and f.parent.name != "strace":
            assert not sniff(f.read_bytes()[:8192].decode("utf-8", "replace")), f


def test_bad_lines_are_counted_never_raised() -> None:
    lines = (G / "qemu-arm64-app.strace").read_text().splitlines()
    rnd = random.Random(14)
    for _ in range(200):
        cut = [ln[: rnd.randrange(len(ln) + 1)] if rnd.random() < 0.3 else ln for ln in rnd.sample(lines, 40)]
        cut.append("".join(chr(rnd.randrange(32, 0x2FF)) for _ in range(50)))
        tr = read_trace("\n".join(cut))
        summarize(tr)  # never raises
    # lines that made the first regexes backtrack for minutes: each is read from its end now
    for bad in ("a(" + ") = 1 (" * 20000, "x(" + " " * 60000 + "y <unfinished ...>", "1 " * 50000,
                "1 x(" + "(" * 60000 + ") = 0 (" + "(" * 1000, "<... x resumed>" + ') = "' * 20000,
                "execve(" + '\\"' * 30000 + ") = 0"):
        summarize(read_trace(bad + "\n" + bad))
    tr = read_trace("hello\n123 garbage(\n--- not a signal\n+++ exited sometime +++\n")
    assert tr.unparsed == 4 and tr.warnings and "4 line(s) not understood" in tr.warnings[0]


def test_unescape() -> None:
    assert unescape(r"a\nb\t\"c\\\x41\101") == 'a\nb\t"c\\AA'


# -------------------------------------------------- issue 28: made here by Debian's strace/ltrace

def test_shell_c_is_an_option_before_the_script() -> None:
    """`bash SCRIPT -c ARG` (a pyenv-style shim) passes -c to the script, not to the shell: no
    'needless exec'. `sh -ec CMD` groups -c with -e: a shell run for one command."""
    s = _summary("shim-exec.strace")  # bash shims/python3 -c '...' exec'ing python3 (32.271 ms later)
    assert [p.argv[:3] for p in s.processes] == [("/usr/bin/python3", "-c", 'print("APP READY")')]
    assert s.needless == ()
    s = _summary("shim-fork.strace")  # sh shims/run -c '...' forking python3 once
    assert s.process(26028) is not None and s.process(26028).children == (26029,)
    assert s.needless == ()
    s = _summary("sh-ec.strace")
    # sh's exec returns at 17.399247 + 0.000187, its vfork at 17.401123; the child exits at
    # 17.405289, sh at 17.405504: 1.689 + 0.215 ms
    assert [(n.kind, n.pid, n.what, n.cost_ns) for n in s.needless] == [
        ("shell", 26034, "/bin/echo APP READY", 1_689_000 + 215_000)]
    from bootlens.sources.strace.summary import shell_command

    assert shell_command(("sh", "-eo", "pipefail", "-c", "x")) == "x"
    assert shell_command(("bash", "--rcfile", "f", "-c", "y", "name")) == "y"
    assert shell_command(("sh", "--", "script", "-c")) is None
    assert shell_command(("sh", "-c")) == ""


def test_ld_so_preload_is_no_library_search() -> None:
    """Every dynamic process checks /etc/ld.so.preload (ENOENT), then finds libc through the
    cache: no search. Made here: host-ff (3 processes), host-yy (2)."""
    for s in (read_summary(sorted((G / "host-ff").iterdir())), _summary("host-yy.txt")):
        assert all(p.linkage == "dynamic" for p in s.processes)
        assert [x for p in s.processes for x in p.searches] == []
        assert all(("access", "/etc/ld.so.preload", "ENOENT") in p.failed_paths for p in s.processes)
    text = _cli("analyze", str(G / "qemu-arm64-console.txt"), str(G / "host-yy.txt")).stdout
    assert "library search" not in text


def test_ltrace_output_calls_place_the_trace() -> None:
    """ltrace -e ... -F (tests/golden/strace/README.md) of printf("APP READY %d\\n", 0), FORTIFY's
    __printf_chk (with its prototype), fwrite and coreutils ls's fwrite_unlocked, against the
    recording of the same run's terminal: each output is read as the console shows it."""
    from bootlens.core.lines import stamp_at
    from bootlens.read.reader import read_path
    from bootlens.sources.strace.summary import align

    tr = read_trace((G / "ltrace-fortify.txt").read_text())
    assert (tr.tool, tr.unparsed) == ("ltrace", 0)  # "sh->printf(": the caller is dropped
    s = summarize(tr)
    outs = {p.pid: [text for _, text, _ in p.outputs] for p in s.processes}
    assert outs == {30253: [], 30254: ["APP READY 0\n", "APP UP\n"], 30255: ["APP READY 2\n", "APP UP\n"],
                    30256: ["app.c"]}
    lines, _ = read_path(str(G / "ltrace-fortify-console.rec"))
    texts = [ln.text for ln in lines]
    placed = align(s, texts, [stamp_at(lines, i) for i in range(len(lines))], lines.first)
    pl = placed.placement
    assert pl is not None and (pl.marker, pl.console_line, pl.trace_line) == ("APP READY 0", 1, 6)
    # printf at 19:47:32.262360 is host 0.015274 (the recording's t of "APP READY 0")
    assert pl.offset_ns == 15_274_000 - (19 * 3600 + 47 * 60 + 32) * NS - 262_360_000
    assert [(t, ln, r) for t, ln, r in pl.residuals] == [
        ("APP UP", 2, 15_408_000 - 15_274_000 - 341_000), ("APP READY 2", 3, 21_850_000 - 15_274_000 - 6_558_000),
        ("APP UP", 4, 22_119_000 - 15_274_000 - 7_043_000), ("app.c", 5, 33_755_000 - 15_274_000 - 18_540_000)]


def test_ltrace_output_without_text_says_how_to_get_it() -> None:
    """Plain ltrace of a FORTIFY build: __printf_chk has no prototype in ltrace.conf, its format
    is an address; fwrite's text is read, and a warning says what to do for the other."""
    s = _summary("ltrace-chk-noproto.txt")
    (p,) = s.processes
    assert [text for _, text, _ in p.outputs] == ["APP UP\n"]
    assert any(w.startswith("ltrace shows 1 output call(s) without their text (1 __printf_chk)") and
               "int __printf_chk(int, format);" in w for w in s.warnings)


def test_strace_alone_is_a_boot_of_its_processes() -> None:
    """A trace given without a console: its processes on its own clock (0 = its first line,
    03:43:34.038710), the exec chain and the first terminal write, never refused."""
    r = _cli("analyze", "--json", str(G / "qemu-arm64-app.strace"))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["inputs"][0]["framing"] == "strace"
    boot = d["boots"][0]
    st = boot["strace"]
    assert st["placement"]["placed_by"] == "trace" and st["processes_added"] == 4
    procs = [(e["name"], e["start_s"]) for e in boot["events"] if e["kind"] == "process"]
    # app forked by rc.app's clone at 34.327590
    assert procs == [("rc.app", 0.0), ("strace", 0.106196), ("app", 0.28888), ("cat", 0.371285)]
    text = _cli("analyze", str(G / "qemu-arm64-app.strace")).stdout
    # 34.471507 - 34.038710
    assert "first terminal write at +0.433 s: 'uptime: 6.51 0.99' (129 app, line 207)" in text
    assert "needless exec: 129: a shell to run one command: sh -c /usr/bin/app (35.9 ms)" in text
    r = _cli("analyze", *map(str, sorted((G / "host-ff").iterdir())))  # strace -ff's files, alone
    assert r.returncode == 0 and "strace of the application's start: 3 processes" in r.stdout, r.stderr
    r = _cli("analyze", str(G / "ltrace-fortify.txt"))
    assert r.returncode == 0 and "ltrace of the application's start: 4 processes" in r.stdout, r.stderr
    assert "first terminal write at +0.006 s: 'APP READY 0'" in r.stdout  # 32.262360 - 32.256277
