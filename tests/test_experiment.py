"""bootlens experiment and optimize: change specs, combining changes, equal conditions, the
board hook protocol on a pty board, and real QEMU runs (slow; CI runs them)."""

from __future__ import annotations

import json
import os
import pty
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import pytest
from conftest import needs_qemu

from bootlens.advise import RuleRegistry
from bootlens.advise.base import Change, ChangeKind, Confidence, Context, Evidence, Finding, Rule
from bootlens.advise.rules.uboot_autoboot import AutobootDelay
from bootlens.timeline.analyze import BootAnalysis
from bootlens.stats.compare import Significance
from bootlens.experiment.experiment import (
    TRACE_APPEND, Agreement, Estimate, ExperimentError, Measured, agreement, combine,
    equalise, experiment, optimize, outcome, overlay_change, parse_try, read_applied, write_overlay,
)
from bootlens.core.model import Kind
from bootlens.targets.base import BootConfig, Target, TargetError, TargetOptions
from bootlens.targets.board import BoardTarget, Hook
from bootlens.targets.qemu import QemuTarget

CLI = [sys.executable, "-m", "bootlens.cli"]


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], capture_output=True, timeout=timeout)


# --- specs ---------------------------------------------------------------------------------


def test_try_specs_parse_into_changes(tmp_path: Path) -> None:
    sp = parse_try("nodelay=uboot-env:bootdelay=0")
    assert sp.name == "nodelay" and sp.change == Change(ChangeKind.UBOOT_ENV, "bootdelay=0",
                                                        "set the U-Boot variable bootdelay=0")
    sp = parse_try("q=cmdline:quiet loglevel=3")
    assert sp.change is not None and sp.change.kind is ChangeKind.CMDLINE and sp.change.value == "quiet loglevel=3"
    sp = parse_try("auto=rule:uboot.autoboot_delay")
    assert sp.change is None and sp.rule == "uboot.autoboot_delay"
    ov = tmp_path / "ov"
    (ov / "etc/init.d").mkdir(parents=True)
    (ov / "etc/init.d/S40settle").write_text("#!/bin/sh\n")
    (ov / "etc/init.d/S40settle").chmod(0o755)
    (ov / "etc/motd").write_text("hi\n")
    (ov / "etc/init.d/S99link").symlink_to("S40settle")
    sp = parse_try(f"nosleep=overlay:{ov}")
    assert sp.change is not None and sp.change.kind is ChangeKind.OVERLAY
    files = {p: (d, m) for p, d, m in sp.change.files}
    assert files["etc/init.d/S40settle"] == (b"#!/bin/sh\n", stat.S_IFREG | 0o755)
    assert files["etc/motd"][1] & 0o777 == 0o644 or files["etc/motd"][1] & 0o111 == 0
    assert files["etc/init.d/S99link"] == (b"S40settle", stat.S_IFLNK | 0o777)


@pytest.mark.parametrize("text, message", [
    ("nodelay", "expected NAME=CHANGE"),
    ("=cmdline:quiet", "expected NAME=CHANGE"),
    ("a/b=cmdline:quiet", "NAME names a folder"),
    ("baseline=cmdline:quiet", "is reserved"),
    ("x=bogus:1", "KIND one of cmdline, uboot-env, overlay, rule"),
    ("x=quiet", "KIND one of"),
    ("x=cmdline:", "empty or multi-line value"),
    ("x=uboot-env:bootdelay", "uboot-env takes NAME=VALUE"),
    ("x=kconfig:CONFIG_KERNEL_LZ4=y", "a kconfig change needs a kernel rebuild"),
    ("x=manual:edit the dts", "a manual change needs a manual edit"),
    ("x=overlay:/nonexistent/dir", "is not a directory"),
])
def test_bad_try_specs_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(ExperimentError, match=message) as e:
        parse_try(text)
    assert "\n" not in str(e.value)


def test_cli_refuses_bad_specs_before_booting(tmp_path: Path) -> None:
    r = run("experiment", "qemu-arm64", "--try", "x=kconfig:CONFIG_KERNEL_LZ4=y", "-o", str(tmp_path / "e"))
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1, err
    assert err.startswith("bootlens: error: --try 'x=kconfig:CONFIG_KERNEL_LZ4=y': a kconfig change needs a "
                          "kernel rebuild")
    assert not (tmp_path / "e").exists()
    r = run("experiment", "board", "--try", "q=cmdline:quiet", "--port", "/dev/null")
    assert r.returncode == 2 and b"board needs --port" in r.stderr and r.stderr.count(b"\n") == 1
    r = run("optimize", "board", "--port", "/dev/null", "--power-cycle", "true", "--hook", "true",
            "--append", "quiet")
    assert r.returncode == 2 and b"--append is for reference targets" in r.stderr
    for cmd in ("experiment", "optimize"):
        assert run(cmd, "--help").returncode == 0


# --- combining --------------------------------------------------------------------------------


def _ov(path: str, data: bytes, mode: int = 0o100755) -> Change:
    return Change(ChangeKind.OVERLAY, path.rsplit("/", 1)[-1], f"edit {path}", ((path, data, mode),))


def test_combine_joins_cmdline_merges_env_and_overlays() -> None:
    s = combine("all", [
        ("q", Change(ChangeKind.CMDLINE, "quiet", "")),
        ("lpj", Change(ChangeKind.CMDLINE, "lpj=1250000 quiet", "")),
        ("nodelay", Change(ChangeKind.UBOOT_ENV, "bootdelay=0", "")),
        ("silent", Change(ChangeKind.UBOOT_ENV, "silent=1", "")),
        ("nosleep", _ov("etc/init.d/S40settle", b"#!/bin/sh\n")),
        ("nomdev", _ov("/etc/init.d/S10mdev", b"#!/bin/sh\n:\n")),
    ])
    assert s.append == "quiet lpj=1250000"  # the same argument twice is passed once
    assert s.uboot_env == (("bootdelay", "0"), ("silent", "1")) and s.env_image == s.uboot_env
    assert [p for p, _, _ in s.files] == ["etc/init.d/S10mdev", "etc/init.d/S40settle"]
    assert s.notes == ()
    assert [lb for lb, _ in s.changes] == ["q", "lpj", "nodelay", "silent", "nosleep", "nomdev"]


