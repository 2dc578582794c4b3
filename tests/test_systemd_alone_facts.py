"""systemd-analyze outputs given alone, held to the hand facts of extra-logs/a/MANIFEST.md (63-72)
and the corpus's more/README.md (42), measured with grep: what an independent judge found still
wrong after they were first read (issue 28).

- No console rule speaks of a boot made of systemd's figures: its lines are systemd's report, not
  a console's output (the `quiet` advice citing the `Startup finished` line).
- A plot's `Startup finished` is cited at its SVG line (L43), not at `<?xml` (L1); its unit rows
  at their labels' lines.
- The boot's lines and the input's bytes and lines are the file's (not one line past its end).
- A container's figures (`5.235s (userspace)` only) count from systemd's start, not a kernel's.
- Every stage is the figure systemd printed, to the ms (its evidence says 1 ms), and the total is
  systemd's printed total.
"""

from __future__ import annotations

import json

import pytest
from conftest import cli, extra_log, needs_wild, wild_log

from bootlens.advise import advise
from bootlens.advise.base import Context
from bootlens.core.options import ParseOptions
from bootlens.timeline.inputs import analyze_inputs

MS = 1_000_000

# file: (its lines, its bytes) as wc counts them
SIZES = {"65": (2, 140), "66": (1187, 91699), "67": (860, 69725), "68": (2318, 175879), "69": (2131, 174153),
         "70": (1889, 154464), "71": (2305, 191228), "72": (443, 34017)}
PLOTS = ("66", "67", "68", "69", "70", "71", "72")


def _boots(path: str):  # type: ignore[no-untyped-def]
    (group,) = analyze_inputs([path])
    return group.analysis


def _st(b) -> dict[str, int | None]:  # type: ignore[no-untyped-def]
    return {s.name: s.duration_ns for s in b.stages}


@pytest.mark.parametrize("num", ["63", "64", "65", "66", "69", "72"])
def test_no_console_advice_on_systemds_figures(num: str) -> None:
    """63-72 were told "the kernel prints 88 bytes on the serial console" (add `quiet`), with the
    `Startup finished` line as evidence: these files hold no console line."""
    for b in _boots(str(extra_log(num))).boots:
        rules = {f.rule for f in advise(b, Context())}
        assert "kernel.serial_console" not in rules and "uboot.console" not in rules
    r = cli("advise", str(extra_log(num)))
    assert r.returncode == 0 and "quiet" not in r.stdout and "serial console" not in r.stdout
    assert "console baud unknown" not in r.stdout


@pytest.mark.parametrize("num", PLOTS)
def test_a_plots_startup_line_is_cited_where_it_is(num: str) -> None:
    """`<text x="20" y="50">Startup finished in ...` is L43 of each plot (grep -n)."""
    (b,) = _boots(str(extra_log(num))).boots
    ms = [e for e in b.boot.events if e.name in ("kernel_start", "run_init", "systemd_start", "startup_finished")]
    assert ms and all(e.line_no == 43 for e in ms)
    assert all(s.start.line_no in (None, 43) and s.end.line_no == 43 for s in b.stages if s.duration_ns is not None
               and s.start is not None and s.end is not None)


def test_a_plots_units_are_cited_at_their_rows() -> None:
    """66: `kdump.service (15.129s)` is the label on L998, `systemd-udev-settle.service` on L830."""
    (b,) = _boots(str(extra_log("66"))).boots
    lines = {e.name: e.line_no for e in b.boot.events if e.name.endswith(".service")}
    assert lines["kdump.service"] == 998 and lines["systemd-udev-settle.service"] == 830


@pytest.mark.parametrize("num", sorted(SIZES))
def test_the_boot_is_the_files_lines(num: str) -> None:
    n, size = SIZES[num]
    a = _boots(str(extra_log(num)))
    (b,) = a.boots
    assert (b.boot.first_line, b.boot.last_line, b.counts.lines) == (1, n, n)
    assert [(s.bytes, s.lines) for s in a.inputs] == [(size, n)]


