"""systemd-analyze outputs, bootchart archives and boot-data files (issue 12, parts 1 and 4).

Golden cases, each an excerpt of a real public file (provenance and hand-checked facts in the
folder's README.md):

- tests/golden/systemd_analyze/<case>.<command>.<ext> -> <case>.<command>.expected.json, the
  command being time, blame, critical-chain, dump or plot;
- tests/golden/bootchart/<case>/ (an unpacked archive) -> <case>.expected.json;
- tests/golden/bootdata/<case>.txt -> <case>.expected.json.

These readers are not line parsers, so tests/test_golden.py does not see them. Regenerate with
``pytest tests/test_systemd_inputs.py --update-golden`` and review the diff.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import random
import tarfile
from pathlib import Path
from typing import Any

import pytest
from conftest import GOLDEN

from bootlens.timeline.analyze import analyze_paths
from bootlens.core.model import NS_PER_MS, NS_PER_S, Fact
from bootlens.sources.bootdata import reader as bootdata
from bootlens.sources.systemd_analyze import reader as systemd_analyze
from bootlens.sources.bootchart.reader import read_bootchart, sniff_bootchart
from bootlens.sources.systemd_analyze.reader import (
    detect, parse_timespan, read_blame, read_critical_chain, read_dump, read_plot, read_plot_json, read_time)

SA = GOLDEN / "systemd_analyze"
BC = GOLDEN / "bootchart"
BD = GOLDEN / "bootdata"
READERS = {"time": read_time, "blame": read_blame, "critical-chain": read_critical_chain,
           "dump": read_dump, "plot": read_plot}
SA_CASES = sorted(p for p in SA.glob("*.*.*") if not p.name.endswith(".expected.json") and p.suffix != ".md")
BC_CASES = sorted(p for p in BC.iterdir() if p.is_dir()) if BC.is_dir() else []
BD_CASES = sorted(BD.glob("*.txt"))


def plain(obj: Any) -> Any:
    """A result as JSON data (dataclasses, tuples, enums)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Fact):  # a NamedTuple (start-up), written as the dataclass it was
        return obj._asdict()
    if isinstance(obj, (list, tuple)):
        return [plain(x) for x in obj]
    if isinstance(obj, enum.Enum):
        return obj.value
    return obj


def check_golden(got: Any, expected_path: Path, update: bool) -> None:
    got = json.loads(json.dumps(got))
    if update or not expected_path.exists():
        expected_path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n")
        if not update:
            pytest.fail(f"{expected_path.name} did not exist; written now, review and commit it")
    assert got == json.loads(expected_path.read_text())


def sa_produce(path: Path) -> Any:
    command = path.name.split(".")[1]
    return plain(READERS[command](path.read_text(encoding="utf-8")))


def bd_produce(path: Path) -> Any:
    bd = bootdata.read_bootdata(path.read_text(encoding="utf-8"), path.name)
    lines, stats, first = bd.kernel_lines()
    d = plain(bd)
    # The sections' text is the input itself: keep their names, lines and sizes only.
    d["sections"] = [[s.name, s.line_no, len(s.text.splitlines())] for s in bd.sections]
    d["config"] = {"count": len(bd.config), "first": list(bd.config[:5]), "last": list(bd.config[-3:])}
    d["kernel_lines"] = {"first_line": first, "framing": stats.framing, "lines": len(lines),
                         "first": lines[0].text if len(lines) else None,
                         "last_kernel_ns": lines[len(lines) - 1].kernel_ns if len(lines) else None}
    return d


def test_every_reader_has_cases() -> None:
    have = {p.name.split(".")[1] for p in SA_CASES}
    assert set(READERS) <= have, f"systemd-analyze commands without golden cases: {set(READERS) - have}"
    assert BC_CASES and BD_CASES


@pytest.mark.parametrize("path", SA_CASES, ids=[p.name for p in SA_CASES])
def test_systemd_analyze_golden(path: Path, update_golden: bool) -> None:
    name = path.name.rsplit(".", 1)[0]
    check_golden(sa_produce(path), path.with_name(name + ".expected.json"), update_golden)


