"""``bootlens compare``: the library (bootlens.stats.compare) and the real command line.

The run folders here are written by hand: small printk logs with initcall_debug lines and
process trace events, one log per boot, whose durations are chosen so that a difference is far
beyond the noise of the boots (significant), inside it (not significant), under the floor, or
in between (need more boots). tests/test_significance.py runs the rule on real boots.
Corpus figures (tests/data/corpus): the arm64 grabserial log has one boot with
of_platform_default_populate_init at 108000 usecs, which the x86_64 initcall log lacks; the
x86_64 log has acpi_init at 104000 usecs, which the arm64 log ran in 0 usecs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from bootlens.stats.compare import HORIZON, Change, Comparison, Delta, Significance, compare_groups
from bootlens.stats.figures import boots_needed, stat
from bootlens.core.errors import UsageError
from bootlens.timeline.inputs import analyze_inputs
from bootlens.capture.run_folder import write_run_meta
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.render.compare_terminal import render_compare

HERE = Path(__file__).parent
CORPUS = HERE / "data" / "corpus"
GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
X86 = CORPUS / "qemu-x86_64-initcall.console.log"
READY = ParseOptions((MarkerSpec.parse("ready=APP READY"),))
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}

Initcalls = Sequence[tuple[str, int]]  # (function, usecs)
Procs = Sequence[tuple[str, int]]  # (executable, usecs from fork to exit)


def boot_log(initcalls: Initcalls, procs: Procs = ()) -> str:
    """One boot as printk lines: kernel start, initcalls in order, Run /init, forked
    processes one after the other, then APP READY."""
    def ts(us: int) -> str:
        return f"[{us // 1_000_000:5d}.{us % 1_000_000:06d}]"

    t = 100_000
    out = ["[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x411fd070]",
           "[    0.000000] Linux version 6.1.0-test (test@example) #1 SMP"]
    for name, us in initcalls:
        out.append(f"{ts(t)} calling  {name}+0x0/0x10 @ 1")
        t += us
        out.append(f"{ts(t)} initcall {name}+0x0/0x10 returned 0 after {us} usecs")
        t += 100
    t += 10_000
    out.append(f"{ts(t)} Run /init as init process")
    t += 1000
    out.append(f"{ts(t)} sched_process_exec: filename=/init pid=1 old_pid=1")
    for pid, (exe, us) in enumerate(procs, 80):
        t += 100
        out.append(f"{ts(t)} sched_process_fork: comm=init pid=1 child_comm=init child_pid={pid}")
        out.append(f"{ts(t)} sched_process_exec: filename={exe} pid={pid} old_pid={pid}")
        t += us
        out.append(f"{ts(t)} sched_process_exit: comm={exe.rsplit('/', 1)[-1]} pid={pid} prio=120")
    out.append(f"{ts(t + 1000)} APP READY")
    return "\n".join(out) + "\n"


def run_folder(path: Path, boots: Sequence[str], meta: bool = True) -> Path:
    """A run folder of plain logs (``boot-N.log``); with run.json remembering the ready marker."""
    path.mkdir(parents=True)
    for i, text in enumerate(boots, 1):
        (path / f"boot-{i}.log").write_text(text)
    if meta:
        write_run_meta(path, READY.markers)
    return path


def slow_boots(slow_us: Sequence[int], extra: Initcalls = (), procs: Procs = ()) -> list[str]:
    """One boot per value: fast_init at 500 us, slow_init at the value, then ``extra``."""
    return [boot_log([("fast_init", 500), ("slow_init", us), *extra], procs) for us in slow_us]


def compare_paths(*paths: Path | str, top: int = 20) -> Comparison:
    return compare_groups(analyze_inputs([str(p) for p in paths], READY), top)


def figure(c: Comparison, name: str, other: int = 1) -> Delta:
    """The delta of one figure (name as in boot_figures, sub-stages indented) for input ``other``."""
    return next(f for f in c.figures if f.name == name).deltas[other - 1]


def row(rows: Sequence[Delta], name: str) -> Delta:
    return next(r for r in rows if r.name == name)


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``bootlens ARGS...`` through ``python -m bootlens.cli``."""
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", *map(str, args)], capture_output=True,
                       timeout=120, env=ENV)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(), r.stderr.decode())


