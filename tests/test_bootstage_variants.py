"""U-Boot bootstage reports as real boards print them (issue 28, class 2), and coreboot's own
boot-state timings (class 12a), read from real public logs: the extra logs 110-115 (sources and
hand facts in their MANIFEST.md) and corpus log 21.

- a row without a stage name (a vboot Chromebook's TPL records) is kept, the report is not dropped;
- rows named ``id=64``, ``id=175`` (boards built without the names) are read like the others;
- several reports in one capture (``bootstage report`` typed after each of several boots) are
  one boot each, a report typed twice in one boot is not;
- TPL, VPL and SPL records are stages.
"""

from __future__ import annotations

from conftest import extra_log, needs_wild, wild_log

from bootlens.core.lines import Lines
from bootlens.core.model import NS_PER_MS, NS_PER_US, Kind, Milestone
from bootlens.parsers.uboot import bootstage_reports
from bootlens.timeline.analyze import BootAnalysis, analyze_paths
from bootlens.timeline.boots import split_boots
from bootlens.timeline.stages import MEASURED, NOT_MEASURED


def boots(path: object) -> list[BootAnalysis]:
    return list(analyze_paths([str(path)]).boots)


def stage(b: BootAnalysis, name: str):  # type: ignore[no-untyped-def]
    (st,) = [s for s in b.stages if s.name == name]
    return st


def rows(b: BootAnalysis) -> list[tuple[int, str, int | None]]:
    return [(e.line_no, str(e.name), e.duration_ns) for e in b.boot.events if e.kind is Kind.BOOTSTAGE]


def test_a_report_with_unnamed_rows_is_kept_whole() -> None:
    """Coral with vboot (112): the report's first three rows have no name; before, the whole
    37-record report was dropped ("no readable rows")."""
    (b,) = boots(extra_log("112"))
    got = rows(b)
    assert len(got) == 27 and got[0][0] == 123 and got[-1][0] == 149
    assert [r[:2] for r in got[:4]] == [(123, "(unnamed)"), (124, "(unnamed)"), (125, "(unnamed)"), (126, "VPL")]
    assert got[1][2] == 155_241 * NS_PER_US and got[-1] == (149, "start_kernel", 162_157 * NS_PER_US)
    assert ("bootstage_accumulated:boot_device_info", "1114692") in [(f.key, f.value) for f in b.boot.facts]
    assert "bootstage report at line 121: 3 of its 27 rows have no stage name (kept as '(unnamed)')" in b.warnings
    assert not any("no readable rows" in w for w in b.warnings)


def test_vpl_is_a_stage() -> None:
    """112: TPL, then VPL (its banner L4, its record L126), then SPL; each stage ends where the
    next one's record starts, as the Coral report without VPL (114) is read."""
    (b,) = boots(extra_log("112"))
    vpl = stage(b, "vpl")
    assert vpl.label == "VPL (U-Boot VPL)" and vpl.status == MEASURED
    assert vpl.duration_ns == (940_454 - 269_573) * NS_PER_US
    assert (vpl.start.line_no, vpl.end.line_no) == (126, 141)
    assert stage(b, "spl").duration_ns == (1_639_590 - 940_454) * NS_PER_US
    assert stage(b, "bootloader").duration_ns == (5_381_751 - 1_639_590) * NS_PER_US
    # TPL's records have no name: TPL is not measured, reset to VPL's start is, as one run
    assert stage(b, "tpl").status == NOT_MEASURED
    run = stage(b, "from_reset")
    assert run.label == "power-on to VPL start (not split further)" and run.duration_ns == 269_573 * NS_PER_US
    starts = [(e.line_no, e.start is None) for e in b.boot.events if e.name == Milestone.VPL_START]
    assert starts == [(4, True), (126, False)]


def test_the_coral_report_read_right_stays_right() -> None:
    """114, listed as right in docs/real-logs.md: TPL 82.254 ms, SPL 579.824 ms, U-Boot 4.715 s,
    reset to TPL 155.279 ms; no VPL."""
    (b,) = boots(extra_log("114"))
    assert stage(b, "firmware").duration_ns == 155_279 * NS_PER_US
    assert stage(b, "tpl").duration_ns == 82_254 * NS_PER_US
    assert stage(b, "spl").duration_ns == 579_824 * NS_PER_US
    assert stage(b, "bootloader").duration_ns == (5_532_057 - 817_357) * NS_PER_US
    assert not [s for s in b.stages if s.name == "vpl"]
    assert (95, "id=64", 340_684 * NS_PER_US) in rows(b)