@pytest.mark.parametrize("path", BC_CASES, ids=[p.name for p in BC_CASES])
def test_bootchart_golden(path: Path, update_golden: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BC)
    check_golden(plain(read_bootchart(path.name)), BC / f"{path.name}.expected.json", update_golden)


@pytest.mark.parametrize("path", BD_CASES, ids=[p.name for p in BD_CASES])
def test_bootdata_golden(path: Path, update_golden: bool) -> None:
    check_golden(bd_produce(path), path.with_suffix(".expected.json"), update_golden)


# ------------------------------------------------------------------ hand-checked facts (README)

def test_timespan_forms() -> None:
    assert parse_timespan("1min 37.650s") == 97_650 * NS_PER_MS
    assert parse_timespan("581us") == 581_000
    assert parse_timespan("581μs") == 581_000
    assert parse_timespan("345ms") == 345 * NS_PER_MS
    assert parse_timespan("1h 2min") == 3720 * NS_PER_S
    assert parse_timespan("1.234567s") == 1_234_567_000
    assert parse_timespan("0.1s") == 100 * NS_PER_MS
    for bad in ("", "s", "12", "1.2.3s", "12 apples", "-1s", "1min x"):
        assert parse_timespan(bad) is None, bad


def test_time_facts() -> None:
    t = read_time((SA / "ubuntu-vbox.time.txt").read_text())
    # "11.704s (firmware) + 9.581s (loader) + 5.293s (kernel) + 1min 14.580s (userspace) = 1min 41.159s"
    assert (t.firmware_ns, t.loader_ns, t.kernel_ns, t.userspace_ns) == (
        11_704 * NS_PER_MS, 9_581 * NS_PER_MS, 5_293 * NS_PER_MS, 74_580 * NS_PER_MS)
    assert t.total_ns == 101_159 * NS_PER_MS and t.initrd_ns is None
    assert (t.target, t.target_ns) == ("graphical.target", 23_746 * NS_PER_MS)
    # systemd >= 254 ends the second line with a period; a container prints no total
    t2 = read_time("Startup finished in 296ms (userspace)\nmulti-user.target reached after 275ms in userspace.\n")
    assert (t2.userspace_ns, t2.total_ns, t2.target_ns) == (296 * NS_PER_MS, 296 * NS_PER_MS, 275 * NS_PER_MS)
    t3 = read_time("Bootup is not yet finished (org.freedesktop.systemd1.Manager.FinishTimestampMonotonic=0).\n")
    assert t3.line_no == 0 and "not finished" in t3.warnings[0]


def test_blame_facts() -> None:
    b = read_blame((SA / "ubuntu-vbox.blame.txt").read_text())
    assert len(b.rows) == 168 and not b.warnings  # grep -c '' gives 168 rows
    assert (b.rows[0].unit, b.rows[0].ns) == ("fstrim.service", 97_650 * NS_PER_MS)
    assert (b.rows[-1].unit, b.rows[-1].ns) == ("snapd.socket", 581_000)
    m = read_blame((SA / "mandriva-2015.blame.txt").read_text())
    assert len(m.rows) == 6 and m.warnings == ("blame: 1 line not understood",)  # the "..." line


def test_critical_chain_facts() -> None:
    c = read_critical_chain((SA / "mandriva-2015.critical-chain.txt").read_text())
    assert [n.depth for n in c.nodes] == list(range(12)) and not c.warnings
    ns = {n.unit: n for n in c.nodes}
    assert ns["network-up.service"].at_ns == 5_286 * NS_PER_MS
    assert ns["network-up.service"].duration_ns == 12_849 * NS_PER_MS
    assert ns["local-fs-pre.target"].at_ns == 555 * NS_PER_MS and ns["local-fs-pre.target"].duration_ns is None
    assert c.nodes[ns["shorewall6.service"].parent or 0].unit == "multi-user.target"
    # its "+" agrees with blame of the same boot (the blog printed both)
    blame = read_blame((SA / "mandriva-2015.blame.txt").read_text()).by_unit()
    for unit in ("network-up.service", "shorewall6.service", "mandriva-everytime.service"):
        assert ns[unit].duration_ns == blame[unit]


