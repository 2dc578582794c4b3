"""Shapes of real logs found outside the shared corpus, where bootlens was wrong.

Each input under tests/data/shapes/ is hand-written in the shape of a public log whose source
(repository, path, commit) heads the file; the real files are named in docs/real-logs.md for the
shared corpus.
"""

from __future__ import annotations

from conftest import ROOT, run_rule

from bootlens.advise.base import ChangeKind
from bootlens.advise.rules.uboot_autoboot import AutobootDelay
from bootlens.timeline.analyze import BootAnalysis, analyze_paths
from bootlens.core.model import Clock, Kind, Milestone
from bootlens.parsers import MarkerSpec, ParseOptions

SHAPES = ROOT / "data" / "shapes"


def _boot(name: str, *markers: str) -> BootAnalysis:
    (b,) = analyze_paths([str(SHAPES / name)], ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))).boots
    return b


def _milestone(b: BootAnalysis, name: str) -> int | None:
    return next((e.line_no for e in b.boot.events if e.kind is Kind.MILESTONE and e.name == name), None)


def test_kernel_init_from_host_times_when_printk_time_is_off() -> None:
    """LAVA, printk.time=0: the kernel's lines carry only the dispatcher's times; kernel init runs
    from the 'Booting Linux' line (0.000 s) to 'Run /sbin/init' (1.024064 s later)."""
    b = _boot("lava-no-printk-time.yaml")
    ki = next(s for s in b.stages if s.name == "kernel_init")
    assert ki.duration_ns == 1_024_064_000
    assert ki.start is not None and ki.start.line_no == 3 and ki.end is not None and ki.end.line_no == 8
    assert _milestone(b, Milestone.LOGIN_PROMPT) == 12 and b.total.end_name == "login prompt"


def test_a_quiet_boot_without_linux_version_still_shows_user_space() -> None:
    """A loglevel-quiet kernel after 'Starting kernel ...' prints only warnings from 0.378676 s:
    no 'Linux version', no 'Run /init', but it is no fragment: initramfs-tools' line is user space."""
    b = _boot("grabserial-quiet-boot.log")
    assert _milestone(b, Milestone.USERSPACE_FIRST) == 8
    assert "log starts mid-boot" not in "; ".join(b.partial_reasons)


def test_go_starts_an_application_not_the_kernel() -> None:
    """U-Boot's 'go' chain-loads barebox: '## Starting application at' ends nothing; barebox's own
    banner and countdown are read."""
    b = _boot("barebox-chainloaded.log")
    assert _milestone(b, Milestone.STARTING_KERNEL) is None
    assert b.boot.fact("application_start") is not None
    assert [e.line_no for e in b.boot.events if e.kind is Kind.BOOTLOADER and e.name.startswith("autoboot")] == [19]
    assert b.boot.fact("autoboot_interrupted") is not None  # "type exit to get to the menu"


def test_barebox_countdown_is_barebox_advice() -> None:
    """barebox's countdown is its own variable (global.autoboot_timeout), not U-Boot's bootdelay,
    and this one was stopped at the prompt: no saving claimed, nothing applied automatically."""
    (f,) = run_rule(AutobootDelay, SHAPES / "barebox-chainloaded.log")
    assert f.title.startswith("barebox's countdown was interrupted") and f.saving_ns is None
    assert f.change.kind is ChangeKind.MANUAL and "autoboot_timeout" in f.change.description


def test_a_kernel_line_glued_after_the_login_prompt_does_not_move_the_axis() -> None:
    """Our systemd reference target: getty's 'login: ' arrived at 104.945 s and the kernel printed
    '[  119.262483] hrtimer: ...' after it on the same line (line 30). The line's host time is the
    prompt's, 14 s before that kernel message, so it must not anchor the kernel clock: kernel init
    starts at the first byte ('Linux version' arrived first) and the ready line is at its printk time."""
    b = _boot("systemd-login-glued.grabserial.log", "ready=APP READY")
    k = b.alignment.anchor(Clock.KERNEL)
    assert k is not None and k.line_no != 30
    ki = next(s for s in b.stages if s.name == "kernel_init")
    assert ki.start_ns is not None and abs(ki.start_ns) < 10_000_000
    assert b.total.duration_ns is not None and abs(b.total.duration_ns - 87_211_449_000) < 10_000_000
