"""The critical chain (bootlens.timeline.chain, analyze --critical-chain) on real logs of the shared corpus."""

from __future__ import annotations

import json

import pytest
from conftest import cli, wild_log

from bootlens.timeline.analyze import analyze_paths
from bootlens.timeline.chain import AFTER, ESTIMATE, critical_chain


def _chain(path: object, after: dict[str, list[str]] | None = None):  # type: ignore[no-untyped-def]
    b = analyze_paths([str(path)]).boots[0]
    return b, critical_chain(b, after)


def test_estimate_on_a_dmesg_with_systemd() -> None:
    # wild 30: Arch Linux 4.4 dmesg, systemd 22x through kmsg, an initramfs before the root's systemd
    # (grep -n: "systemd 2" at line 628, 3.685 s; "Run /init" ... initramfs; Local File Systems last)
    b, c = _chain(wild_log("30"))
    kinds = [lk.kind for lk in c.links]
    assert kinds[-1] == "origin" and "milestone" in kinds and "stage" in kinds
    assert c.estimated and all(lk.how in (ESTIMATE, "stage") for lk in c.links)
    # each link became active no later than the one above it waited for it
    ats = [lk.at_ns for lk in c.links if lk.at_ns is not None]
    assert ats == sorted(ats, reverse=True)
    names = c.units()
    assert "Create Static Device Nodes in /dev" in names
    # a unit link of the estimate is a start job, and its "+" is its own activating time
    create = next(lk for lk in c.links if lk.name == "Create Static Device Nodes in /dev")
    assert create.duration_ns is not None and 600_000_000 <= create.duration_ns <= 700_000_000
    # below systemd: the initramfs, kernel init, kernel start
    below = [lk.name for lk in c.links[c.links.index(next(lk for lk in c.links if lk.kind == "milestone")):]]
    assert below[0] == "systemd started" and below[-1] == "kernel start"
    assert any("initramfs" in n for n in below) and "kernel init" in below


def test_after_dependencies_decide_the_link() -> None:
    b, est = _chain(wild_log("30"))
    top = est.units()[0]
    # with an After= map the walk follows it: the top unit ordered after one that came earlier
    # than the estimate's choice, which then becomes the next link
    first_units = [lk for lk in est.links if lk.kind == "unit"]
    assert len(first_units) >= 2
    older = first_units[-1].name
    _, exact = _chain(wild_log("30"), {top: [older, "no-such.target"]})
    assert exact.units()[:2] == [top, older]
    assert not exact.estimated and exact.links[exact.links.index(next(lk for lk in exact.links
                                                                      if lk.name == older))].how == AFTER


def test_cli_tree_and_json() -> None:
    r = cli("analyze", "--critical-chain", str(wild_log("30")))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(ln.startswith("└─") for ln in lines) and "kernel start @0.000s" in r.stdout
    assert "~ an estimate" in r.stdout
    j = cli("analyze", "--critical-chain", "--json", str(wild_log("30")))
    doc = json.loads(j.stdout)
    links = doc["critical_chains"][0]["links"]
    assert links[-1]["kind"] == "origin" and doc["critical_chains"][0]["estimated"] is True


@pytest.mark.parametrize("args,msg", [
    (("--critical-chain", "--summary"), "choose one"),
    (("--systemd-dump", "x.txt"), "--critical-chain"),
])
def test_cli_usage_errors(args: tuple[str, ...], msg: str) -> None:
    r = cli("analyze", *args, str(wild_log("30")))
    assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr
