"""systemd-analyze outputs and boot-data files as inputs of ``bootlens analyze`` (issue 12, parts 1
and 4): detected by content, attached to the boot of the other inputs, shown beside bootlens's
own figures. Through the real entry point.

Inputs, all real (provenance in tests/golden/*/README.md and tests/data/supplements/README.md):

- tests/golden/systemd/reference-debian12-console-grabserial.log: lines 430-566 of the console of
  one boot of the qemu-x86_64-systemd reference target;
- tests/golden/systemd_analyze/debian12-qemu.*: systemd-analyze time, blame, critical-chain and
  plot (an excerpt) run in the guest of that same boot;
- tests/data/supplements/reference-debian12-kernel.log: that boot's first 60 kernel lines from
  ``journalctl -o short-monotonic`` (a log with no units);
- tests/golden/bootdata/h3host-firecracker.txt: a grab-boot-data.sh file.

A whole boot of the target with its collection folder: conftest.systemd_boot (made once a session,
or $BOOTLENS_SYSTEMD_BOOT).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import GOLDEN, cli, systemd_first_line_ns

from bootlens.advise.context import context_for_group
from bootlens.timeline.inputs import analyze_inputs
from bootlens.sources.systemd_analyze.reader import detect
from bootlens.sources.supplements import classify
from bootlens.timeline.agreement import chain_agreement

SA = GOLDEN / "systemd_analyze"
CONSOLE = GOLDEN / "systemd" / "reference-debian12-console-grabserial.log"
KERNEL = GOLDEN.parent / "data" / "supplements" / "reference-debian12-kernel.log"
BOOTDATA = GOLDEN / "bootdata" / "h3host-firecracker.txt"


def analyze_json(*args: str) -> dict[str, Any]:
    r = cli("analyze", "--json", *args)
    assert r.returncode == 0, r.stderr
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def test_outputs_are_told_apart_by_content() -> None:
    assert classify(str(SA / "debian12-qemu.blame.txt")) == "blame"
    assert classify(str(SA / "debian12-qemu.time.txt")) == "time"
    assert classify(str(SA / "debian12-qemu.critical-chain.txt")) == "critical-chain"
    assert classify(str(SA / "debian12-qemu.plot.svg")) == "plot"
    assert classify(str(SA / "debian12-systemd252.dump.txt")) == "dump"
    assert classify(str(BOOTDATA)) == "bootdata"
    assert classify(str(CONSOLE)) is None  # a log
    assert classify(str(KERNEL)) is None


def test_a_running_managers_dump_is_detected() -> None:
    # systemd-analyze dump on a running system opens with "Manager: systemd 252 (...)", Features
    # and a dozen Timestamp lines: the first "-> Unit" is at line 13 of the reference boot's dump
    head = ("Manager: systemd 252 (252.39-1~deb12u2)\nFeatures: +PAM +AUDIT\n"
            + "".join(f"Timestamp {k}: Sun 2026-11-22 21:20:14 UTC\n" for k in ("kernel", "userspace", "finish"))
            + "\n" * 8 + "-> Unit sysinit.target:\n")
    assert detect(head) == "dump"


def test_blame_and_time_beside_the_console_in_any_order() -> None:
    files = [str(SA / f"debian12-qemu.{c}.txt") for c in ("blame", "time", "critical-chain")]
    one = analyze_json(str(CONSOLE), *files)
    two = analyze_json(files[2], files[0], str(CONSOLE), files[1])
    sa1, sa2 = one["boots"][0]["systemd_analyze"], two["boots"][0]["systemd_analyze"]
    assert {k: v for k, v in sa1.items() if k != "sources"} == {k: v for k, v in sa2.items() if k != "sources"}
    assert len(one["boots"]) == 1 and len(one["inputs"]) == 1  # the outputs are no boots of their own
    blame = sa1["blame"]
    # debian12-qemu.blame.txt has 37 lines; the excerpt (lines 430-566 of the console) holds 26
    # of those units' start jobs whole, every one within 10 % or 50 ms (the 26th: L101
    # "systemd-random-se…rvice - Load/Save Random Seed", 4.037 s, blame 4.009 s; matched by both
    # ends of its cut name since issue 28 class 7, by its description alone before)
    assert (blame["units"], blame["measured"], blame["within"]) == (37, 26, 26)
    rows = {r["unit"]: r for r in blame["rows"]}
    # L27 "[   32.391146] systemd[1]: Starting systemd-fsck-root.service", L86 "[   39.759430]
    # systemd[1]: Finished ...": 7.368284 s; blame "7.368s systemd-fsck-root.service"
    assert rows["systemd-fsck-root.service"] == {"unit": "systemd-fsck-root.service", "bootlens_s": 7.368284,
                                                 "blame_s": 7.368, "within": True, "line": 27}
    # a name cut at 80 columns: L100 "Starting systemd-journal-f…h Journal to Persistent Storage..."
    # at 57.819609, L109 "Finished systemd-journal-f…ush ..." at 62.556620 (host times) is the one
    # blame unit starting "systemd-journal-f": systemd-journal-flush.service 4.746s
    assert rows["systemd-journal-flush.service"]["bootlens_s"] == pytest.approx(4.737011)
    assert rows["systemd-journal-flush.service"]["line"] == 100
    assert rows["dev-vda.device"]["bootlens_s"] is None  # a device: no status line
    time = sa1["time"]
    # "Startup finished in 20.338s (kernel) + 1min 8.385s (userspace) = 1min 28.723s"
    assert (time["kernel_s"], time["userspace_s"], time["total_s"]) == (20.338, 68.385, 88.723)
    assert time["target"] == "graphical.target" and time["target_s"] == 66.307
    # the excerpt starts after the kernel: bootlens does not measure it, and says so
    assert time["compared"][0] == {"name": "kernel", "systemd_s": 20.338, "bootlens_s": None,
                                   "bootlens_span": "kernel clock 0 to systemd's start"}
    assert [n["unit"] for n in sa1["critical_chains"][0]][:2] == ["graphical.target", "multi-user.target"]


def test_terminal_shows_the_checks_under_the_stages() -> None:
    r = cli("analyze", str(CONSOLE), str(SA / "debian12-qemu.blame.txt"), str(SA / "debian12-qemu.time.txt"))
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())  # rich wraps at the terminal width
    assert "systemd-analyze time: kernel 20.338 s (bootlens not measured) · userspace 68.385 s" in out
    assert "systemd-analyze blame: 26 of 37 units within 10 % or 50 ms of bootlens's (26 measured" in out
    assert out.index("Stages") < out.index("systemd-analyze blame") < out.index("Top 10 systemd units")


def test_outputs_refuse_several_boots_and_no_boot() -> None:
    # two-boots.log: U-Boot at lines 1 and 7, a kernel at 3 and 9, the printk clock back at line 13: 3 boots (its golden)
    r = cli("analyze", str(GOLDEN / "analyze" / "two-boots.log"), str(SA / "debian12-qemu.blame.txt"))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "the other inputs hold 3" in r.stderr and "Traceback" not in r.stderr
    # given alone, blame is no longer refused (issue 28, class 5): a boot of systemd's own figures
    r = cli("analyze", str(SA / "debian12-qemu.blame.txt"))
    assert r.returncode == 0 and "systemd's own figures" in r.stdout and "Traceback" not in r.stderr
    r = cli("analyze", str(CONSOLE), "--systemd-analyze", str(CONSOLE))
    assert r.returncode == 2 and "takes a folder" in r.stderr


def test_plot_units_on_a_log_without_units() -> None:
    doc = analyze_json(str(KERNEL), str(SA / "debian12-qemu.plot.svg"))
    b = doc["boots"][0]
    assert b["axis"] == "kernel" and "systemd-analyze plot" in b["formats"]
    units = [e for e in b["events"] if e["kind"] == "unit"]
    # the plot excerpt keeps every unit row whose label has a "(time)": 37 of them
    assert len(units) == 37 == b["systemd_analyze"]["units_from_plot"] == b["counts"]["units"]
    fsck = next(e for e in units if e["name"] == "systemd-fsck-root.service")
    # <rect class="activating" x="3243.751" width="736.859">: 100 px a second, x from kernel start
    assert (fsck["start_s"], fsck["duration_s"]) == (32.43751, 7.36859)
    assert fsck["source"] == "systemd-analyze" and fsck["line"] == 0
    # the plot's heading is systemd-analyze time's first line: the time facts come with it
    assert b["systemd_analyze"]["time"]["kernel_s"] == 20.338


def test_plot_adds_no_units_to_a_log_that_has_them() -> None:
    doc = analyze_json(str(CONSOLE), str(SA / "debian12-qemu.plot.svg"))
    b = doc["boots"][0]
    assert b["systemd_analyze"]["units_from_plot"] == 0
    assert all(e.get("source") != "systemd-analyze" for e in b["events"] if e["kind"] == "unit")


def test_chain_agreement() -> None:
    ours = ["app.service", "multi-user.target", "getty.target", "a.service", "b.socket"]
    assert chain_agreement(["multi-user.target", "getty.target", "a.service"], ours)[0] == 3
    n, said = chain_agreement(["graphical.target", "multi-user.target", "getty.target", "x.service"], ours)
    assert n == 2 and "x.service where bootlens has a.service" in said
    assert chain_agreement(["z.target"], ours) == (0, "no unit in common")


def test_boot_data_file_is_one_boot_with_its_config() -> None:
    doc = analyze_json(str(BOOTDATA))
    (b,) = doc["boots"]
    # KERNEL MESSAGES content from line 132: "[    0.000000] Linux version 6.18.44-fc-v445 ..."
    assert b["first_line"] == 132 and "boot-data" in b["formats"]
    assert b["facts"]["kernel_version"]["line"] == 132
    assert b["facts"]["gbd_version"]["value"] == "1.5"
    sa = b["systemd_analyze"]
    # grep -c '^CONFIG_\|^# CONFIG_.* is not set' gives 34
    assert sa["kconfig"] == 34 and sa["time"] is None and sa["blame"] is None
    assert any("SYSTEMD INFO" in w for w in b["warnings"])
    ctx = context_for_group(analyze_inputs([str(BOOTDATA)])[0])
    assert ctx.kconfig["CONFIG_HZ"] == "250" and ctx.kconfig["CONFIG_PRINTK_TIME"] == "y"  # line 127
    assert not ctx.rootfs_files  # a config is no file of the target's root


def test_boot_data_systemd_part_is_attached(tmp_path: Path) -> None:
    # SYSTEMD INFO as grab-boot-data.sh writes it where systemd runs: systemd-analyze, "-----",
    # systemd-analyze blame (here the reference boot's own outputs)
    text = BOOTDATA.read_text()
    info = (SA / "debian12-qemu.time.txt").read_text() + "-----\n" + (SA / "debian12-qemu.blame.txt").read_text()
    text = text.replace("== SYSTEMD INFO ==\n-----\n", "== SYSTEMD INFO ==\n" + info)
    assert info in text
    p = tmp_path / "boot-data.txt"
    p.write_text(text)
    sa = analyze_json(str(p))["boots"][0]["systemd_analyze"]
    assert sa["time"]["kernel_s"] == 20.338 and sa["blame"]["units"] == 37


def test_whole_reference_boot_with_its_collection_folder(systemd_boot: Path) -> None:
    """What holds of every boot of the target. A boot on a quiet host: the kernel 20.338 s,
    bootlens 20.6 s; 35 of blame's 37 units within; the same 13 units in both chains. On half a
    CPU: the chains the same for 10 units, then a transient mount on systemd's where bootlens has
    local-fs-pre.target. On a fifth of a CPU: the kernel 12.488 s, bootlens 12.941 s; 34 of 37
    units on the console (systemd drops the status lines a slow console cannot take), each
    within; the chains the same for 7 units below the targets whose lines were lost."""
    guest = systemd_boot / "guest"
    doc = analyze_json(str(systemd_boot / "boot.rec"), "--systemd-analyze", str(guest))
    sa = doc["boots"][0]["systemd_analyze"]
    assert {s["what"] for s in sa["sources"]} == {"time", "blame", "critical-chain", "dump", "plot"}
    kernel = sa["time"]["compared"][0]
    # bootlens's kernel span (kernel clock 0 to the root's systemd line) against systemd's own
    # figure: it ends at systemd's first kmsg line, later than systemd's own stamp by systemd's
    # early set-up, which grows with the load (0.62 s with two busy cores: over 10 % of the figure)
    said = re.search(r"([\d.]+)s \(kernel\)", (guest / "analyze-time.txt").read_text())
    assert said is not None and kernel["systemd_s"] == float(said[1])
    assert abs(kernel["bootlens_s"] - systemd_first_line_ns(systemd_boot / "boot.rec") / 1e9) <= 0.001, kernel
    assert kernel["bootlens_s"] > kernel["systemd_s"] - 0.05, kernel
    blame = sa["blame"]
    # with the dump's descriptions every status line names its unit, and every unit measured on
    # the console is within but bootlens-collect.service (the collector, still running when
    # blame is taken: 0.498 s against 0.555 s); dev-vda.device has no status line, and a loaded
    # host's console loses some (at most a fifth)
    rows = [ln for ln in (guest / "analyze-blame.txt").read_text().splitlines() if ln.strip()]
    assert blame["units"] == len(rows) and blame["within"] >= blame["measured"] - 1, blame
    assert blame["measured"] >= 0.8 * blame["units"], blame
    r = cli("analyze", str(systemd_boot / "boot.rec"), "--critical-chain", "--systemd-analyze", str(guest))
    assert r.returncode == 0, r.stderr
    assert "Dependencies: systemd-analyze dump" in r.stdout
    assert "systemd-analyze says" in r.stdout
    # the chains share a run of units: from graphical.target when the console showed the top
    # targets; where it lost their lines (a loaded host), from the first unit it did show (a
    # fifth of a CPU: the same 7, from systemd-networkd.service)
    same = re.search(r"bootlens's chain and systemd-analyze's: the same (\d+) ", r.stdout)
    assert same is not None and int(same[1]) >= 5, r.stdout