def test_combine_conflicts_later_wins_and_says_so() -> None:
    s = combine("all", [
        ("a", _ov("etc/init.d/rcS", b"A")), ("b", _ov("etc/init.d/rcS", b"B")),
        ("d0", Change(ChangeKind.UBOOT_ENV, "bootdelay=0", "")),
        ("d1", Change(ChangeKind.UBOOT_ENV, "bootdelay=-2", "")),
        ("l3", Change(ChangeKind.CMDLINE, "loglevel=3", "")), ("l0", Change(ChangeKind.CMDLINE, "loglevel=0", "")),
    ])
    assert s.files == (("etc/init.d/rcS", b"B", 0o100755),)
    assert dict(s.uboot_env) == {"bootdelay": "-2"}
    assert s.append == "loglevel=3 loglevel=0"
    assert s.notes == (
        "etc/init.d/rcS: set by both a and b; b's version is used",
        "U-Boot variable bootdelay: d0 sets '0', d1 sets '-2'; d1's value is used",
        "kernel argument loglevel: l3 adds loglevel=3, l0 adds loglevel=0; both are passed and the kernel "
        "takes the last one (l0's)",
    )
    same = combine("x", [("a", _ov("etc/x", b"1")), ("b", _ov("etc/x", b"1"))])
    assert same.notes == ()  # the same content twice is no conflict


def test_combine_refuses_changes_it_cannot_apply() -> None:
    with pytest.raises(ExperimentError, match="edit: manual change 'x' needs a manual edit"):
        combine("all", [("edit", Change(ChangeKind.MANUAL, "x", ""))])
    with pytest.raises(ExperimentError, match="not a path inside the root filesystem"):
        combine("all", [("evil", _ov("../../etc/passwd", b"x"))])


def test_combine_merges_kconfig_lines() -> None:
    """A kernel from nothing (allnoconfig first) and a line on top of it; the later setting of a
    symbol wins, and the note says so."""
    base = Change(ChangeKind.KCONFIG, "allnoconfig + 2", "", kconfig=("allnoconfig", "CONFIG_A=y", "CONFIG_B=y"))
    s = combine("k", [("base", base), ("b-off", Change(ChangeKind.KCONFIG, "CONFIG_B=n", "")),
                      ("direct", Change(ChangeKind.BOOTLOADER, "direct", ""))])
    assert s.kconfig == ("allnoconfig", "CONFIG_A=y", "CONFIG_B=n")
    assert s.notes == ("CONFIG_B: base sets 'CONFIG_B=y', b-off sets 'CONFIG_B=n'; b-off's is used",)
    assert s.direct and s.boot_config(Path("f")).direct
    assert combine("plain", [("x", Change(ChangeKind.CMDLINE, "quiet", ""))]).kconfig == ()


def test_overlay_round_trip(tmp_path: Path) -> None:
    files = (("etc/init.d/S40settle", b"#!/bin/sh\n", 0o100755), ("etc/motd", b"hi", 0o644),
             ("etc/init.d/S99x", b"S40settle", stat.S_IFLNK | 0o777))
    write_overlay(files, tmp_path / "ov")
    back = overlay_change(tmp_path / "ov")
    assert {(p, d) for p, d, _ in back.files} == {(p, d) for p, d, _ in files}
    modes = {p: m for p, _, m in back.files}
    assert modes["etc/init.d/S40settle"] & 0o777 == 0o755 and modes["etc/motd"] & 0o777 == 0o644
    assert stat.S_ISLNK(modes["etc/init.d/S99x"])


def test_baseline_gets_an_env_image_when_a_change_sets_uboot_variables() -> None:
    base = combine("baseline", [])
    q = combine("q", [("q", Change(ChangeKind.CMDLINE, "quiet", ""))])
    nd = combine("nodelay", [("nodelay", Change(ChangeKind.UBOOT_ENV, "bootdelay=0", ""))])
    b2, q2, nd2 = equalise([base, q, nd], "2")
    assert b2.env_image == (("bootdelay", "2"),) and b2.uboot_env == ()  # the image, not a change
    assert q2.env_image == (("bootdelay", "2"),) and q2.append == "quiet"
    assert nd2 == nd
    assert b2.equalised and q2.equalised and not nd2.equalised
    assert b2.notes == () and "bootdelay=2 (U-Boot's default)" in b2.all_notes()[0]
    assert equalise([base, q], "2") == [base, q]  # nobody sets a variable: no image at all
    assert equalise([base, nd], None) == [base, nd]  # a board: nothing to equalise


@pytest.mark.skipif(not Path("/usr/lib/u-boot/qemu_arm64/u-boot.bin").exists(), reason="u-boot-qemu not installed")
def test_reference_target_default_bootdelay_is_read_from_uboot() -> None:
    from bootlens.targets import qemu as T

    tf = T.TargetFiles(T.TARGETS["qemu-arm64"], Path("k"), Path("i"), "v")
    assert QemuTarget(tf).default_bootdelay() == "2"
    x86 = T.TargetFiles(T.TARGETS["qemu-x86_64"], Path("k"), Path("i"), "v")
    assert QemuTarget(x86).default_bootdelay() is None
    with pytest.raises(TargetError, match="^n: qemu-x86_64 has no U-Boot environment"):
        QemuTarget(x86).check(combine("n", [("n", Change(ChangeKind.UBOOT_ENV, "bootdelay=0", ""))]).boot_config(Path("n")))


# --- estimate against measurement -----------------------------------------------------------


def _measured(total_ms: Sequence[int], stage_ms: Sequence[int], ready: int | None = None) -> Measured:
    from bootlens.timeline.analyze import Analysis
    from bootlens.stats.figures import stat

    t, st = stat("total", [x * 1_000_000 for x in total_ms]), stat("userspace", [x * 1_000_000 for x in stage_ms])
    assert t is not None and st is not None
    n = len(total_ms)
    return Measured(combine("x", []), Path("x"), Analysis((), ()),
                    {"total (power-on → ready)": t, "userspace": st}, n, n if ready is None else ready)


