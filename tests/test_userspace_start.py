"""Issue 28: where user space's first line is, on logs bootlens had never seen.

The facts are the corpus's more/ README (36-62) and the extra logs' manifests (63-77, 90-104),
measured with grep before bootlens ran on them; line numbers as ``grep -n`` counts them, printk
times to the µs. Before these fixes bootlens found user space late on plain init-script output
(more/52 L415, b/98 L416, b/101 L280), took a kernel entry of a journal for user space's
(more/41 L763, "random: plymouthd: uninitialized urandom read"), said "no kernel output" of a
journal with 30 kernel entries (a/73) and read a grep of user managers' lines as
systemd-analyze output (a/74).
"""

from __future__ import annotations

import pytest
from conftest import cli, extra_log, needs_wild, wild_log

from bootlens.core.lines import KERNEL_ENTRY
from bootlens.core.model import Clock, Kind, Milestone
from bootlens.read.framings import frame
from bootlens.sources.kinds import classify
from bootlens.timeline.analyze import BootAnalysis, analyze_paths

pytestmark = needs_wild


def _event(b: BootAnalysis, name: str) -> tuple[int, int | None, bool] | None:
    """(line, ns on the kernel clock or None, estimated) of a milestone."""
    e = next((e for e in b.boot.events if e.kind is Kind.MILESTONE and e.name == name), None)
    if e is None:
        return None
    if e.start is None:
        return e.line_no, None, False
    assert e.start.clock is Clock.KERNEL
    return e.line_no, e.start.ns, e.start.estimated


def _line(b: BootAnalysis, name: str) -> int | None:
    """The line of a milestone (a journal's times are on the host's wall clock)."""
    return next((e.line_no for e in b.boot.events if e.kind is Kind.MILESTONE and e.name == name), None)


def _only(path: str) -> BootAnalysis:
    (b,) = analyze_paths([path]).boots
    return b


# A quiet kernel: no "Run /init", no "Freeing", so no hand-over line; the console's unstamped output
# after the kernel's lines is user space's, timed after the last printk line before it (an estimate).
def test_a_kernel_quiet_from_its_start_after_a_bootloader() -> None:
    """more/52 (TH1520, OpenSBI, 6.6 with a quiet console: first printk line L148 @0.193109): the
    initramfs's "Successfully mounted device UUID=..." L226, after L225 @1.603066 (before: L415,
    sysvinit's "INIT: version")."""
    b = _only(str(wild_log("52")))
    assert _event(b, Milestone.USERSPACE_FIRST) == (226, 1_603_066_000, True)
    assert _event(b, Milestone.KERNEL_START) is None
    assert _event(b, Milestone.LOGIN_PROMPT) == (635, 14_772_421_000, True)


def test_a_kernel_quiet_from_its_early_parameters() -> None:
    """b/98 (Jetson TX2, L4T 4.9): the banner and the early console at 0 s, no "Kernel command
    line:" (quiet took effect as the early parameters were read), 15 printk lines to L407
    @13.623508; the FIQ debugger's own prompt L392 is the kernel's; getty's issue line L410 is user
    space's first (before: L416, the MOTD after the login)."""
    b = _only(str(extra_log("98")))
    assert _event(b, Milestone.KERNEL_START) == (381, 0, False)
    assert _event(b, Milestone.USERSPACE_FIRST) == (410, 13_623_508_000, True)
    assert _event(b, Milestone.LOGIN_PROMPT) == (412, 13_623_508_000, True)


# A console without printk times: after the kernel's last "Freeing" line, the kernel's lines are told
# by their shape ("usb 1-1: ", "EXT4-fs (sda1): ", an indented continuation, what kernel_init prints
# after freeing); the first line not so shaped is user space's.
@pytest.mark.parametrize(("where", "num", "freeing", "user"), [
    ("extra", "101", 262, 263),  # Aerohive 2.6.36: "Mounting local file systems..." (before: L280)
    ("wild", "39", 496, 498),  # ZTE F670L 4.1: L497 "This architecture does not have kernel memory protection."
    ("wild", "46", 262, 263),  # ZTE H168A 2.6.36: "busybox init and set aff" (before: none)
    ("wild", "48", 311, 312),  # Nokia G-1425-MA 3.18: "busybox init and set aff before console Init 0x7"
    ("wild", "53", 672, 701),  # Xen dom0 4.19: 28 kernel lines after Run /init, then systemd[1] (unchanged)
    # the README says no user-space line; L152 "Sat Oct 24 10:24:00 UTC 2015" is an init script's
    # `date` before its ASCII-art banner (docs/real-logs.md notes the README's slip)
    ("wild", "54", 145, 152),
])
def test_an_unstamped_console_by_the_lines_shapes(where: str, num: str, freeing: int, user: int) -> None:
    b = _only(str(wild_log(num) if where == "wild" else extra_log(num)))
    ki = next(s for s in b.stages if s.name == "kernel_init")
    assert ki.end is not None and ki.end.line_no == freeing
    assert _event(b, Milestone.USERSPACE_FIRST) == (user, None, False)


# Journals: each entry says who logged it. journalctl's short format shows "kernel: " for the kernel's
# entries; the framing marks them (as JSON's SYSLOG_IDENTIFIER=kernel), so no parser guesses from text.
def test_a_short_journal_marks_the_kernels_entries() -> None:
    """more/41: 7957 of its lines are "host kernel: " entries (grep -c); a/73 (French months): 30."""
    for path, count in ((wild_log("41"), 7957), (extra_log("73"), 30)):
        raw = path.read_text(encoding="utf-8").split("\n")
        texts, _, host, _, fields = frame(raw, "journalctl-short")
        assert len(fields) == count and all(f is KERNEL_ENTRY for f in fields.values())
        assert all(host[i] is not None and not texts[i].startswith("kernel: ") for i in fields)


def test_a_journals_user_space_starts_at_its_first_entry_not_the_kernels() -> None:
    """more/41, 8 boots: each boot's user space starts at systemd 237's "running in system mode",
    the first entry after the kernel's not logged by the kernel (before: boot 1 at L763, the kernel's
    "random: plymouthd: uninitialized urandom read")."""
    a = analyze_paths([str(wild_log("41"))])
    firsts = [_line(b, Milestone.USERSPACE_FIRST) for b in a.boots]
    assert firsts == [790, 4282, 7014, 16898, 18685, 20421, 22271, 24252]
    assert [_line(b, Milestone.SYSTEMD_START) for b in a.boots] == firsts


def test_a_journal_starting_after_the_kernels_start() -> None:
    """a/73: no "Linux version", 30 kernel entries from L5 on; user space's first entry L2
    (systemd-udevd[432]). Before: "no kernel output"."""
    b = _only(str(extra_log("73")))
    reasons = "; ".join(b.partial_reasons)
    assert "no kernel output" not in reasons
    assert "kernel start (Linux version) not in the log: the journal's first kernel entry is line 5" in reasons
    assert _line(b, Milestone.USERSPACE_FIRST) == 2
    assert _line(b, Milestone.STARTUP_FINISHED) == 1916


def test_a_grep_of_user_managers_lines_is_no_boot() -> None:
    """a/74: 10 journal lines "systemd[N]: Startup finished in X.XXXs." of user managers (N not 1),
    Chinese months: not systemd-analyze output (before: read as its `time`), and no boot: one line."""
    path = str(extra_log("74"))
    assert classify(path) is None
    r = cli("analyze", path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1
    assert "10 'Startup finished' lines are user managers' (systemd --user)" in r.stderr