# ---- library ---------------------------------------------------------------------------------


def test_two_corpus_logs_single_boot_is_unknown() -> None:
    c = compare_paths(GRAB, X86, top=5)
    assert [s.label for s in c.inputs] == ["A", "B"]
    assert [s.boots for s in c.inputs] == [1, 1]
    k = figure(c, "kernel_init")
    assert k.change is Change.CHANGED and k.delta_ns is not None
    assert k.significance is Significance.UNKNOWN and k.reason == "1 boot a side: need 2 more boots a side"
    assert k.need_boots == 2 and k.p_value is None and k.test is None and k.threshold_ns is None
    assert k.delta_ns == k.other.median - k.baseline.median  # type: ignore[union-attr]
    # the grabserial log counts from its first byte, the console log from kernel start
    assert figure(c, "total (first byte → ready)").change is Change.NOT_MEASURED
    assert figure(c, "total (first byte → ready)").reason == "not measured in B"
    assert figure(c, "marker ready").change is Change.NOT_COMPARABLE
    assert figure(c, "bootloader").delta_ns is None  # U-Boot only on the arm64 console

    ic = c.pairs[0].initcalls
    assert ic.note is None and len(ic.rows) == 5
    assert ic.added > 0 and ic.removed > 0 and ic.names > ic.added + ic.removed
    impacts = [r.impact_ns for r in ic.rows]
    assert impacts == sorted(impacts, reverse=True)
    gone = row(ic.rows, "of_platform_default_populate_init")
    assert gone.change is Change.REMOVED and gone.other is None
    assert gone.delta_ns == -108_000_000 and gone.delta_pct == -100.0
    acpi = row(ic.rows, "acpi_init")
    assert acpi.change is Change.CHANGED and acpi.baseline is not None and acpi.baseline.median == 0
    assert acpi.delta_ns == 104_000_000 and acpi.delta_pct is None  # no percentage of 0
    assert c.pairs[0].processes.note == "no processes in either input"
    assert c.pairs[0].probes.rows  # both logs print probe times


def test_slower_initcall_far_beyond_the_noise_is_significant(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "a", slow_boots([100_000, 102_000, 101_000]))
    b = run_folder(tmp_path / "b", slow_boots([150_000, 151_000, 149_000]))
    c = compare_paths(a, b)
    assert [(s.folder, s.boots) for s in c.inputs] == [(True, 3), (True, 3)]
    ic = c.pairs[0].initcalls
    slow = ic.rows[0]
    assert slow.name == "slow_init" and slow.change is Change.CHANGED
    assert slow.delta_ns == 49_000_000  # 150000 - 101000 usecs
    assert slow.threshold_ns == 2_000_000  # both sides spread over 2 ms: shown, not the rule
    assert slow.significance is Significance.SIGNIFICANT and slow.test == "student"
    # 49 ms against a noise of 1 ms: t = 49 / sqrt(2/3) = 60 with 4 df; p ~ 5e-7, then
    # Benjamini-Hochberg over the table's 2 names doubles the smaller p
    assert slow.p_value is not None and 5e-7 < slow.p_value < 2e-6 and slow.reason.startswith("p = ")
    fast = row(ic.rows, "fast_init")
    assert fast.delta_ns == 0 and fast.significance is Significance.NOT_SIGNIFICANT
    assert ic.significant == 1 and (ic.added, ic.removed) == (0, 0)
    # the initcall sub-stage and the total follow
    assert figure(c, "  initcalls").significance is Significance.SIGNIFICANT
    tot = figure(c, "total (kernel start → ready)")
    assert tot.significance is Significance.SIGNIFICANT and tot.delta_ns == 49_000_000
    assert tot.delta_pct == pytest.approx(100 * 49_000 / (101_000 + 500 + 200 + 100_000 + 10_000 + 2_000))
    assert figure(c, "userspace").significance is Significance.NOT_SIGNIFICANT


