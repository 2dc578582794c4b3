"""Issue 28, classes 6-8 on real logs: a bootloader is called by its own name (class 6), a systemd
unit name cut with "…" is never glued to its description (class 7), and advice is right or silent
(class 8). Facts are the ones the corpus READMEs and /work/extra-logs MANIFEST.md give (grep -n)."""

from __future__ import annotations

import io

from conftest import extra_log, needs_wild, wild_log
from rich.console import Console

from bootlens.core.model import Kind, Milestone, UnitDetail
from bootlens.render.jsonout import boot_dict
from bootlens.render.terminal import render_boot
from bootlens.timeline.analyze import BootAnalysis, analyze_paths

pytestmark = needs_wild


def _boot(path: object) -> BootAnalysis:
    (b,) = analyze_paths([str(path)]).boots
    return b


def _milestones(b: BootAnalysis) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for e in b.boot.events:
        if e.kind is Kind.MILESTONE:
            out.setdefault(e.name, []).append(e.line_no)
    return out


def _text(b: BootAnalysis) -> str:
    con = Console(file=io.StringIO(), width=120, record=True)
    render_boot(b, con, 10, "")
    return con.export_text()


# --- class 6: barebox is barebox --------------------------------------------------------------


def test_barebox_started_by_u_boot_go_is_named_barebox() -> None:
    """The RIoTboard (barebox/barebox Documentation/boards/imx/embest-i.mx6s-riotboard.rst, lines
    82-125): U-Boot's prompt 'go 0x20800000' (L14) starts barebox 2019.04.0 (banner L18). Its start
    is bootloader_start, named barebox in the stage, the facts, the JSON and the milestone table;
    no uboot_start anywhere."""
    b = _boot(extra_log("150"))
    ms = _milestones(b)
    assert ms[Milestone.BOOTLOADER_START] == [18] and Milestone.UBOOT_START not in ms
    assert next(s for s in b.stages if s.name == "bootloader").label == "bootloader (barebox)"
    assert b.boot.bootloader_at(18) == "barebox"
    doc = boot_dict(b)
    names = [e["name"] for e in doc["events"] + doc["untimed_events"] if e["kind"] == "milestone"]
    assert "uboot_start" not in names and "bootloader_start" in names
    assert doc["facts"]["bootloader"] == {"value": "barebox", "line": 18}
    text = _text(b)
    assert "barebox start: barebox 2019.04.0-00151-g86762248de" in text and "uboot_start" not in text


def test_u_boot_keeps_uboot_start() -> None:
    """The JSON name of U-Boot's start is unchanged: wild 01's banner (L1) is uboot_start."""
    b = _boot(wild_log("01"))
    ms = _milestones(b)
    assert ms[Milestone.UBOOT_START][:1] == [1] and Milestone.BOOTLOADER_START not in ms
    assert "uboot_start: U-Boot" in _text(b)


def test_cfe_is_a_bootloader_named_cfe() -> None:
    """Broadcom's CFE (more/40, BCM68380): 'CFE version 1.0.38-118.3 for BCM96838' (L33) opens the
    bootloader stage, 'Starting program at 0x8041b7f0' (L79) hands over, 'Linux version' is L80."""
    b = _boot(wild_log("40"))
    ms = _milestones(b)
    assert ms[Milestone.BOOTLOADER_START] == [33] and ms[Milestone.STARTING_KERNEL] == [79]
    assert next(s for s in b.stages if s.name == "bootloader").label == "bootloader (CFE)"
    assert b.boot.fact("bootloader_version") is not None and b.boot.fact("bootloader_version").value == "1.0.38-118.3"
    assert "CFE start: CFE version 1.0.38-118.3" in _text(b)


def test_grub_is_named_grub() -> None:
    """GRUB 2 (wild 20): its 'Welcome to GRUB!' (L8) is GRUB's start, not U-Boot's."""
    b = _boot(wild_log("20"))
    assert _milestones(b)[Milestone.BOOTLOADER_START][:1] == [8]
    assert "GRUB start: " in _text(b)


# --- class 7: a unit name systemd cut with "…" -------------------------------------------------


def _units(b: BootAnalysis) -> dict[int, tuple[str, str | None, str]]:
    out = {}
    for e in b.boot.events:
        if e.kind is Kind.UNIT and isinstance(e.detail, UnitDetail):
            out[e.line_no] = (e.name, e.detail.unit, e.detail.description)
    return out


def test_cut_unit_names_resolve_or_stay_cut_alone() -> None:
    """Lichee RV, systemd 255 on an 80-column console (extra b/90): 'Starting
    systemd-journal-flush.ser…sh Journal to Persistent Storage...' (L465) and 'Finished
    systemd-journal-flush.ser…lush ...' (L468) are systemd-journal-flush.service (".ser" fits one
    unit type); 'local-fs-pre.target…Preparation for Local File Systems' (L472) names its unit
    whole; 'systemd-tmpfiles-setup-de…' (L470, L471) fits -dev and -dev-early: the cut name alone;
    'systemd-update-utmp-runle…e - Record Runlevel Change in UTMP' (L529) keeps both ends of the
    name, its description whole. No name has a description glued on."""
    u = _units(_boot(extra_log("90")))
    assert u[465] == ("systemd-journal-flush.service", "systemd-journal-flush.service",
                      "…lush Journal to Persistent Storage")
    assert u[472][:2] == ("local-fs-pre.target", "local-fs-pre.target")
    assert u[470] == ("systemd-tmpfiles-setup-de…", None, "…Create Static Device Nodes in /dev")
    assert u[528] == ("systemd-update-utmp-runle…e", None, "Record Runlevel Change in UTMP")
    assert u[504][0] == "systemd-update-utmp.service"  # "…servi…ecord System Boot/Shutdown in UTMP"
    for name, _, _ in u.values():
        head, cut, tail = name.partition("…")
        assert not cut or " " not in name, name  # "name…description" never


def test_descriptions_of_old_systemd_stay_descriptions() -> None:
    """systemd 232 (extra b/93) prints descriptions only: 'Starting Create list of required
    st…ce nodes for the current kernel...' (L242) is no unit name, and is paired with L275."""
    u = _units(_boot(extra_log("93")))
    name, unit, _ = u[242]
    assert unit is None and name.startswith("Create list of required sta")