def _estimate(ms: int, traced_stage_ms: int | None = None, arithmetic: str = "measured") -> Estimate:
    return Estimate("r", "t", ms * 1e6, arithmetic, Confidence.HIGH, "userspace", "src", traced_stage_ms is not None,
                    None if traced_stage_ms is None else traced_stage_ms * 1_000_000)


def test_agreement_is_thirty_percent_of_the_estimate() -> None:
    assert agreement(1e9, 1.3e9) is Agreement.WITHIN and agreement(1e9, 0.7e9) is Agreement.WITHIN
    assert agreement(1e9, 1.31e9) is Agreement.OUTSIDE and agreement(1e9, 0.69e9) is Agreement.OUTSIDE
    assert agreement(None, 1e9) is Agreement.NO_ESTIMATE and agreement(1e9, None) is Agreement.NOT_MEASURED


def test_outcome_explains_what_the_data_explain() -> None:
    base = _measured([8000, 8100, 8050], [2800, 2850, 2820])
    ok = outcome("a", base, _measured([7000, 7050, 7020], [1800, 1810, 1820]), _estimate(1000), False)
    assert ok.significance is Significance.SIGNIFICANT and ok.agreement is Agreement.WITHIN
    assert ok.saving_ns == pytest.approx(1.03e9) and ok.explanation is None
    # the stage saved what was estimated, other stages were slower: said, with the figures
    noisy = outcome("b", base, _measured([7600, 7650, 7620], [1800, 1810, 1820]), _estimate(1000), False)
    assert noisy.agreement is Agreement.OUTSIDE and noisy.stage_saving_ns == pytest.approx(1.01e9)
    assert noisy.explanation is not None and "in its stage (userspace) it saved 1.010 s" in noisy.explanation
    assert "the other stages took 0.580 s longer" in noisy.explanation
    # an estimate from the slower traced boot, and a console cost priced at a baud rate
    off = outcome("c", base, _measured([7600, 7650, 7620], [2300, 2310, 2320]),
                  _estimate(1000, traced_stage_ms=4000, arithmetic="bytes x 10 / 115200 baud"), False)
    assert off.explanation is not None and "took 4.000 s against 2.820 s without tracing" in off.explanation
    assert "not rate limited" in off.explanation
    assert "not rate limited" not in (outcome("c", base, off.measured, off.estimate, True).explanation or "")
    # off by 0.4 s from the estimate (the medians), but the estimate is inside the 95% interval
    # of the saving (0.990 to 1.677 s): the boots cannot tell; t = 10.8 with 4 df, p = 0.0004
    wide = outcome("w", base, _measured([6550, 6650, 6950], [2300, 2310, 2320]), _estimate(1000), False)
    assert wide.significance is Significance.SIGNIFICANT and wide.agreement is Agreement.OUTSIDE
    assert wide.p_value is not None and 0.0003 < wide.p_value < 0.0005 and wide.test == "student"
    assert wide.explanation is not None and "inside the 95% interval of the measured saving (0.990 s to 1.677 s)" \
        in wide.explanation
    # a little wider, and the test cannot decide with 3 boots a side: it says how many more
    more = outcome("m", base, _measured([6650, 6700, 7050], [2300, 2310, 2320]), _estimate(1000), False)
    assert more.significance is Significance.UNKNOWN and more.need_boots == 1
    assert more.explanation is not None and "cannot decide yet: need 1 more boot a side (p = 0.00064)" in \
        more.explanation
    within = outcome("d", base, _measured([8000, 8300, 7900], [2800, 2850, 2820]), _estimate(100), False)
    assert within.significance is Significance.NOT_SIGNIFICANT
    assert within.explanation is not None and "under the floor of 1 ms or 1% of the baseline" in within.explanation
    noise = outcome("n", base, _measured([7700, 8300, 7900], [2800, 2850, 2820]), _estimate(100), False)
    assert noise.significance is Significance.NOT_SIGNIFICANT
    assert noise.explanation is not None and "the difference is within the noise of these boots (p = 0." in \
        noise.explanation
    broken = outcome("e", base, _measured([7000], [1800], ready=0), None, False)
    assert broken.explanation is not None and "did not reach the ready marker" in broken.explanation


# --- --repeat auto, on real recordings -------------------------------------------------------

RERUN = Path(__file__).parent / "data" / "rerun"


class ReplayTarget(Target):
    """Boots by replaying real recordings (tests/data/rerun), each configuration from its own
    pool and in its own order, as a target would boot them: the experiment's rounds, folders,
    measurements and verdicts run as they do on a board, on boots that really happened."""

    name, ready, timeout_s, baud, rate_limited = "replay", "APP READY", 300.0, None, False
    can_change = frozenset({"cmdline", "uboot-env", "overlay"})

    def __init__(self, pools: dict[str, tuple[Path, list[int]]]) -> None:
        self.pools = pools
        self.booted: list[tuple[str, int]] = []

    @classmethod
    def from_options(cls, opts: TargetOptions) -> ReplayTarget:
        raise NotImplementedError  # made by the tests, not from the command line

    def boot(self, config: BootConfig, out: Path) -> None:
        src, order = self.pools[config.name]
        k = order[sum(1 for n, _ in self.booted if n == config.name) % len(order)]
        self.booted.append((config.name, int(out.stem.removeprefix("boot-"))))
        shutil.copyfile(src / f"boot-{k}.rec", out)


def test_repeat_auto_stops_when_decided(tmp_path: Path) -> None:
    """The same boots' configuration tried as a 'change' (boots 2, 4, ... of bootdelay=2 against
    1, 3, ...): nothing to find, and the first 3 rounds decide it."""
    slow = RERUN / "bootdelay-2"
    target = ReplayTarget({"baseline": (slow, [1, 3, 5, 7, 9, 11]), "same": (slow, [2, 4, 6, 8, 10, 12]),
                         "advise": (slow, [12])})
    r = experiment(target, [parse_try("same=cmdline:quiet")], tmp_path / "e", 3, max_repeat=6)
    (o,) = r.changes
    assert r.repeat == 3 and r.max_repeat == 6 and o.measured.boots == r.baseline.boots == 3
    assert o.significance is Significance.NOT_SIGNIFICANT, o
    assert "--repeat auto: 3 boots per configuration decided every verdict" in r.notes


