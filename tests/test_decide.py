"""optimize's verdict (issue 27): a change judged on the stage it targets, with the total not
worse (a non-inferiority test with a stated margin), on real boots of the reference target
(tests/data/rerun: bootdelay=2 and bootdelay=0, booted interleaved; quiet/: on an idle host)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bootlens.experiment.measurement import Measured, decide, measure
from bootlens.experiment.configs import combine
from bootlens.stats.compare import ni_margin, non_inferior
from bootlens.stats.figures import Stat, stat

RERUN = Path(__file__).parent / "data" / "rerun"


def s(values_ms: list[float]) -> Stat:
    st = stat("x", [round(v * 1e6) for v in values_ms])
    assert st is not None
    return st


def test_the_margin_is_two_percent_of_the_baseline_or_the_floor() -> None:
    assert ni_margin(s([5000, 5000, 5000])) == pytest.approx(100e6)
    assert ni_margin(s([20, 20, 20])) == pytest.approx(1e6)  # the floor: 1 ms


def test_not_worse_worse_and_undecided() -> None:
    base = s([5000, 5010, 4990, 5005])
    assert non_inferior(base, s([5002, 5008, 4995, 5001])).holds is True  # the same, and precise
    worse = non_inferior(base, s([5400, 5410, 5390, 5405]))
    assert worse.holds is False and "worse by 400 ms" in worse.reason
    noisy = non_inferior(s([5000, 5150, 4850]), s([5020, 5170, 4870]))
    assert noisy.holds is None and noisy.need_boots is not None and noisy.need_boots > 1, noisy
    assert noisy.reason.startswith(f"need {noisy.need_boots} more boots a side")
    hopeless = non_inferior(s([5000, 5600, 4400]), s([5100, 5700, 4300]))
    assert hopeless.holds is None and hopeless.need_boots is None and "too noisy" in hopeless.reason
    assert non_inferior(s([5000]), s([5000])).holds is None  # one boot a side: no noise known


def rerun(name: str, quiet: bool = False) -> Measured:
    folder = RERUN / ("quiet" if quiet else "") / name
    return measure(combine(name, []), folder)


def test_the_countdown_is_kept_on_its_stage_on_an_idle_host() -> None:
    base, nodelay = rerun("bootdelay-2", quiet=True), rerun("bootdelay-0", quiet=True)
    d = decide(base, nodelay, "bootloader")
    assert d.keep is True and d.on == "bootloader" and d.boots == min(base.boots, nodelay.boots)
    assert d.reason.startswith("its stage (bootloader) is 2.") and "the total is not worse (upper bound −" in d.reason


def test_on_a_loaded_host_the_total_must_still_be_shown_not_worse() -> None:
    """The same change on the loaded host: its stage is plainly shorter, but 3 boots a side of a
    total that swings by seconds cannot show the rest of the boot did not pay for it."""
    base, nodelay = rerun("bootdelay-2"), rerun("bootdelay-0")
    first = [dataclasses.replace(m, stats={k: stat(k, list(v.values[:3])) for k, v in m.stats.items()}, boots=3,
                                 ready_boots=3) for m in (base, nodelay)]
    d = decide(first[0], first[1], "bootloader")
    assert d.on == "bootloader" and "its stage (bootloader) is 2." in d.reason
    assert d.keep is None or d.keep is True, d


def test_a_configuration_against_itself_is_not_kept() -> None:
    base = rerun("bootdelay-2", quiet=True)
    half = [dataclasses.replace(base, stats={k: stat(k, list(v.values[i::2])) for k, v in base.stats.items()},
                                boots=len(base.stats["bootloader"].values[i::2]),
                                ready_boots=len(base.stats["bootloader"].values[i::2])) for i in (0, 1)]
    for stage in ("bootloader", "kernel_init", "userspace", None):
        assert not decide(half[0], half[1], stage).keep, stage


def test_a_stage_not_measured_falls_back_to_the_total() -> None:
    base, nodelay = rerun("bootdelay-2", quiet=True), rerun("bootdelay-0", quiet=True)
    d = decide(base, nodelay, "no_such_stage")
    assert d.on == "total" and d.keep is True and d.reason.startswith("the total is 2.")


def test_boots_that_missed_ready_are_never_kept() -> None:
    base, nodelay = rerun("bootdelay-2", quiet=True), rerun("bootdelay-0", quiet=True)
    d = decide(base, dataclasses.replace(nodelay, ready_boots=nodelay.boots - 1), "bootloader")
    assert d.keep is False and "did not reach the ready marker" in d.reason