def test_delta_inside_spread_is_not_significant(tmp_path: Path) -> None:
    # +3 us: whole multiples of 10 ms on one side would be a 10 ms clock (HZ=100 jiffies), and
    # a 5 ms difference within its tick (tests/test_ticks.py); a µs clock is what is meant here
    a = run_folder(tmp_path / "a", slow_boots([100_003, 140_003, 120_003]))
    b = run_folder(tmp_path / "b", slow_boots([125_003, 105_003, 135_003]))
    slow = row(compare_paths(a, b).pairs[0].initcalls.rows, "slow_init")
    assert slow.delta_ns == 5_000_000 and slow.threshold_ns == 40_000_000
    assert slow.significance is Significance.NOT_SIGNIFICANT and slow.need_boots is None
    assert slow.reason.startswith("within the noise (p = ")


def test_between_clear_and_noise_says_how_many_more_boots(tmp_path: Path) -> None:
    """25 ms against a noise of 10 ms a side: p ~ 0.04 with 3 boots a side, too weak for the
    rule, but the projection says how many boots would decide it."""
    a = run_folder(tmp_path / "a", slow_boots([100_000, 110_000, 120_000]))
    b = run_folder(tmp_path / "b", slow_boots([125_000, 135_000, 145_000]))
    c = compare_paths(a, b)
    tot = figure(c, "total (kernel start → ready)")
    assert tot.significance is Significance.UNKNOWN and tot.p_value is not None and 0.02 < tot.p_value < 0.06
    sa, sb = stat("a", [100, 110, 120]), stat("b", [125, 135, 145])
    assert sa is not None and sb is not None
    n = boots_needed(sa, sb, 25.0, 0.0005, HORIZON)
    assert n is not None and tot.need_boots == n - 3 and tot.reason.startswith(f"need {n - 3} more boots a side")
    # unequal sizes: Welch's test, and the side with fewer boots is named
    b4 = run_folder(tmp_path / "b4", slow_boots([125_000, 135_000, 145_000, 135_000, 130_000]))
    tot4 = figure(compare_paths(a, b4), "total (kernel start → ready)")
    assert tot4.test == "welch" and tot4.significance is Significance.UNKNOWN and " of A (" in tot4.reason


def test_a_difference_under_the_floor_is_not_significant_however_sure(tmp_path: Path) -> None:
    """0.5 ms more in every boot, with no noise at all: certain, and too small to matter
    (the floor is 1 ms, or 1% of the baseline median). Read off a µs clock: +3 us keeps the values
    off the 10 ms and 4 ms grids of a jiffies clock (tests/test_ticks.py)."""
    a = run_folder(tmp_path / "a", slow_boots([10_003] * 3))
    b = run_folder(tmp_path / "b", slow_boots([10_503] * 3))
    slow = row(compare_paths(a, b).pairs[0].initcalls.rows, "slow_init")
    assert slow.p_value == 0.0 and slow.floor_ns == 1_000_000
    assert slow.significance is Significance.NOT_SIGNIFICANT and slow.reason == "under the floor (p = 0)"
    c = compare_paths(a, run_folder(tmp_path / "c", slow_boots([12_003] * 3)))
    assert row(c.pairs[0].initcalls.rows, "slow_init").significance is Significance.SIGNIFICANT  # 2 ms


def test_single_boot_against_a_folder_is_unknown(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "a", slow_boots([100_000, 100_000]))
    one = tmp_path / "one.log"
    one.write_text(slow_boots([300_000])[0])
    slow = row(compare_paths(a, one).pairs[0].initcalls.rows, "slow_init")
    assert slow.delta_ns == 200_000_000
    # A's two boots show no noise at all: the projection from them asks for one boot more of B
    assert slow.significance is Significance.UNKNOWN and slow.threshold_ns is None and slow.p_value is None
    assert slow.reason == "need 1 more boot of B" and slow.need_boots == 1