def test_repeat_auto_boots_more_until_the_cap(tmp_path: Path) -> None:
    """The real 2 s change: its total varies by seconds from boot to boot on the loaded host that
    made these boots, so 3 boots a side cannot decide it; auto boots more rounds, interleaved,
    and at the cap says how many more it would still take."""
    target = ReplayTarget({"baseline": (RERUN / "bootdelay-2", list(range(1, 13))),
                         "nodelay": (RERUN / "bootdelay-0", list(range(1, 13)))})
    seen: list[tuple[int, int]] = []
    r = experiment(target, [parse_try("nodelay=uboot-env:bootdelay=0")], tmp_path / "e", 3,
                   progress=lambda done, total, what, s: seen.append((done, total)), max_repeat=8)
    (o,) = r.changes
    assert r.repeat == 8 and o.measured.boots == r.baseline.boots == 8
    # rounds stay interleaved past the first three: each round boots both, in its own order
    booted = [n for n, _ in target.booted]
    assert all(sorted(booted[i:i + 2]) == ["baseline", "nodelay"] for i in range(0, 16, 2)), booted
    assert seen[-1][0] == seen[-1][1] == 16 and seen[2][1] == 6  # planned 6, then more
    assert o.significance is Significance.UNKNOWN and o.need_boots is not None, o
    assert any(n.startswith("--repeat auto: stopped at the cap, 8 boots per configuration (--max-repeat 8)")
               for n in r.notes), r.notes
    assert o.explanation is not None and "cannot decide yet: need" in o.explanation
    # where the countdown is, 8 boots a side decide it: said, with its p
    assert o.stage_significance is Significance.SIGNIFICANT and o.stage_p_value is not None
    assert o.stage_saving_ns is not None and 2.0e9 < o.stage_saving_ns < 2.4e9
    assert "in its stage (bootloader) it saved 2." in o.explanation and ", significant there (p = " in o.explanation
    from bootlens.render.experiment import experiment_json_obj

    doc = json.loads(json.dumps(experiment_json_obj(r)))
    assert doc["repeat"] == 8 and doc["max_repeat"] == 8
    ch = doc["changes"][0]
    assert ch["significance"] == "unknown" and ch["need_boots"] == o.need_boots and ch["test"] == "student"
    assert ch["total"]["median_ci_level"] == pytest.approx(0.9921875)  # 8 boots: (min, max)
    assert ch["stage_significance"] == "significant" and ch["stage_p_value"] < 5e-4


def test_repeat_auto_boots_more_only_where_undecided(tmp_path: Path) -> None:
    """Past the first rounds only the baseline and the undecided configurations boot: the two
    decided ones (the baseline's own boots; all together, on these boots) keep their 3 boots
    while the 2 s change boots on to the cap, interleaved with the baseline."""
    slow, fast = RERUN / "bootdelay-2", RERUN / "bootdelay-0"
    target = ReplayTarget({"baseline": (slow, [1, 3, 5, 7, 9, 11, 2, 4, 6, 8]), "same": (slow, [2, 4, 6]),
                         "nodelay": (fast, list(range(12, 0, -1))), "all": (fast, list(range(1, 13))),
                         "advise": (slow, [12])})
    r = experiment(target, [parse_try("same=cmdline:quiet"), parse_try("nodelay=uboot-env:bootdelay=0")],
                   tmp_path / "e", 3, max_repeat=8, seed=7)
    same, nodelay = r.changes
    assert r.together is not None
    assert [(o.significance, o.measured.boots) for o in (same, r.together)] == [(Significance.NOT_SIGNIFICANT, 3)] * 2
    assert nodelay.significance is Significance.UNKNOWN and nodelay.measured.boots == r.baseline.boots == 8
    booted = [n for n, _ in target.booted if n != "advise"]
    assert sorted(booted[:12]) == sorted(["baseline", "same", "nodelay", "all"] * 3)
    # each extra round boots the baseline and the undecided change, in a random order (seeded)
    later = booted[12:]
    assert len(later) == 10 and all(sorted(later[i:i + 2]) == ["baseline", "nodelay"] for i in range(0, 10, 2))
    assert len({tuple(later[i:i + 2]) for i in range(0, 10, 2)}) == 2, later  # seed 7: both orders drawn


# --- a board on a pty, changed by a hook -----------------------------------------------------

HOOK = """\
#!/bin/sh
# records every call, and keeps the board's configuration in a state file the board reads
echo "$BOOTLENS_CONFIG $*" >> "{log}"
case "$1" in
  reset) : > "{state}" ;;
  apply) echo "$2 $3" >> "{state}" ;;
  *) echo "unknown call $1" >&2; exit 3 ;;
esac
"""


