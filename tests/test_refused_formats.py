"""Formats bootlens refused ("no boot found", exit 2) at the issue-28 baseline, read by class
(issue 28, N7 and class 5): EDK2 UEFI firmware debug output (more/43), Android logcat, with a
kernel boot in it (more/58) or user space only (more/57), and systemd-analyze outputs pasted in a
shell transcript, several boards in one file (extra 63, 64).

The logs are read in place (the shared corpus, and the extra logs when $BOOTLENS_EXTRA_LOGS names
their folder); the facts are those the corpus README and the extra logs' manifest give, checked
with grep: line numbers as ``grep -n`` counts them, times from the lines' own stamps.
"""

from __future__ import annotations

import pytest
from conftest import cli, extra_log, needs_wild, wild_log

from bootlens.core.model import NS_PER_MS, Kind, Milestone
from bootlens.parsers.banners import FIRMWARE, STAGE_TOTAL
from bootlens.timeline.analyze import BootAnalysis, analyze_paths
from bootlens.timeline.stages import MEASURED


def _milestone(b: BootAnalysis, name: str) -> tuple[int, int | None] | None:
    """(line, axis time) of the boot's first milestone of that name."""
    for e, t in zip(b.boot.events, b.times):
        if e.kind is Kind.MILESTONE and e.name == name:
            return e.line_no, t
    return None


def _stage(b: BootAnalysis, name: str):  # type: ignore[no-untyped-def]
    return next(s for s in b.stages if s.name == name)


# ---------------------------------------------------------------- EDK2 UEFI firmware (more/43)

@needs_wild
def test_an_edk2_firmware_only_log_is_a_firmware_boot() -> None:
    """more/43, a CIX Orion O6's EDK2 debug build: the PrePi banner (L3, glued to a memory-map line)
    names the firmware; its 18 ``[ss.mmm] [UEFI] Exxx`` progress codes are its own timer, L2
    ``[00.074] ... PrePiStart`` to L2370 ``[29.814] ... BmAfterConsole``: the firmware ran 29.740 s
    between them, with no position on any clock. No OS: a firmware-only boot, as coreboot's."""
    a = analyze_paths([str(wild_log("43"))])
    (b,) = a.boots
    assert _milestone(b, Milestone.FIRMWARE_BANNER) == (3, None)
    fw = b.boot.fact("firmware")
    assert fw is not None and (fw.value, fw.line_no) == ("EDK2 UEFI 0.0.1-ec9323d7d396-debug:08M260218171437N", 3)
    codes = b.boot.fact("uefi_progress_codes")
    assert codes is not None and (codes.value, codes.line_no) == ("18", 2)
    st = _stage(b, "firmware")
    assert (st.label, st.status, st.start_ns, st.duration_ns) == ("firmware / ROM (EDK2 UEFI)", MEASURED, None,
                                                                  29_740 * NS_PER_MS)
    assert (st.start.line_no, st.end.line_no) == (2, 2370)
    steps = {e.name: (e.line_no, e.end_line_no, e.duration_ns) for e in b.boot.events if e.kind is Kind.BOOTLOADER}
    assert steps[STAGE_TOTAL + FIRMWARE] == (2, 2370, 29_740 * NS_PER_MS)
    assert steps["UEFI: PrePi"] == (2, 11, 260 * NS_PER_MS)  # [00.074] .. [00.334]
    assert steps["UEFI: PlatformDxe"] == (272, 319, 186 * NS_PER_MS)  # [14.227] .. [14.413]
    assert steps["UEFI: XspiInitDxe"] == (184, 198, 82 * NS_PER_MS)  # [13.641] .. [13.723]
    assert b.partial_reasons == ("no kernel output (bootloader only)",)
    assert _stage(b, "bootloader").status == "absent"


def test_the_edk2_banner_with_and_without_a_vendor_or_a_version() -> None:
    """ArmPlatformPkg's PrePi prints ``UEFI firmware (version %s built at %a on %a)``, a vendor's
    name before it in some ports, the version empty in an untagged build."""
    from bootlens.parsers.banners import banner_of, version

    for line, v in (("UEFI firmware (version  built at 12:00:00 on Jan  1 2024)", None),
                    ("PPC64LE UEFI firmware (version 1.0 built at 10:00:00 on Mar  3 2020)", "1.0"),
                    ("Cix UEFI firmware (version 0.0.1-ec93-debug:08M built at 17:14:47 on Feb 18 20Memory Map", "0.0.1-ec93-debug:08M")):
        found = banner_of(line)
        assert found is not None and found[0].name == "EDK2 UEFI" and version(found[1]) == v, line
    assert banner_of("Loading UEFI firmware (version check)") is None


