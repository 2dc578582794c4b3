"""systemd-analyze outputs given alone (issue 28, class 5): as people paste them, with no boot log.
They were refused ("add to a boot: give the boot's log"); `Startup finished in ...` is the answer,
so they are analysed as a boot of systemd's own figures, on its monotonic clock, every figure
pointing at the output's line.

Real outputs: the shared corpus's more/42 (blame only) and, when $BOOTLENS_EXTRA_LOGS names their
folder, 65 (`time`, initrd), 69 and 72 (plot SVGs: firmware and loader; a container's user space
only). The facts are those their README and manifest give, measured with grep.
"""

from __future__ import annotations

import json

import pytest
from conftest import cli, extra_log, needs_wild, wild_log

from bootlens.timeline.inputs import analyze_inputs


def _boot(path: str):  # type: ignore[no-untyped-def]
    (group,) = analyze_inputs([path])
    (b,) = group.analysis.boots
    return b


def _stages(b) -> dict[str, int | None]:  # type: ignore[no-untyped-def]
    return {s.name: s.duration_ns for s in b.stages}


@needs_wild
def test_blame_alone_is_its_units() -> None:
    """more/42: 57 blame rows, 3.879 s first; units with durations and no timeline, said so."""
    b = _boot(str(wild_log("42")))
    units = [e for e in b.boot.events if e.name.endswith((".service", ".mount", ".device"))]
    assert len([e for e in b.boot.events]) == 57
    assert units[0].duration_ns == 3_879_000_000 and units[0].line_no == 1 and units[0].start is None
    assert b.partial_reasons == ("systemd-analyze outputs without 'time' or a plot: the units' durations, no timeline",)
    r = cli("analyze", str(wild_log("42")))
    assert r.returncode == 0 and "systemd-cryptsetup@" in r.stdout and "systemd's own figures" in r.stdout


def test_time_alone_with_an_initrd() -> None:
    """65: `1.574s (kernel) + 13.910s (initrd) + 38.216s (userspace) = 53.702s`."""
    b = _boot(str(extra_log("65")))
    st = _stages(b)
    assert st["kernel_init"] == 1_574_000_000 and st["initramfs"] == 13_910_000_000
    assert b.total.duration_ns == 53_702_000_000  # systemd's own total (its parts are rounded)
    assert all(e.line_no == 1 for e in b.boot.events)  # the Startup finished line
    assert {f.key: f.value for f in b.boot.facts}["systemd_time_initrd_s"] == "13.910"


def test_plot_alone_from_power_on() -> None:
    """69: a plot whose heading has firmware 9.983 s and loader 7.898 s: power-on 17.881 s before
    the kernel, its 369 units on systemd's clock, the slowest systemd-udev-settle.service."""
    b = _boot(str(extra_log("69")))
    st = _stages(b)
    assert (b.alignment.origin, b.alignment.power_on_ns) == ("power_on", 0)
    assert st["firmware"] == 9_983_000_000 and st["bootloader"] == 7_898_000_000 and st["kernel_init"] == 2_025_000_000
    assert b.total.duration_ns == 56_577_000_000
    assert b.top_units[0].name == "systemd-udev-settle.service"
    doc = json.loads(cli("analyze", "--json", str(extra_log("69"))).stdout)
    assert doc["boots"][0]["total"]["duration_s"] == pytest.approx(56.577)


def test_a_containers_plot_is_user_space_only() -> None:
    """72: `Startup finished in 5.235s (userspace)`: no kernel, no firmware."""
    b = _boot(str(extra_log("72")))
    assert b.total.duration_ns == 5_235_000_000 and not b.partial_reasons
    assert _stages(b)["kernel_init"] is None


def test_a_journal_in_another_locale() -> None:
    """73: `journalctl -x` in French (`févr. 05 17:36:57 NAS ...`, catalog lines `░░ ...`) was refused
    ("no boot found"); its month is read as the C library abbreviates it, and the boot runs from the
    first entry (17:36:57) to systemd's Startup finished (L1916, 17:37:32)."""
    (group,) = analyze_inputs([str(extra_log("73"))])
    (b,) = group.analysis.boots
    assert group.analysis.inputs[0].framing == "journalctl-short"
    assert b.total.duration_ns == 35_000_000_000 and "line 1916" in b.total.end


def test_a_plot_row_whose_bar_disagrees_with_its_own_figure() -> None:
    """71 (Sailfish OS): bluetooth.service's row says "(1.250s)" but its activating bar runs to the
    plot's end (30.157 s); systemd's own figure is kept, and the slowest unit is init-done.service
    (29.819s) as the plot says."""
    b = _boot(str(extra_log("71")))
    assert b.top_units[0].name == "init-done.service"
    assert abs((b.top_units[0].duration_ns or 0) - 29_819_000_000) <= 1_000_000
    bt = next(e for e in b.boot.events if e.name == "bluetooth.service")
    assert bt.duration_ns == 1_250_000_000