class FakeBoard:
    """A board on a pty: the power-cycle command drops a trigger file; the board then prints a
    U-Boot countdown of 0.5 s (none with bootdelay=0), a kernel that spends 0.3 s in a slow
    driver (not with cmdline 'fastinit'), and the ready line (never with cmdline 'breakme').
    With ``late``, the slow driver takes 0.6 s, and a fast kernel shows a second delay it hid:
    0.3 s settling (not with cmdline 'fastuser')."""

    def __init__(self, tmp: Path, late: bool = False) -> None:
        self.late = late
        self.master, self.slave = pty.openpty()
        self.trigger, self.state, self.log = tmp / "power-on", tmp / "state", tmp / "hook.log"
        self.hook = tmp / "hook.sh"
        self.hook.write_text(HOOK.format(log=self.log, state=self.state))
        self.hook.chmod(0o755)
        self.boots = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def port(self) -> str:
        return os.ttyname(self.slave)

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.trigger.exists():
                self.trigger.unlink()
                self.boots += 1
                state = self.state.read_text() if self.state.exists() else ""
                self._boot("uboot-env bootdelay=0" in state, "cmdline fastinit" in state, "cmdline breakme" in state,
                           self.late and "cmdline fastuser" not in state)
            time.sleep(0.005)

    def _boot(self, nodelay: bool, fast: bool, broken: bool, settle: bool) -> None:
        def out(line: bytes, wait: float = 0.02) -> None:
            os.write(self.master, line)
            time.sleep(wait)

        time.sleep(0.05)
        out(b"U-Boot 2023.01 (board)\n")
        out(b"Hit any key to stop autoboot:  %d \n" % (0 if nodelay else 1), 0.0 if nodelay else 0.5)
        out(b"Starting kernel ...\n")
        out(b"[    0.000000] Linux version 6.1.0 (x)\n", 0.0 if fast else 0.6 if self.late else 0.3)
        if fast and settle:
            out(b"[    0.100000] late: settling\n", 0.3)
        out(b"[    0.400000] slowdrv: probe done\n")
        out(b"[    0.500000] Run /init as init process\n")
        if not broken:
            out(b"app: ready to serve\n")

    def __enter__(self) -> FakeBoard:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        os.close(self.master)
        os.close(self.slave)


def test_experiment_on_a_board_drives_the_hook(tmp_path: Path) -> None:
    """Every configuration switch is `reset` then one `apply` per change, interleaved round by
    round in a random order; the measured saving matches the autoboot estimate."""
    with FakeBoard(tmp_path) as fb:
        r = run("experiment", "board", "--port", fb.port, "--power-cycle", f"touch {fb.trigger}",
                "--ready", "ready to serve", "--hook", str(fb.hook), "--try", "nodelay=uboot-env:bootdelay=0",
                "--try", "fast=cmdline:fastinit", "--repeat", "3", "--timeout", "20", "-o", str(tmp_path / "e"),
                "--json")
        assert r.returncode == 0, r.stderr.decode()
        base = ["baseline reset"]
        nd, fast = ["nodelay reset", "nodelay apply uboot-env bootdelay=0"], ["fast reset", "fast apply cmdline fastinit"]
        both = ["all reset", "all apply uboot-env bootdelay=0", "all apply cmdline fastinit"]
        # no rule estimates 'fastinit': one boot with tracing on at the end, for the advisor
        traced = ["advise reset", f"advise apply cmdline {TRACE_APPEND}"]
        # each round boots every configuration once, in its own random order; a configuration
        # booted twice in a row (the end of one round, the start of the next) is not set again
        calls, blocks = fb.calls(), {b[0].split()[0]: b for b in (base, nd, fast, both, traced)}
        at, order = 0, []
        while at < len(calls) - 1:
            block = blocks[calls[at].split()[0]]
            assert calls[at:at + len(block)] == block, calls[at:]
            order.append(block[0].split()[0])
            at += len(block)
        assert calls[at:] == base and order[-1] == "advise"  # the traced boot last, then back to the baseline
        assert all(a != b for a, b in zip(order, order[1:])) and set(order) == set(blocks)
        assert fb.boots == 13
    d = json.loads(r.stdout)
    assert d["kind"] == "experiment" and d["repeat"] == 3
    ch = {c["name"]: c for c in d["changes"]}
    nd, fast, both = ch["nodelay"], ch["fast"], d["all"]
    assert nd["significance"] == "significant" and 0.4 < nd["saving_s"] < 0.65
    assert nd["estimate"]["rule"] == "uboot.autoboot_delay" and nd["agreement"] == "within ±30%"
    assert 0.45 < nd["estimate"]["saving_s"] < 0.6
    assert fast["significance"] == "significant" and 0.2 < fast["saving_s"] < 0.4
    assert both["significance"] == "significant" and both["saving_s"] > nd["saving_s"]
    assert d["sum_of_single_savings_s"] == pytest.approx(nd["saving_s"] + fast["saving_s"])
    assert both["configuration"]["uboot_env"] == {"bootdelay": "0"} and both["configuration"]["append"] == "fastinit"
    meta = read_applied(tmp_path / "e" / "nodelay")
    assert meta["target"] == "board" and meta["hook"] == str(fb.hook)
    assert meta["experiment"]["changes"][0]["value"] == "bootdelay=0"  # type: ignore[index]
    assert meta["uboot_env"] == {"bootdelay": "0"}
    assert read_applied(tmp_path / "e" / "baseline")["uboot_env"] == {}  # a board: no image to equalise


def test_repeat_auto_on_a_board_from_the_command_line(tmp_path: Path) -> None:
    """--repeat auto: 3 rounds decide a 0.5 s countdown on a board whose boots vary by
    milliseconds; --max-repeat without auto is refused before any boot."""
    with FakeBoard(tmp_path) as fb:
        args = ["experiment", "board", "--port", fb.port, "--power-cycle", f"touch {fb.trigger}", "--ready",
                "ready to serve", "--hook", str(fb.hook), "--try", "nodelay=uboot-env:bootdelay=0", "--timeout", "20"]
        bad = run(*args, "--repeat", "3", "--max-repeat", "5", "-o", str(tmp_path / "bad"))
        assert bad.returncode == 2 and b"--max-repeat goes with --repeat auto" in bad.stderr and fb.boots == 0
        r = run(*args, "--repeat", "auto", "--max-repeat", "5", "-o", str(tmp_path / "e"), "--json")
        assert r.returncode == 0, r.stderr.decode()
    d = json.loads(r.stdout)
    assert d["repeat"] == 3 and d["max_repeat"] == 5 and d["baseline"]["boots"] == 3
    nd = d["changes"][0]
    assert nd["significance"] == "significant" and nd["p_value"] < 5e-4 and 0.4 < nd["saving_s"] < 0.65
    assert "--repeat auto: 3 boots per configuration decided every verdict" in d["notes"]