def test_added_removed_initcalls_and_processes(tmp_path: Path) -> None:
    bb = "/bin/busybox"
    a = run_folder(tmp_path / "a", slow_boots([100_000] * 3, [("old_init", 30_000)], [(bb, 2000), (bb, 3000)]))
    b = run_folder(tmp_path / "b", slow_boots([100_000] * 3, [("new_init", 7_000)],
                                              [(bb, 2000), (bb, 3000), (bb, 4000), ("/usr/bin/app", 500)]))
    c = compare_paths(a, b)
    ic = c.pairs[0].initcalls
    assert (ic.added, ic.removed, ic.names) == (1, 1, 4)
    assert [r.name for r in ic.rows[:2]] == ["old_init", "new_init"]  # by |delta|
    old, new = ic.rows[0], ic.rows[1]
    assert old.change is Change.REMOVED and old.other is None and old.delta_ns == -30_000_000
    assert new.change is Change.ADDED and new.baseline is None and new.delta_ns == 7_000_000
    # the absent side is 0 ns in each of its boots: a spread of 0 against a steady 7 ms
    assert new.significance is Significance.SIGNIFICANT and new.threshold_ns == 0

    pr = c.pairs[0].processes
    assert pr.note is None and (pr.added, pr.removed) == (1, 0)
    busybox = row(pr.rows, "busybox")
    assert (busybox.baseline_count, busybox.other_count) == (2, 3)
    assert busybox.baseline is not None and busybox.baseline.median == 5_000_000  # 2 + 3 ms summed
    assert busybox.delta_ns == 4_000_000 and busybox.significance is Significance.SIGNIFICANT
    app = row(pr.rows, "app")
    assert app.change is Change.ADDED and app.baseline_count is None and app.other_count == 1
    assert "init" in [r.name for r in pr.rows]  # pid 1 never exits: counted, no time
    assert row(pr.rows, "init").delta_ns == 0


def test_name_missing_from_some_boots_counts_zero_there(tmp_path: Path) -> None:
    bb = ("/bin/busybox", 1000)
    a = run_folder(tmp_path / "a", [boot_log([("x_init", 10)], [bb, ("/bin/sleep", 50_000)]),
                                    boot_log([("x_init", 10)], [bb]), boot_log([("x_init", 10)], [bb])])
    b = run_folder(tmp_path / "b", slow_boots([1000] * 3, procs=[bb]))
    pr = compare_paths(a, b).pairs[0].processes
    sleep = row(pr.rows, "sleep")
    assert sleep.change is Change.REMOVED
    assert sleep.baseline is not None and (sleep.baseline.n, sleep.baseline.median) == (3, 0)
    assert sleep.baseline.max == 50_000_000 and sleep.baseline_count == 0
    assert sleep.delta_ns == 0 and sleep.significance is Significance.NOT_SIGNIFICANT


def test_top_cuts_rows_not_counts(tmp_path: Path) -> None:
    """--top cuts the rows of names that did not change significantly, never the count, and
    never a significant name: what the summary counts is shown (issue 28: '3 significant' and
    none of them among the rows). µs values (+3 us: off every jiffies grid)."""
    many = [(f"init_{i}", 1000 * (i + 1) + 3) for i in range(10)]
    a = run_folder(tmp_path / "a", slow_boots([1000] * 2, many))
    b = run_folder(tmp_path / "b", slow_boots([1000] * 2, [(n, 2 * us) for n, us in many]))
    ic = compare_paths(a, b, top=3).pairs[0].initcalls
    assert [r.name for r in ic.rows] == [f"init_{i}" for i in range(9, -1, -1)]  # the top 3, then 7 more
    assert ic.names == 12 and ic.significant == 10 and ic.more_significant == 7
    assert all(r.significance is Significance.SIGNIFICANT for r in ic.rows)  # fast_init, slow_init: cut