# --------------------------------------------------------------------------- logcat (more/57, 58)

@needs_wild
def test_a_kernel_boot_in_logcat_framing() -> None:
    """more/58: an Arch 6.7 host's kernel boot as ``logcat -b all`` shows it (Waydroid): kernel
    entries with pid 0, wall-clock ms stamps, ``--------- beginning of`` headers (L1, L381, L2489).
    Linux version L2 (13:54:36.583), Freeing initmem L789 (13:54:37.560), Run /init L794
    (13:54:37.575), systemd[1] L919 (13:54:38.174); before: "no boot found"."""
    a = analyze_paths([str(wild_log("58"))])
    assert a.inputs[0].framing == "logcat"
    (b,) = a.boots
    assert _milestone(b, Milestone.KERNEL_START) == (2, 0)
    assert _milestone(b, Milestone.INITMEM_FREED) == (789, 977 * NS_PER_MS)
    assert _milestone(b, Milestone.RUN_INIT) == (794, 992 * NS_PER_MS)
    assert _milestone(b, Milestone.SYSTEMD_START) == (919, 1591 * NS_PER_MS)
    assert _milestone(b, Milestone.USERSPACE_FIRST) == (919, 1591 * NS_PER_MS)
    ki = _stage(b, "kernel_init")
    assert (ki.status, ki.duration_ns, ki.start.line_no, ki.end.line_no) == (MEASURED, 992 * NS_PER_MS, 2, 794)
    kv = b.boot.fact("kernel_version")
    assert kv is not None and (kv.value, kv.line_no) == ("6.7.5-zen1-1-zen", 2)
    notes = " ".join(a.inputs[0].warnings)
    assert "9568 entries, times are wall clock to the ms" in notes and "2913 kernel entries" in notes
    assert "3 buffer headers" in notes
    # the main buffer's first entry (L382, 13:58:53.965) among the kernel's of 13:54:36: no
    # "silence" of four minutes between two kernel lines of the same second
    assert all(s.line_before != 380 for s in b.silences)
    assert not b.partial_reasons


@needs_wild
def test_a_user_space_logcat_is_a_boot_seen_from_user_space() -> None:
    """more/57: logcat (threadtime) from boot, user space only: 2 adb lines, headers L3 (system),
    L1281 (crash), L1904 (main); vold's first entry L4 (09-26 18:18:27.847) is user space's first
    output. Before: "no boot found"."""
    a = analyze_paths([str(wild_log("57"))])
    assert a.inputs[0].framing == "logcat"
    (b,) = a.boots
    assert _milestone(b, Milestone.USERSPACE_FIRST) == (4, 0)
    assert _milestone(b, Milestone.KERNEL_START) is None
    assert len(b.partial_reasons) == 1 and b.partial_reasons[0].startswith("no kernel output: a user-space log")
    notes = " ".join(a.inputs[0].warnings)
    assert "14319 entries" in notes and "3 buffer headers" in notes
    assert b.boot.lines.text[2] == ""  # the header L3 is no entry, no console line
    r = cli("analyze", str(wild_log("57")))
    assert r.returncode == 0 and "no boot found" not in r.stderr and "userspace_first" in r.stdout