def test_a_failing_hook_is_a_one_line_error(tmp_path: Path) -> None:
    hook = tmp_path / "hook.sh"
    hook.write_text("#!/bin/sh\necho 'fw_setenv: cannot open /dev/mtd1' >&2\nexit 4\n")
    hook.chmod(0o755)
    r = run("experiment", "board", "--port", "/dev/null", "--power-cycle", "true", "--hook", str(hook),
            "--try", "q=cmdline:quiet", "-o", str(tmp_path / "e"))
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1, err
    assert err == f"bootlens: error: --hook {hook} reset exited with 4: fw_setenv: cannot open /dev/mtd1\n"


class FastInit(Rule):
    """Test rule: the slow driver's gap after 'Linux version' goes away with cmdline fastinit."""

    id = "test.fastinit"
    title = "slow driver"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        lines = boot.boot.lines
        for i, t in enumerate(lines.text):
            if "slowdrv" in t and i > 0:
                a, b = lines.host[i - 1], lines.host[i]
                if a is not None and b is not None:
                    yield Finding(self.id, "slowdrv waits", "kernel_init", b - a, f"gap before line {lines.no(i)}",
                                  Confidence.MEDIUM, "none", Change(ChangeKind.CMDLINE, "fastinit", "add fastinit"),
                                  (Evidence(lines.no(i), t),))


class Settle(Rule):
    """Test rule: the settling delay after 'late: settling' goes away with cmdline fastuser."""

    id = "test.settle"
    title = "settling"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        lines = boot.boot.lines
        for i, t in enumerate(lines.text[:-1]):
            if "late: settling" in t:
                a, b = lines.host[i], lines.host[i + 1]
                if a is not None and b is not None:
                    yield Finding(self.id, "settling", "kernel_init", b - a, f"gap after line {lines.no(i)}",
                                  Confidence.MEDIUM, "none", Change(ChangeKind.CMDLINE, "fastuser", "add fastuser"),
                                  (Evidence(lines.no(i), t),))


class Breaker(Rule):
    """Test rule: proposes a change that stops the board from reaching ready."""

    id = "test.breaker"
    title = "breaks the boot"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        yield Finding(self.id, "try breakme", "userspace", 50_000_000, "made up", Confidence.LOW, "breaks it",
                      Change(ChangeKind.CMDLINE, "breakme", "add breakme"))


class Lz4(Rule):
    """Test rule: a Kconfig change, which optimize lists without trying."""

    id = "test.lz4"
    title = "compression"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        yield Finding(self.id, "use lz4", "kernel_load", 100_000_000, "table", Confidence.LOW, "bigger image",
                      Change(ChangeKind.KCONFIG, "CONFIG_KERNEL_LZ4=y", "rebuild with LZ4"))


def test_optimize_on_a_board_keeps_what_saves_and_reaches_ready(tmp_path: Path) -> None:
    reg = RuleRegistry()
    for cls in (AutobootDelay, FastInit, Breaker, Lz4):
        reg.register(cls)
    with FakeBoard(tmp_path) as fb:
        target = BoardTarget(fb.port, f"touch {fb.trigger}", 115200, "ready to serve", 2.0, Hook(str(fb.hook)))
        seen: list[tuple[int, int]] = []
        r = optimize(target, tmp_path / "o", 3, reg, lambda done, total, what, s: seen.append((done, total)))
        calls = fb.calls()
    assert calls[:2] == ["advise reset", f"advise apply cmdline {TRACE_APPEND}"]
    final = ["final reset", "final apply uboot-env bootdelay=0", "final apply cmdline fastinit"]
    assert calls[-4:] in (final + ["baseline reset"], ["baseline reset"] + final)  # the last round, either order
    assert seen[-1] == (1 + 3 * 4 + 3, 1 + 3 * 4 + 3) and [d for d, _ in seen] == list(range(1, 17))
    assert [f.rule for f, _ in r.not_tried] == ["test.lz4"]
    assert r.not_tried[0][1] == "needs a kernel rebuild (board cannot change its kernel)"
    tried = {t.finding.rule: t for t in r.tried}
    assert tried["uboot.autoboot_delay"].kept and tried["test.fastinit"].kept
    br = tried["test.breaker"]
    assert not br.kept and br.outcome.measured.ready_boots == 0 and "did not reach the ready marker" in br.decision
    assert r.final is not None and r.final.append == "fastinit" and r.final.uboot_env == (("bootdelay", "0"),)
    fo = r.final_outcome
    assert fo is not None and fo.significance is Significance.SIGNIFICANT
    assert fo.saving_ns is not None and 0.65e9 < fo.saving_ns < 1.0e9
    assert r.sum_single_ns is not None and fo.explanation is not None and "add up" in fo.explanation
    fi = tried["test.fastinit"].outcome
    assert fi.estimate is not None and fi.estimate.source.startswith("median over 3 of 3 baseline boots")
    assert fi.agreement is Agreement.WITHIN
    assert r.comparison is not None and r.final_overlay is None

    from rich.console import Console

    from bootlens.render.experiment import optimize_json_obj, render_optimize

    con = Console(record=True, width=100)
    render_optimize(r, con)
    text = con.export_text()
    assert "Final configuration (2 changes kept)" in text and "setenv bootdelay 0; saveenv" in text
    assert "kernel command line: add  fastinit" in text and "needs a kernel rebuild" in text
    doc = json.loads(json.dumps(optimize_json_obj(r)))
    assert doc["final"]["configuration"]["append"] == "fastinit"
    assert [t["kept"] for t in doc["tried"]] == [tried[t["rule"]].kept for t in doc["tried"]]
    assert doc["comparison"]["kind"] == "compare"