def test_three_inputs_each_against_the_first(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "a", slow_boots([100_000] * 2))
    b = run_folder(tmp_path / "b", slow_boots([50_000] * 2))
    c3 = run_folder(tmp_path / "c", slow_boots([100_000] * 2))
    c = compare_paths(a, b, c3)
    assert [p.other for p in c.pairs] == [1, 2]
    assert [len(f.stats) for f in c.figures] == [3] * len(c.figures)
    assert row(c.pairs[0].initcalls.rows, "slow_init").delta_ns == -50_000_000
    assert row(c.pairs[1].initcalls.rows, "slow_init").significance is Significance.NOT_SIGNIFICANT


def test_fewer_than_two_inputs_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        compare_groups(analyze_inputs([str(GRAB)], READY))


def test_terminal_rendering_escapes_and_marks(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "a", slow_boots([100_000, 102_000, 101_000], procs=[("/bin/[red]evil", 100)]))
    b = run_folder(tmp_path / "b", slow_boots([150_000, 151_000, 149_000], procs=[("/bin/[red]evil", 200)]))
    console = Console(record=True, width=120, highlight=False)
    render_compare(compare_paths(a, b), console)
    text = console.export_text()
    assert "[red]evil" in text  # a name from the log is text, never markup
    slow = next(line for line in text.splitlines() if line.startswith("slow_init"))
    assert slow.split()[1:] == ["101.0", "ms", "150.0", "ms", "+49.0", "ms", "+48.5%", "yes", "(p", "9e-7)"]
    fast = next(line for line in text.splitlines() if line.startswith("fast_init"))
    assert fast.split()[-3:] == ["no", "(<", "floor)"]  # 0 ms: under the floor
    # the headline first: the total, its change and its verdict
    assert text.splitlines()[0].startswith("B vs A · kernel start → ready: 213.9 ms → 263.0 ms (+49.1 ms, +23.0%)")
    assert "significant (p = " in "\n".join(text.splitlines()[:2])
    # the medians with their intervals: 3 boots, (min, max) at 75%
    assert "A: 3 boots, 75%" in text and "101.6 [100.6–102.6] ms" in text  # the initcalls sub-stage


# ---- command line ----------------------------------------------------------------------------


def test_cli_terminal_two_corpus_logs() -> None:
    r = cli("compare", GRAB, X86, "--marker", "ready=APP READY", "--top", "3")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    out = r.stdout
    assert "Stages, B vs A" in out and "Initcalls, B vs A: top 3 of" in out
    assert "need 2 more" in out and "not in B" in out
    assert "of_platform" in out and "−108.0 ms" in out and "absent" in out  # removed in B