def test_a_report_alone_ends_its_stages_where_it_says() -> None:
    """115: the command's output alone, `end TPL` / `end SPL` rows, last row `id=175`."""
    (b,) = boots(extra_log("115"))
    assert stage(b, "tpl").duration_ns == 48_689 * NS_PER_US
    assert stage(b, "spl").duration_ns == 534_248 * NS_PER_US
    assert rows(b)[-1] == (11, "id=175", 50 * NS_PER_US)


def test_each_report_is_one_boot() -> None:
    """110: five reports typed after five boots of an STM32MP157C-DK2 (two TF-A boots, three
    with U-Boot's SPL); before, one boot whose stages came from the third report only."""
    got = boots(extra_log("110"))
    assert len(got) == 5
    assert [b.boot.lines.first for b in got] == [1, 24, 43, 63, 81]  # each starts at its typed command
    assert [b.boot.split_reason for b in got[1:]] == ["new bootstage report (marks from another reset)"] * 4
    assert [stage(b, "firmware").duration_ns for b in got[:2]] == [583_290 * NS_PER_US, 583_401 * NS_PER_US]
    assert [stage(b, "spl").duration_ns for b in got[2:]] == [642_254 * NS_PER_US, 134_331 * NS_PER_US,
                                                             132_357 * NS_PER_US]
    assert [[r[1] for r in rows(b)][-1] for b in got] == ["id=175"] * 5
    assert [r[0] for b in got for r in rows(b) if r[1] == "id=64"] == [13, 30, 51, 71, 89]


def test_four_reports_with_prose_between_are_four_boots() -> None:
    """111: four reports of an STM32MP157C-EV1, the mail's prose between them."""
    got = boots(extra_log("111"))
    assert [stage(b, "firmware").duration_ns for b in got] == [
        621_283 * NS_PER_US, 626_031 * NS_PER_US, 641_076 * NS_PER_US, 644_372 * NS_PER_US]
    assert [len(rows(b)) for b in got] == [7, 7, 7, 7]


def test_a_report_typed_twice_in_one_boot_is_one_boot() -> None:
    """The same boot's report typed again repeats its records: no new boot (the rows are 115's)."""
    report = extra_log("115").read_text().splitlines()
    twice = ["=> bootstage report", *report, "=> bootstage report", *report]
    lines = Lines(twice, [None] * len(twice), [None] * len(twice))
    assert [start for start, _ in bootstage_reports(lines)] == [0, len(report) + 1]
    assert len(split_boots(lines)) == 1


def test_coreboot_boot_states_are_its_own_durations() -> None:
    """113 (coreboot 2020, then U-Boot): `BS: <state> times (us): entry E run R exit X`, one
    step per phase that took time, on coreboot's stage (no position on any clock)."""
    (b,) = boots(extra_log("113"))
    got = [(e.line_no, e.name, e.duration_ns, e.start) for e in b.boot.events if str(e.name).startswith("coreboot ")]
    assert len(got) == 19 and all(start is None for *_, start in got)
    assert (915, "coreboot BS_DEV_RESOURCES run", 2_959_300 * NS_PER_US, None) in got
    assert [g[1] for g in got if g[0] == 1439] == ["coreboot BS_PAYLOAD_LOAD entry", "coreboot BS_PAYLOAD_LOAD run",
                                                    "coreboot BS_PAYLOAD_LOAD exit"]
    assert not [g for g in got if g[0] == 175 and g[1].endswith(("entry", "exit"))]  # their zeros are no steps


@needs_wild
def test_coreboot_exec_and_console_times() -> None:
    """Corpus 21 (coreboot 24.02, four boots): `BS: BS_DEV_INIT run times (exec / console): 823 /
    1031 ms` is the phase's whole time, running and printing; a stage's `total (unknown) / 570 ms`
    only its time printing."""
    got = boots(wild_log("21"))
    assert len(got) == 4
    ev = {e.line_no: (e.name, e.duration_ns) for e in got[0].boot.events if str(e.name).startswith("coreboot ")}
    assert ev[721] == ("coreboot BS_DEV_INIT run (console 1031 ms)", (823 + 1031) * NS_PER_MS)
    assert ev[137] == ("coreboot romstage console output", 570 * NS_PER_MS)
    assert sorted(ev) == [10, 137, 144, 255, 388, 430, 721, 729, 830, 842]
    assert [e.line_no for e in got[3].boot.events if e.name == "coreboot BS_DEV_INIT run (console 1036 ms)"] == [3211]