def test_optimize_rounds_try_what_a_kept_change_reveals(tmp_path: Path) -> None:
    """Round 1 keeps fastinit; only on a boot with it does the settling delay show, which round
    2 tries on top of fastinit and keeps; round 3 finds nothing new to try; the target as it was
    and the final configuration are booted again side by side for the figure of the whole."""
    reg = RuleRegistry()
    for cls in (FastInit, Settle):
        reg.register(cls)
    with FakeBoard(tmp_path, late=True) as fb:
        target = BoardTarget(fb.port, f"touch {fb.trigger}", 115200, "ready to serve", 2.0, Hook(str(fb.hook)))
        r = optimize(target, tmp_path / "o", 3, reg, rounds=3)
        calls = fb.calls()
    assert [x.number for x in r.rounds] == [1, 2, 3]
    one, two, three = r.rounds
    assert [t.finding.rule for t in one.tried] == ["test.fastinit"] and one.tried[0].kept
    assert one.applied == () and one.kept is not None and one.kept.append == "fastinit"
    # round 2: advised on a traced boot with fastinit, tried fastuser on top of it
    assert calls.count(f"advise apply cmdline {TRACE_APPEND}") == 3
    assert ["advise reset", "advise apply cmdline fastinit", f"advise apply cmdline {TRACE_APPEND}"] == \
        calls[calls.index("advise apply cmdline fastinit") - 1:][:3]
    assert [lb for lb, _ in two.applied] == ["test.fastinit"]
    assert two.baseline.setup.append == "fastinit" and two.baseline.folder == tmp_path / "o" / "round-2" / "baseline"
    (settle,) = two.tried
    assert settle.finding.rule == "test.settle" and settle.kept, settle.decision
    assert settle.outcome.measured.setup.append == "fastinit fastuser"
    assert settle.outcome.saving_ns is not None and 0.2e9 < settle.outcome.saving_ns < 0.45e9
    assert ("test.fastinit", "kept in an earlier round") in [(f.rule, why) for f, why in two.not_tried]
    # round 3 finds nothing it can try: it boots nothing more than its traced boot
    assert three.tried == () and three.kept is None and three.baseline is two.kept_outcome.measured  # type: ignore[union-attr]
    assert "round 3: no finding can be tried automatically" in r.notes
    # the whole: the target as it was beside the final configuration, booted again
    assert r.final is not None and r.final.append == "fastinit fastuser"
    assert r.final_baseline is not None and r.final_baseline.folder == tmp_path / "o" / "overall" / "baseline"
    fo = r.final_outcome
    assert fo is not None and fo.measured.folder == tmp_path / "o" / "overall" / "final"
    assert fo.significance is Significance.SIGNIFICANT and fo.saving_ns is not None and 0.45e9 < fo.saving_ns < 0.8e9
    assert r.baseline is r.final_baseline and r.comparison is not None

    from rich.console import Console

    from bootlens.render.experiment import optimize_json_obj, render_optimize

    con = Console(record=True, width=100)
    render_optimize(r, con)
    # the console wraps at 100 columns, and where depends on the length of pytest's tmp folder
    # (pytest-9 or pytest-16): the phrases are looked for with the line breaks as spaces
    text = " ".join(con.export_text().split())
    assert "Round 2: on top of test.fastinit, kept before" in text and "round 2 kept test.settle:" in text
    assert "round 3 kept nothing" in text and "booted again side by side, 3 boots each" in text
    doc = json.loads(json.dumps(optimize_json_obj(r)))
    assert [x["number"] for x in doc["rounds"]] == [1, 2, 3] and doc["final_side_by_side"] is True
    assert [(t["rule"], t["round"], t["kept"]) for t in doc["tried"]] == [("test.fastinit", 1, True),
                                                                           ("test.settle", 2, True)]
    assert doc["rounds"][1]["applied"][0]["value"] == "fastinit" and doc["rounds"][2]["kept"] is None
    assert doc["final"]["configuration"]["append"] == "fastinit fastuser"


def test_an_existing_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "old").write_text("x")
    target = BoardTarget("/dev/null", "true", 115200, "x", hook=Hook("true"))
    with pytest.raises(ExperimentError, match="exists and is not empty"):
        experiment(target, [parse_try("q=cmdline:quiet")], tmp_path / "e", 1)
    with pytest.raises(ExperimentError, match="unknown rule; known: uboot.autoboot_delay"):
        reg = RuleRegistry()
        reg.register(AutobootDelay)
        experiment(target, [parse_try("r=rule:no.such")], tmp_path / "f", 1, reg)


# --- the reference target (slow) -------------------------------------------------------------