def test_critical_chain_branches_ascii_and_colour() -> None:
    # systemd's own layout (src/analyze/analyze-critical-chain.c): "├─" siblings keep "│ " below
    # them; colour (ansi_highlight_red) wraps the times of units that took time to start.
    text = ("graphical.target @4.536s\n"
            "└─multi-user.target @4.447s\n"
            "  ├─a.service @1.1s \x1b[0;1;31m+3.3s\x1b[0m\n"
            "  │ └─-.mount @1.0s\n"
            "  └─b.service @2min 1.5s +44us\n"
            "`-c.target @1s\n"
            "garbage line with spaces\n")
    c = read_critical_chain(text)
    got = [(n.unit, n.depth, n.parent, n.at_ns, n.duration_ns) for n in c.nodes]
    assert got == [("graphical.target", 0, None, 4_536 * NS_PER_MS, None),
                   ("multi-user.target", 1, 0, 4_447 * NS_PER_MS, None),
                   ("a.service", 2, 1, 1_100 * NS_PER_MS, 3_300 * NS_PER_MS),
                   ("-.mount", 3, 2, 1_000 * NS_PER_MS, None),
                   ("b.service", 2, 1, 121_500 * NS_PER_MS, 44_000),
                   ("c.target", 1, 0, NS_PER_S, None)]
    assert c.warnings == ("critical-chain: 1 line not understood",)


def test_plot_agrees_with_its_own_startup_line() -> None:
    """Each SVG carries systemd-analyze time's text; its stage bars must say the same (the bars
    have 10 us resolution, the text 1 ms), and the default target becomes active exactly
    "reached after" past the start of user space."""
    for path in sorted(SA.glob("*.plot.svg")):
        p = read_plot(path.read_text())
        st = p.startup
        assert st is not None and st.kernel_ns is not None and p.kernel_end_ns is not None
        assert abs(p.kernel_end_ns - st.kernel_ns) < NS_PER_MS, path.name
        assert p.userspace_ns is not None
        if st.initrd_ns is not None:
            assert abs(p.userspace_ns - p.kernel_end_ns - st.initrd_ns) < 2 * NS_PER_MS, path.name
        if st.firmware_ns is not None and p.firmware_ns is not None and p.loader_ns is not None:
            assert abs(-p.firmware_ns + p.loader_ns - st.firmware_ns) < NS_PER_MS
            assert abs(-p.loader_ns - (st.loader_ns or 0)) < NS_PER_MS
        target = next((u for u in p.units if u.unit == st.target), None)
        if target is not None and target.active_ns is not None and st.target_ns is not None:
            assert abs(target.active_ns - p.userspace_ns - st.target_ns) < NS_PER_MS, path.name
        # the label's "(1.234s)" is blame's figure: it matches the bars unless the unit was
        # still activating when the chart was drawn (the bar is cut at the chart's end)
        for u in p.units:
            if u.time_ns is not None and u.activation_ns is not None and u.active_ns != u.deactivating_ns:
                assert abs(u.activation_ns - u.time_ns) <= NS_PER_MS, (path.name, u)


def test_debian12_qemu_readers_agree() -> None:
    """One boot of the systemd QEMU target (systemd 252): blame equals the plot's activating
    bars and the chain's "@" is the plot's time past the start of user space, to the 1 ms that
    blame and the chain print."""
    plot = read_plot((SA / "debian12-qemu.plot.svg").read_text())
    units = {u.unit: u for u in plot.units}
    blame = read_blame((SA / "debian12-qemu.blame.txt").read_text())
    chain = read_critical_chain((SA / "debian12-qemu.critical-chain.txt").read_text())
    assert len(blame.rows) == 37 and len(chain.nodes) == 15 and plot.userspace_ns is not None
    pairs = [(units[r.unit], r.ns) for r in blame.rows if r.unit in units]
    assert len(pairs) >= 30
    for pu, ns in pairs:
        assert pu.activation_ns is not None and abs(pu.activation_ns - ns) < NS_PER_MS, pu
    at = {n.unit: n for n in chain.nodes}
    assert at["systemd-user-sessions.service"].at_ns == 60_387 * NS_PER_MS  # "@1min 387ms"
    for n in chain.nodes:
        u = units.get(n.unit)
        if u is not None and n.at_ns is not None and u.active_ns is not None:
            t = u.active_ns if n.duration_ns is None else u.activating_ns
            assert abs(t - plot.userspace_ns - n.at_ns) < NS_PER_MS, n


def test_plot_tooltips_systemd_255() -> None:
    """systemd 255 wraps each row in <g> with a <title> (src/analyze/analyze-plot.c, commit
    ffdd28c): "Activating: %lu.%.3lu" prints the microseconds as an integer of at least three
    digits, so "2.050" is 2 s + 50 us."""
    svg = ('<svg><text x="20" y="50">Startup finished in 1.000s (kernel) + 2.000s (userspace) = 3.000s</text>'
           '<g transform="translate(20.000,100)">\n<rect class="box" x="0" y="0" width="300.000" height="60.000" />\n'
           '  <rect class="kernel" x="0.000" y="0.000" width="100.000" height="19.000" />\n'
           '  <text class="left" x="5.000" y="14.000">kernel</text>\n'
           '<g>\n<title>x.service:\nActivating: 2.050\nActivated: 2.123456\n\nAfter:\n  a.target\n  b.socket\n'
           '\nWants:\n  c.service\n</title>\n'
           '  <rect class="activating" x="200.005" y="20.000" width="12.341" height="19.000" />\n'
           '  <rect class="active" x="212.346" y="20.000" width="87.654" height="19.000" />\n'
           '  <rect class="deactivating" x="300.000" y="20.000" width="0.000" height="19.000" />\n'
           '  <text class="left" x="205.005" y="34.000">x.service (123ms)</text>\n</g>\n</g>\n'
           '<g transform="translate(20,100)">\n  <rect class="activating" x="0.000" y="80.000" width="30.000" />\n'
           '  <text class="left" x="45.000" y="94.000">Activating</text>\n</g>\n</svg>\n')
    p = read_plot(svg)
    (u,) = p.units
    assert (u.unit, u.activating_ns, u.active_ns, u.time_ns) == ("x.service", 2_000_050_000, 2_123_456_000, 123 * NS_PER_MS)
    assert u.depends("After") == ("a.target", "b.socket") and u.depends("Wants") == ("c.service",)
    assert p.source == "svg+title" and not p.warnings


def test_plot_json_table() -> None:
    """``plot --json=short`` (systemd >= 254, produce_plot_as_text): microsecond numbers."""
    p = read_plot('[{"name":"a.service","activated":2500000,"activating":2000000,"time":500000,'
                  '"deactivated":null,"deactivating":null},{"name":7},"x"]')
    assert p.source == "json" and len(p.units) == 1
    assert (p.units[0].activating_ns, p.units[0].active_ns, p.units[0].time_ns) == (2 * NS_PER_S, 2_500 * NS_PER_MS, 500 * NS_PER_MS)
    assert p.warnings == ("plot json: 2 lines not understood",)
    assert read_plot_json("{oops").warnings[0].startswith("plot: not JSON")