def test_cli_json_shape(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "a", slow_boots([100_000, 102_000, 101_000]))
    b = run_folder(tmp_path / "b", slow_boots([150_000, 151_000, 149_000]), meta=False)
    # b has no run.json: --marker gives it the ready line (and overrides a's)
    r = cli("compare", a, b, "--json", "--marker", "ready=APP READY", "--top", "1")
    assert r.returncode == 0, r.stderr
    doc: dict[str, Any] = json.loads(r.stdout)
    assert doc["schema_version"] == 1 and doc["kind"] == "compare" and doc["top"] == 1
    rule = doc["significance_rule"]
    assert rule["min_boots"] == 2 and rule["alpha"] == 0.0005 and rule["floor_s"] == 0.001
    assert rule["floor_pct"] == 1.0 and rule["per_name_adjustment"] == "benjamini-hochberg"
    assert [(i["label"], i["boots"], i["baseline"]) for i in doc["inputs"]] == [("A", 3, True), ("B", 3, False)]
    names = [f["name"] for f in doc["figures"]]
    assert names[0] == "total (kernel start → ready)" and names[-1] == "marker ready"
    sub = next(f for f in doc["figures"] if f["name"] == "initcalls")
    assert sub["sub_stage"] is True
    total = doc["figures"][0]
    assert [s["n"] for s in total["stats"]] == [3, 3]
    assert total["stats"][0]["spread_s"] == pytest.approx(0.002)
    assert total["stats"][0]["median_ci_level"] == 0.75 and total["stats"][0]["median_ci_s"] == [
        pytest.approx(total["stats"][0]["min_s"]), pytest.approx(total["stats"][0]["max_s"])]
    d = total["deltas"][0]
    assert d["input"] == 1 and d["label"] == "B" and d["change"] == "changed"
    assert d["delta_s"] == pytest.approx(0.049) and d["spread_s"] == pytest.approx(0.002)
    assert d["significance"] == "significant" and d["test"] == "student" and d["need_boots"] is None
    assert d["p_value"] < 1e-5 and d["floor_s"] == pytest.approx(0.002137)  # 1% of A's median
    (cmp,) = doc["comparisons"]
    assert cmp["input"] == 1 and cmp["label"] == "B"
    ic = cmp["initcalls"]
    assert (ic["names"], ic["added"], ic["removed"], ic["significant"], ic["note"]) == (2, 0, 0, 1, None)
    (slow,) = ic["rows"]
    assert slow["name"] == "slow_init" and slow["baseline"]["median_s"] == pytest.approx(0.101)
    assert set(slow) >= {"other", "change", "delta_s", "delta_pct", "spread_s", "significance", "reason",
                         "p_value", "test", "floor_s", "need_boots"}
    assert "baseline_count" not in slow
    assert cmp["processes"]["rows"][0]["name"] == "init"
    assert "baseline_count" in cmp["processes"]["rows"][0]
    assert cmp["probes"]["note"] == "no probes in either input"


@pytest.mark.parametrize("args, needle", [
    (("compare", GRAB), "at least two inputs"),
    (("compare", GRAB, "/nonexistent/boot.log"), "/nonexistent/boot.log"),
    (("compare", GRAB, X86, "--marker", "ready"), "NAME=REGEX"),
])
def test_cli_errors_are_one_line(args: tuple[str | Path, ...], needle: str) -> None:
    r = cli(*args)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("bootlens: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert needle in r.stderr


def test_cli_empty_folder_is_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    r = cli("compare", GRAB, tmp_path / "empty")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no recordings" in r.stderr


def test_systemd_units_compared_per_unit() -> None:
    """Two real systemd boots of the corpus (wild 30: Arch Linux, systemd 229 through kmsg; wild 14:
    Orange Pi Zero 3, kmsg and console): a table per unit, units only one side ran counted as added
    or removed; a pair of logs without systemd prints no unit table at all."""
    from conftest import wild_log

    groups = analyze_inputs([str(wild_log("30")), str(wild_log("14"))])
    pair = compare_groups(groups).pairs[0]
    u = pair.units
    assert u.note is None and u.names >= 20 and u.added > 0 and u.removed > 0
    # both boots start their journal: the one unit both sides name is compared, not added/removed
    assert u.names - u.added - u.removed >= 1
    con = Console(width=80, record=True)
    render_compare(compare_groups(groups), con)
    assert "Units, B vs A" in con.export_text()
    plain = analyze_inputs([str(wild_log("01")), str(wild_log("04"))])
    assert compare_groups(plain).pairs[0].units.note is not None
    con = Console(width=80, record=True)
    render_compare(compare_groups(plain), con)
    assert "Units" not in con.export_text()
    # one side with systemd, one without: said, not left out
    one = analyze_inputs([str(wild_log("30")), str(wild_log("01"))])
    con = Console(width=80, record=True)
    render_compare(compare_groups(one), con)
    assert "Units, B vs A: not compared (no units in B)" in con.export_text()