@pytest.mark.slow
@needs_qemu
def test_experiment_bootdelay_on_the_reference_target(tmp_path: Path) -> None:
    """bootdelay=0 saves what the autoboot rule estimates, against a baseline that boots with
    an environment image too (bootdelay=2, U-Boot's default); --repeat auto boots 3 a side, then
    more up to 4 while the total cannot decide."""
    r = run("experiment", "qemu-arm64", "--try", "nodelay=uboot-env:bootdelay=0", "--repeat", "auto",
            "--max-repeat", "4", "-o", str(tmp_path / "e"), "--json", timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    d = json.loads(r.stdout)
    base = read_applied(tmp_path / "e" / "baseline")
    assert base["uboot_env"] == {"bootdelay": "2"} and base["experiment"]["uboot_env_equalised"]  # type: ignore[index]
    from bootlens.timeline.inputs import analyze_folder

    for b in analyze_folder(tmp_path / "e" / "baseline").boots:
        assert "Loading Environment from Flash... OK" in "\n".join(b.boot.lines.text)
    nd = d["changes"][0]
    n = d["repeat"]
    assert 3 <= n <= 4 and d["max_repeat"] == 4
    assert nd["ready_boots"] == n and d["baseline"]["ready_boots"] == n
    assert nd["estimate"]["rule"] == "uboot.autoboot_delay" and nd["estimate"]["saving_s"] > 1.9
    # the 2 s countdown in a total whose noise is 0.35 s on a quiet host, seconds on a busy one:
    # significant, or (only at the cap) how many more boots it needs; never "not significant"
    assert nd["significance"] == "significant" or (nd["significance"] == "unknown" and n == 4
                                                    and nd["need_boots"] >= 1), nd
    assert nd["saving_s"] > 0 and nd["p_value"] is not None and nd["test"] == "student"
    # the estimate is for the bootloader stage, where the countdown is: it must hold there. The
    # total also moves with whatever else the shared host did, so there the verdict must be
    # within ±30% or say why it is not.
    assert 0.7 * nd["estimate"]["saving_s"] <= nd["stage_saving_s"] <= 1.3 * nd["estimate"]["saving_s"], nd
    assert nd["agreement"] == "within ±30%" or nd["explanation"], nd


class NoSleep(Rule):
    """Test rule: the needless `sleep` of an init script, measured from the process events of
    the traced boot; the change is the script without it."""

    id = "test.needless_sleep"
    title = "needless sleep"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterator[Finding]:
        script = ctx.rootfs_files.get("etc/init.d/S40settle")
        for e in boot.boot.events:
            if e.kind is Kind.PROCESS and e.name == "sleep" and e.duration_ns and script is not None:
                body = b"".join(ln for ln in script.splitlines(keepends=True) if not ln.startswith(b"sleep"))
                yield Finding(self.id, "S40settle sleeps", "userspace", e.duration_ns, "the sleep process ran",
                              Confidence.HIGH, "none", Change(ChangeKind.OVERLAY, "S40settle", "drop the sleep",
                                                             (("etc/init.d/S40settle", body, 0o100755),)))
                return


@pytest.mark.slow
@needs_qemu
def test_optimize_the_reference_target(tmp_path: Path) -> None:
    """Two rules (the autoboot delay, a test rule for the needless sleep), 3 boots each: each is
    kept when its saving is significant, else its decision says why (on a busy host the total's
    noise can hide even the 2 s countdown from 3 boots: then "undecided", with the boots it needs);
    the final configuration is booted and its overlay written out for reuse."""
    from bootlens.targets.qemu import setup

    reg = RuleRegistry()
    reg.register(AutobootDelay)
    reg.register(NoSleep)
    r = optimize(QemuTarget(setup("qemu-arm64")), tmp_path / "o", 3, reg)
    tried = {t.finding.rule: t for t in r.tried}
    assert set(tried) == {"uboot.autoboot_delay", "test.needless_sleep"}
    ns = tried["test.needless_sleep"].outcome
    assert ns.estimate is not None and ns.estimate.traced and 0.9e9 < (ns.estimate.saving_ns or 0) < 1.5e9
    boot = tried["uboot.autoboot_delay"]
    for t in (boot, tried["test.needless_sleep"]):
        v = t.verdict
        assert v is not None and v.on in (t.finding.stage, "total") and v.boots >= 3, t.decision
        if t.kept:
            assert v.keep and t.decision.startswith(f"kept, decided on {'the total' if v.on == 'total' else v.on} ("), \
                t.decision
        elif v.keep is None:  # a busy host: undecided, with the boots it needs
            assert (v.need_boots or 0) > 0 and t.decision.startswith("not kept: undecided on "), t.decision
        else:  # the 1 s sleep may drown in a busy host's noise; the 2 s countdown may not
            assert t is not boot and f"its stage ({v.on}) is longer" not in v.reason, t.decision
    sleep = tried["test.needless_sleep"]
    base = read_applied(tmp_path / "o" / "baseline")
    assert base["uboot_env"] == {"bootdelay": "2"}
    if r.final is None:
        assert not boot.kept and not sleep.kept
        assert "no change saved time significantly: the configuration stays as it is" in r.notes
        return
    assert r.final_outcome is not None
    fm = r.final_outcome.measured
    assert fm.ready_boots == fm.boots == 3 and (r.final_outcome.saving_ns or 0) > 0
    # with one change kept the final configuration is that change's own folder (not booted again)
    final = read_applied(fm.folder)
    assert (fm.folder.name == "final") == (sleep.kept and boot.kept)
    assert (final["uboot_env"] == {"bootdelay": "0"}) == boot.kept
    if sleep.kept:  # its edited script is in the final overlay, written out for reuse
        assert final["overlay"] and r.final_overlay is not None
        assert b"sleep" not in (r.final_overlay / "etc/init.d/S40settle").read_bytes()
        assert os.access(r.final_overlay / "etc/init.d/S40settle", os.X_OK)


class _KernelTarget(Target):
    """A target that can boot kernels bootlens builds (as qemu-arm64), for the try/not-try rules."""

    name = "k"
    ready = "READY"
    timeout_s = 1.0
    baud = None
    rate_limited = False

    def __init__(self, can: frozenset[str]) -> None:
        self.can_change = can

    @classmethod
    def from_options(cls, opts: TargetOptions) -> _KernelTarget:
        raise NotImplementedError

    def boot(self, config: BootConfig, out: Path) -> None:
        raise NotImplementedError


def test_which_kernel_and_boot_path_changes_optimize_tries() -> None:
    from bootlens.experiment.optimize import untriable
    from bootlens.targets.base import BOOTLOADER, KERNEL

    kernel = _KernelTarget(frozenset({"cmdline", KERNEL, BOOTLOADER}))
    plain = _KernelTarget(frozenset({"cmdline"}))
    line = Change(ChangeKind.KCONFIG, "CONFIG_RTC_HCTOSYS=n", "")
    base = Change(ChangeKind.KCONFIG, "allnoconfig + 2", "", kconfig=("allnoconfig", "CONFIG_TTY=y", "CONFIG_PRINTK=y"))
    direct = Change(ChangeKind.BOOTLOADER, "direct", "")
    assert untriable(direct, kernel, []) is None
    assert untriable(direct, plain, []) == "needs a change of the boot path (k cannot change its bootloader)"
    assert untriable(base, kernel, [], rebuild_kernel=False) == \
        "needs a kernel rebuild (--rebuild-kernel builds and tries it)"
    assert untriable(base, kernel, []) is None
    # a line alone would rebuild Debian's whole configuration: only on top of a kernel built from nothing
    assert untriable(line, kernel, []).startswith("needs a kernel rebuild of the target's own configuration")
    assert untriable(line, kernel, [("from_boot", base)]) is None
    assert untriable(base, kernel, [("from_boot", base)]) == \
        "a kernel built from nothing is kept already (one cannot be laid over another)"
    # U-Boot's own Kconfig (uboot.console's CONFIG_SILENT_CONSOLE) is not the kernel's
    assert untriable(Change(ChangeKind.KCONFIG, "CONFIG_SILENT_CONSOLE=y", ""), kernel, [("b", base)],
                     stage="bootloader") == "needs a rebuild of the bootloader (bootlens builds kernels only)"