def test_dump_facts() -> None:
    d = read_dump((SA / "fedora-2017.dump.txt").read_text())
    (u,) = d.units
    assert (u.unit, u.description, u.active_state) == ("multi-user.target", "Multi-User System", "active")
    assert u.names == ("runlevel3.target", "runlevel2.target", "multi-user.target", "runlevel4.target")
    assert u.inactive_exit is not None and u.inactive_exit.text == "Thu 2017-04-27 08:12:54 CEST"
    assert u.active_exit is None and d.unit("runlevel2.target") is u
    # dependency lines as systemd >= 236 prints them, with their origin in parentheses
    d2 = read_dump("-> Unit app.service:\n\tDescription: App\n\tAfter: basic.target (origin-file)\n"
                   "\tWants: net.target (origin-file destination-file)\n\tNonsense line\n-> Job 3:\n\tFoo: bar\n")
    (a,) = d2.units
    assert a.depends("After") == ("basic.target",) and a.depends("Wants") == ("net.target",)
    assert d2.warnings == ("dump: 1 line not understood",)


def test_dump_systemd_252_facts() -> None:
    """systemd 252's own dump (Debian 12): the "-> By units:" / "-> By jobs:" frame, tab indents,
    dependency lines with their origin in parentheses."""
    d = read_dump((SA / "debian12-systemd252.dump.txt").read_text())
    assert [u.unit for u in d.units] == ["var-tmp.mount", "multi-user.target"] and not d.warnings
    assert d.units[0].load_state == "not-found" and not d.units[0].dependencies
    mu = d.units[1]
    assert mu.fragment_path == "/lib/systemd/system/multi-user.target"
    assert mu.depends("Requires") == ("basic.target",) and len(mu.depends("Wants")) == 10
    assert len(mu.dependencies) == 46 and "getty.target" in mu.depends("After")
    assert mu.depends("Conflicts") == ("rescue.target", "shutdown.target", "rescue.service")


def test_detect() -> None:
    for path in SA_CASES:
        assert detect(path.read_text()) == path.name.split(".")[1], path.name
    assert detect("hello\nworld\n") is None


def test_bad_input_never_raises() -> None:
    rnd = random.Random(12)
    samples = [p.read_text() for p in SA_CASES]
    for _ in range(300):
        s = rnd.choice(samples)
        i, j = sorted(rnd.randrange(len(s) + 1) for _ in range(2))
        cut = s[i:j] + "".join(chr(rnd.randrange(1, 0x3000)) for _ in range(rnd.randrange(20)))
        for reader in READERS.values():
            reader(cut)
        detect(cut)
        bootdata.read_bootdata(cut)
    assert read_plot("<svg></svg>").warnings


def test_bootchart_facts() -> None:
    b = read_bootchart(BC / "ubuntu-8.10")
    assert b.kernel_version == "2.6.27-10-generic" and b.collector == "bootchartd" and not b.warnings
    assert b.cmdline == "root=UUID=a0b77e99-bc85-4045-b488-4182f8f8c6b8 ro quiet splash"
    # proc_stat.log blocks 154 and 175: "cpu  2 0 117 145 0 ..." then "cpu  7 0 134 162 0 ...":
    # user 5, system 17, idle 17, iowait 0 of 39 ticks
    first = b.cpu[0]
    assert first.ns == 1_750 * NS_PER_MS and (round(first.user * 39), round(first.sys * 39), first.io_wait) == (5, 17, 0)
    init = next(p for p in b.processes if p.pid == 1)
    assert (init.comm, init.ppid, init.first_ns) == ("init", 0, 290 * NS_PER_MS)  # starttime 29 ticks


def test_bootchart_tar_equals_directory(tmp_path: Path) -> None:
    tgz = tmp_path / "bootlog.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        for f in sorted((BC / "ubuntu-8.10").iterdir()):
            tar.add(f, arcname=f"bootlog/{f.name}")
    assert sniff_bootchart(tgz) and sniff_bootchart(BC / "ubuntu-8.10")
    a, b = read_bootchart(tgz), read_bootchart(BC / "ubuntu-8.10")
    assert dataclasses.replace(a, source="") == dataclasses.replace(b, source="")
    broken = tmp_path / "broken.tgz"
    broken.write_bytes(tgz.read_bytes()[:300])
    assert read_bootchart(broken).warnings and not sniff_bootchart(tmp_path / "missing")