@needs_wild
def test_blame_alone_counts_its_57_lines() -> None:
    """more/42: 57 rows, 1891 bytes; it was "lines 1-58" and an input of 0 bytes, 0 lines."""
    doc = json.loads(cli("analyze", "--json", str(wild_log("42"))).stdout)
    (inp,) = doc["inputs"]
    assert (inp["bytes"], inp["lines"]) == (1891, 57)
    assert (doc["boots"][0]["first_line"], doc["boots"][0]["last_line"]) == (1, 57)


def test_a_container_counts_from_systemds_start() -> None:
    """72 (LXC): `Startup finished in 5.235s (userspace)`; no kernel in the container, its host's
    started weeks before (L44: `graphical.target reached after 2w 3d ...`)."""
    (b,) = _boots(str(extra_log("72"))).boots
    assert b.total.origin == "user space start" and b.alignment.origin == "userspace_start"
    assert b.total.duration_ns == 5_235 * MS
    doc = json.loads(cli("analyze", "--json", str(extra_log("72"))).stdout)
    assert doc["boots"][0]["total"]["from"] == "user space start" and doc["boots"][0]["origin"] == "userspace_start"
    out = cli("analyze", str(extra_log("72"))).stdout
    assert "user space start → startup finished: 5.235 s" in out and "kernel start" not in out


# (file, boot): {stage: systemd's printed figure in ms}, systemd's printed total in ms
FIGURES = [
    ("63", 0, {"kernel_init": 1452, "initramfs": 4636, "systemd": 42091}, 48180),
    ("63", 1, {"kernel_init": 1968, "userspace": 28740}, 30708),
    ("63", 2, {"kernel_init": 5569, "userspace": 4685}, 10254),
    ("64", 0, {"kernel_init": 1281, "initramfs": 7128, "systemd": 41840}, 50250),
    ("64", 1, {"kernel_init": 2000, "userspace": 75185}, 77185),
    ("65", 0, {"kernel_init": 1574, "initramfs": 13910, "systemd": 38216}, 53702),
    ("66", 0, {"kernel_init": 1574, "initramfs": 13910, "systemd": 38216}, 53702),
    ("67", 0, {"kernel_init": 2637, "userspace": 6605}, 9242),
    ("68", 0, {"kernel_init": 38563, "userspace": 115280}, 153843),
    ("69", 0, {"firmware": 9983, "bootloader": 7898, "kernel_init": 2025, "initramfs": 10603, "systemd": 26066},
     56577),
    ("70", 0, {"firmware": 7800, "bootloader": 3034, "kernel_init": 26227, "userspace": 25492}, 62554),
    ("71", 0, {"kernel_init": 19737, "userspace": 45565}, 65303),
    ("72", 0, {"systemd": 5235}, 5235),
]


@pytest.mark.parametrize(("num", "index", "parts", "total"), FIGURES)
def test_each_stage_is_systemds_printed_figure(num: str, index: int, parts: dict[str, int], total: int) -> None:
    """Each stage is the figure systemd printed (63's user space was 42.092 s for `42.091s`), its
    evidence exact to 1 ms, and the total systemd's own (its parts, each to the ms, add up to 1-2 ms
    less: 63's 48.179 s, 69's 56.575 s)."""
    b = _boots(str(extra_log(num))).boots[index]
    st = _st(b)
    assert {k: st[k] for k in parts} == {k: v * MS for k, v in parts.items()}
    assert b.total.duration_ns == total * MS
    ev = b.total.evidence
    assert ev is not None and (ev.kind, ev.low_ns, ev.high_ns, ev.tick_ns) == ("exact", total * MS, total * MS, MS)
    for s in b.stages:
        if s.name in parts:
            assert s.evidence is not None and s.evidence.tick_ns == MS and s.evidence.kind == "exact"


@pytest.mark.parametrize(("num", "userspace_ms"), [("63", 42_091), ("65", 38_216)])
def test_the_comparison_with_systemd_is_its_own_printed_figure(num: str, userspace_ms: int) -> None:
    """A boot of systemd's own figures compares them with themselves: equal to the ms (the
    systemd stage, not Startup finished's printed total less the parts before it)."""
    from bootlens.timeline.agreement import time_rows

    b = analyze_inputs([str(extra_log(num))], ParseOptions())[0].analysis.boots[0]
    (row,) = [r for r in time_rows(b) if r.name == "userspace"]
    assert row.systemd_ns == row.bootlens_ns == userspace_ms * 1_000_000