def test_logcat_entries_keep_the_programs_text() -> None:
    """A kernel entry's tag is what came before its message's first colon (``PM      : RTC time``
    is the kernel's ``PM: RTC time``); an untagged entry is the message alone."""
    from bootlens.core.lines import KERNEL_ENTRY
    from bootlens.read.framings import detect, frame

    raw = ["--------- beginning of kernel",
           "02-19 13:54:36.583     0     0 I         : Linux version 6.7.5",
           "02-19 13:54:36.674     0     0 I PM      : RTC time: 13:54:36, date: 2024-02-19",
           "02-19 13:54:37.575     0     0 D with arguments:  ",
           "02-19 13:58:53.979    38    38 I vold    : Vold 3.0 (the awakening) firing up"]
    assert detect(raw) == "logcat"
    texts, kernel, host, _, fields = frame(raw, "logcat")
    assert texts == ["", "Linux version 6.7.5", "PM: RTC time: 13:54:36, date: 2024-02-19", "with arguments:  ",
                     "vold: Vold 3.0 (the awakening) firing up"]
    assert host == [None, 0, 91 * NS_PER_MS, 992 * NS_PER_MS, (4 * 60 + 17) * 1000 * NS_PER_MS + 396 * NS_PER_MS]
    # the kernel's entries (pid 0) marked as a journal marks them; a process's first entry, its pid
    assert kernel == [None] * 5 and fields == {1: KERNEL_ENTRY, 2: KERNEL_ENTRY, 3: KERNEL_ENTRY, 4: {"_PID": "38"}}


# ------------------------------------------------- systemd-analyze in a transcript (extra 63, 64)

@pytest.mark.parametrize(("num", "boots"), [
    # (first line, last line, Startup finished line, total ms, kernel ms, slowest unit, its ms, its line,
    #  the printed parts' sum in ms: where the last stage ends, test_systemd_alone_facts.py; the
    #  Startup finished milestone is at the printed total, as its line says)
    ("63", [(1, 27, 20, 48_180, 1_452, "plymouth-quit-wait.service", 32_902, 23, 48_179),
            (28, 53, 46, 30_708, 1_968, "NetworkManager-wait-online.service", 8_755, 49, 30_708),
            (54, 80, 72, 10_254, 5_569, "docker.service", 1_967, 75, 10_254)]),
    ("64", [(1, 22, 15, 50_250, 1_281, "plymouth-quit-wait.service", 32_775, 18, 50_249),
            (23, 44, 36, 77_185, 2_000, "NetworkManager-wait-online.service", 60_181, 39, 77_185)]),  # "1min 181ms"
])
def test_systemd_analyze_in_a_transcript_is_one_boot_per_board(num: str, boots: list[tuple[int, ...]]) -> None:
    """A test harness's transcript (``[root@acer BootCode]# ...``, ``COMMAND: systemd-analyze time``
    then its output, ``COMMAND: systemd-analyze blame | head -n 5``): each board's time and blame
    are one boot of systemd's figures, on its clock, every figure at its line. Before: "no boot found"."""
    a = analyze_paths([str(extra_log(num))])
    assert len(a.boots) == len(boots)
    for b, (first, last, line, total, kernel, unit, unit_ms, unit_line, parts) in zip(a.boots, boots):
        assert (b.boot.first_line, b.boot.last_line) == (first, last)
        assert _milestone(b, Milestone.STARTUP_FINISHED) == (line, total * NS_PER_MS)
        assert max(s.end_ns or 0 for s in b.stages) == parts * NS_PER_MS
        assert b.total.duration_ns == total * NS_PER_MS and not b.partial_reasons
        assert _stage(b, "kernel_init").duration_ns == kernel * NS_PER_MS
        top = b.top_units[0]
        assert (top.name, top.duration_ns, top.line_no) == (unit, unit_ms * NS_PER_MS, unit_line)
        assert len(b.top_units) == 5
        assert any("went through 'head -n 5': its 5 slowest units, not every unit" in w for w in b.warnings)
    r = cli("analyze", str(extra_log(num)))
    assert r.returncode == 0 and "systemd's own figures" in r.stdout


def test_a_typed_systemd_analyze_leaves_a_boot_log_alone(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Outputs in a transcript are read only where the log holds no boot: a console log whose user
    typed ``systemd-analyze time`` at the prompt after the boot is still that boot."""
    log = tmp_path / "console.log"
    log.write_text("[    0.000000] Linux version 6.1.0\n[    1.000000] Run /init as init process\n"
                   "root@board:~# systemd-analyze time\n"
                   "Startup finished in 1.000s (kernel) + 2.000s (userspace) = 3.000s\n")
    (b,) = analyze_paths([str(log)]).boots
    assert b.boot.split_reason != "systemd-analyze outputs alone"
    assert _milestone(b, Milestone.KERNEL_START) == (1, 0)