def test_bootdata_kernel_log_through_the_pipeline(tmp_path: Path) -> None:
    (path,) = BD_CASES
    bd = bootdata.read_bootdata(path.read_text(), path.name)
    assert bootdata.sniff_bootdata(path.read_text())
    assert bd.fact("gbd_version") == "1.5" and bd.config_value("CONFIG_PRINTK_TIME") == "y"
    log = tmp_path / "dmesg.log"
    log.write_text(bd.kernel_log)
    (boot,) = analyze_paths([str(log)]).boots
    version = boot.boot.fact("kernel_version")
    assert version is not None and bd.fact("kernel_version", ) is not None
    assert version.value.split()[0] == (bd.fact("kernel_version") or "").split()[0]


def test_module_sizes() -> None:
    for mod in (systemd_analyze, bootdata):
        assert mod.__file__ is not None and len(Path(mod.__file__).read_text().splitlines()) < 620


# A boot of the Debian 12 systemd QEMU target, collected in the guest (another part of issue
# 12): time, blame, critical-chain, plot.svg and dump (conftest.systemd_boot).


def _collected(folder: Path, stem: str) -> str | None:
    """The output of one command: guest/analyze-blame.txt, blame.txt, or the like."""
    for pattern in (f"**/analyze-{stem}.*", f"**/{stem}.*", f"**/{stem}*"):
        found = sorted(p for p in folder.glob(pattern) if p.is_file())
        if found:
            return found[0].read_text(encoding="utf-8", errors="replace")
    return None


def test_collected_boot_readers_agree(systemd_boot: Path) -> None:
    """blame, critical-chain, time, plot and dump of one boot say the same: blame is the plot's
    activating bars (1 ms print resolution), the chain's "@" is the plot's activation start (with
    a "+") or active time, past the start of user space, the plot's kernel bar is time's kernel, and dump's
    wall-clock timestamps (1 s resolution) bound blame's times."""
    texts = {k: _collected(systemd_boot, k) for k in ("time", "blame", "critical-chain", "plot", "dump")}
    assert all(v is not None for v in texts.values()), texts.keys()
    plot = read_plot(texts["plot"]) if texts["plot"] else None
    checked = 0
    if plot is not None and texts["blame"]:
        units = {u.unit: u for u in plot.units}
        for row in read_blame(texts["blame"]).rows:
            u = units.get(row.unit)
            if u is not None and u.activation_ns is not None and u.active_ns != u.deactivating_ns:
                assert abs(u.activation_ns - row.ns) <= NS_PER_MS + 10_000, (row, u)
                checked += 1
    if plot is not None and texts["critical-chain"] and plot.userspace_ns is not None:
        units = {u.unit: u for u in plot.units}
        for n in read_critical_chain(texts["critical-chain"]).nodes:
            u = units.get(n.unit)
            if u is not None and n.at_ns is not None and u.active_ns is not None:
                at = u.active_ns if n.duration_ns is None else u.activating_ns
                assert abs(at - plot.userspace_ns - n.at_ns) <= 2 * NS_PER_MS, (n, u)
                checked += 1
    if plot is not None and texts["time"]:
        t = read_time(texts["time"])
        if t.kernel_ns is not None and plot.kernel_end_ns is not None:
            assert abs(plot.kernel_end_ns - t.kernel_ns) <= NS_PER_MS
            checked += 1
    if texts["dump"] and texts["blame"]:
        dump = read_dump(texts["dump"])
        for row in read_blame(texts["blame"]).rows:
            du = dump.unit(row.unit)
            if du and du.inactive_exit and du.active_enter and du.inactive_exit.wall_s is not None \
                    and du.active_enter.wall_s is not None:
                assert abs((du.active_enter.wall_s - du.inactive_exit.wall_s) * NS_PER_S - row.ns) <= 1_001 * NS_PER_MS
                checked += 1
    assert checked, f"nothing to compare in {systemd_boot}"
