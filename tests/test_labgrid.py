"""Boots through labgrid: a real labgrid coordinator and exporter on loopback, a place created,
acquired and released with labgrid-client, the console a NetworkSerialPort read through labgrid's
SerialDriver, the power labgrid's ExternalPowerDriver (tests/labgrid_lab.py builds the lab).

The board is a replay of real recordings of the QEMU reference target (fast), or the QEMU
reference target itself (slow: three boots with statistics, the issue's bar)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import cli, needs_qemu

try:
    import labgrid  # type: ignore[import-untyped]  # noqa: F401
    HAVE_LABGRID = True
except ImportError:
    HAVE_LABGRID = False

if not HAVE_LABGRID and not os.environ.get("CI"):  # under CI a missing labgrid is a failure
    pytest.skip("labgrid is not installed (pip install 'bootlens[labgrid]')", allow_module_level=True)

from labgrid_lab import HERE, Lab  # noqa: E402

from bootlens.lab.labgrid import LabgridSpec, LabgridTarget, _override  # noqa: E402
from bootlens.capture.recording import Recording, read_recording  # noqa: E402
from bootlens.targets.runs import analyze_run, run_target  # noqa: E402
from bootlens.stats.figures import statistics_of  # noqa: E402
from bootlens.timeline.analyze import analyze_paths  # noqa: E402

DATA = Path(__file__).parent / "data"
ARM64_RUN = DATA / "advise" / "qemu-arm64-run"  # our own boots of qemu-arm64 (bootlens run, 2 boots)
RERUN = DATA / "rerun"  # bootdelay-2 / bootdelay-0: README.md there


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab = Lab(tmp_path_factory.mktemp("lab"))
    try:
        lab.start()
        yield lab
        lab.release()
        assert "acquired: None" in lab.client("-p", lab.place, "show").stdout  # released
    finally:
        lab.stop()


def replay_board(recordings: list[Path], **extra: object) -> dict[str, object]:
    paths = [str(p.resolve()) for p in recordings]
    return {"kind": "replay", "recordings": paths, "base": paths, **extra}


def line_times(rec: Recording) -> dict[bytes, int]:
    """Each line that occurs once in a recording, with the time of the chunk that brought its first byte."""
    out: list[tuple[bytes, int]] = []
    buf, start = b"", None
    for c in rec.chunks:
        data = c.data
        while data:
            start = c.t_ns if start is None else start
            nl = data.find(b"\n")
            if nl < 0:
                buf += data
                break
            out.append((buf + data[:nl], start))
            buf, start, data = b"", None, data[nl + 1:]
    seen = Counter(text for text, _ in out)
    return {text: t for text, t in out if seen[text] == 1}


def assert_replayed(path: Path, orig_path: Path, source: str) -> None:
    """The recording holds the replayed boot's bytes from power-on to APP READY, every line at
    its time in the original recording give or take tens of milliseconds."""
    rec, orig = read_recording(str(path)), read_recording(str(orig_path))
    assert rec.header.origin == "power_on" and rec.header.source == source
    assert orig.data.startswith(rec.data) and b"APP READY" in rec.data  # nothing lost, nothing left over
    ours, theirs = line_times(rec), line_times(orig)
    offsets = sorted(t - theirs[text] for text, t in ours.items() if text in theirs)
    assert len(offsets) > 200
    median = offsets[len(offsets) // 2]
    # t=0 is when the power-on command returns, a few ms after the replay starts
    assert -100e6 < median < 50e6, median
    # a line late by more is one the reader fell behind on (reading one byte per call through
    # labgrid put the kernel's burst 1.5 s behind); a loaded 2-core machine costs some tens of ms
    spread = sorted(abs(o - median) for o in offsets)
    assert spread[int(0.9 * len(spread))] < 150e6 and spread[-1] < 400e6, spread[-10:]


def test_replayed_boots_through_labgrid_keep_their_times(lab: Lab, tmp_path: Path) -> None:
    """Two boots through the coordinator, the exporter's NetworkSerialPort and ExternalPowerDriver:
    each recording is the replayed boot's bytes, from power-on to APP READY, every line within
    tens of milliseconds of its time in the original recording."""
    originals = sorted(ARM64_RUN.glob("boot-*.rec"))
    env = lab.env(replay_board(originals))
    run = run_target(LabgridTarget(LabgridSpec(str(env)), "APP READY", 60), tmp_path / "run", 2)
    assert run.recordings == 2 and run.ready_count == 2 and not run.not_ready
    assert "acquired: None" not in lab.client("-p", lab.place, "show").stdout  # bootlens never releases it
    replayed = (lab.root / "replayed.txt").read_text().split()[-2:]
    for i, (boot, orig_path) in enumerate(zip(run.analysis.boots, replayed), 1):
        assert_replayed(tmp_path / "run" / f"boot-{i}.rec", Path(orig_path), "labgrid:main:SerialDriver")
        assert boot.total.end_name == "ready" and boot.alignment.origin == "power_on"
        orig_total = analyze_run(ARM64_RUN).analysis.boots[originals.index(Path(orig_path))].total.end_ns
        assert orig_total is not None and boot.total.end_ns is not None
        assert abs(boot.total.end_ns - orig_total) < 100e6
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["target"] == "labgrid" and meta["markers"] == {"ready": "APP READY"}
    assert meta["labgrid"]["console"] == "SerialDriver" and meta["labgrid"]["power"] == "ExternalPowerDriver"
    assert meta["labgrid"]["off_s"] == 0.3


@pytest.mark.skipif(not (shutil.which("ser2net") or os.path.exists("/usr/sbin/ser2net")) and not os.environ.get("CI"),
                    reason="ser2net is not installed (apt-get install ser2net)")
def test_rfc2217_console_through_ser2net(tmp_path: Path) -> None:
    """labgrid's usual console: the exporter serves a serial device (here the cable's
    pseudo-terminal, as a RawSerialPort) through ser2net, the client reads it over RFC 2217
    with pyserial-labgrid's port. The place is created, acquired and released."""
    lab = Lab(tmp_path / "lab", serial="rfc2217")
    (tmp_path / "lab").mkdir()
    try:
        lab.start()
        assert f"{lab.place}" in lab.client("places").stdout
        orig = ARM64_RUN / "boot-1.rec"
        env = lab.env(replay_board([orig]))
        # a process of its own: labgrid keeps one coordinator session per process (the module's lab is another)
        r = cli("run", "labgrid", "--env", str(env), "-o", str(tmp_path / "run"))
        assert r.returncode == 0, r.stderr[-2000:]
        assert_replayed(tmp_path / "run" / "boot-1.rec", orig, "labgrid:main:SerialDriver")
        assert "RawSerialPort" in lab.client("-p", lab.place, "show").stdout
        lab.release()
        assert "acquired: None" in lab.client("-p", lab.place, "show").stdout
    finally:
        lab.stop()


def test_cli_run_labgrid_then_analyze(lab: Lab, tmp_path: Path) -> None:
    """``bootlens run labgrid`` through the real entry point, --place and --coordinator given
    explicitly (the environment names neither correctly); the run folder analyses."""
    env = lab.env(replay_board([ARM64_RUN / "boot-1.rec"]), name="env-elsewhere.yaml")
    text = env.read_text().replace(f"name: {lab.place}", "name: nowhere")
    text = text.replace(lab.address, "127.0.0.1:9")  # the discard port: nobody answers there
    env.write_text(text)
    out = tmp_path / "run"
    r = cli("run", "labgrid", "--env", str(env), "--place", lab.place, "--coordinator", lab.address,
            "--repeat", "1", "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    assert len(doc["boots"]) == 1
    r = cli("analyze", str(out))
    assert r.returncode == 0 and "ready" in r.stdout


def test_place_not_acquired_is_a_one_line_error(lab: Lab, tmp_path: Path) -> None:
    lab.client("-p", "spare", "create")
    lab.client("-p", "spare", "add-match", "bootlens-lab/cable/*")
    env = lab.env(replay_board([ARM64_RUN / "boot-1.rec"]), name="env-spare.yaml")
    r = cli("run", "labgrid", "--env", str(env), "--place", "spare", "-o", str(tmp_path / "run"))
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("bootlens: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "spare" in r.stderr and "acquire" in r.stderr


def test_power_switch_failure_is_a_one_line_error(lab: Lab, tmp_path: Path) -> None:
    env = lab.env(replay_board([ARM64_RUN / "boot-1.rec"]), name="env-broken.yaml")
    env.write_text(env.read_text().replace(f"{HERE} on ", f"{HERE} no-such-command "))
    r = cli("run", "labgrid", "--env", str(env), "-o", str(tmp_path / "run"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "power on (ExternalPowerDriver)" in r.stderr, r.stderr


def test_missing_role_and_missing_power_are_one_line_errors(tmp_path: Path) -> None:
    env = tmp_path / "env.yaml"
    env.write_text("targets:\n  main:\n    resources:\n      RawSerialPort:\n        port: /dev/null\n"
                   "    drivers:\n      SerialDriver: {}\n")
    r = cli("run", "labgrid", "--env", str(env), "--role", "board2", "-o", str(tmp_path / "a"))
    assert r.returncode == 2 and "no role 'board2' (roles: main)" in r.stderr, r.stderr
    r = cli("run", "labgrid", "--env", str(env), "-o", str(tmp_path / "b"))
    assert r.returncode == 2 and "no power switch" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    r = cli("experiment", "labgrid", "--env", str(env), "--try", "q=cmdline:quiet", "-o", str(tmp_path / "d"))
    assert r.returncode == 2 and "labgrid needs --hook" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    env.write_text("targets: [unclosed\n")
    r = cli("run", "labgrid", "--env", str(env), "-o", str(tmp_path / "c"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


def test_place_and_coordinator_override_the_environment() -> None:
    """--place replaces the RemotePlace's name (or adds one) in both of labgrid's resource forms."""

    class Config:
        def __init__(self, data: dict[str, object]) -> None:
            self.data = data

        def set_option(self, name: str, value: str) -> None:
            self.data.setdefault("options", {})[name] = value  # type: ignore[attr-defined]

    as_map = Config({"targets": {"main": {"resources": {"RemotePlace": {"name": "a"}}}}})
    _override(as_map, LabgridSpec("e", place="b", coordinator="h:1"))
    assert as_map.data == {"targets": {"main": {"resources": {"RemotePlace": {"name": "b"}}}},
                           "options": {"coordinator_address": "h:1"}}
    as_list = Config({"targets": {"main": {"resources": [{"RawSerialPort": {"port": "/dev/x"}}]}}})
    _override(as_list, LabgridSpec("e", place="b"))
    assert as_list.data["targets"]["main"]["resources"][0] == {"RemotePlace": {"name": "b"}}  # type: ignore[index]


def test_pyserial_labgrid_fork_serves_bootlens_ports() -> None:
    """labgrid needs pyserial-labgrid, a fork of pyserial 3.5 that installs the same ``serial``
    package: the fork's files must be the ones imported (its rfc2217 port sets a read timeout
    without renegotiating the line, which labgrid's SerialDriver does at every read), and
    bootlens's own socket:// console (SerialSource) must still work with them."""
    import serial  # type: ignore[import-untyped]
    import serial.rfc2217  # type: ignore[import-untyped]

    fork = importlib.metadata.version("pyserial-labgrid")
    assert serial.__version__ == fork, f"serial/ is pyserial's {serial.__version__}, not pyserial-labgrid {fork}"
    assert "timeout" in vars(serial.rfc2217.Serial)  # the fork's own setter

    from bootlens.capture.loop import capture
    from bootlens.capture.sources import SerialSource

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def talk() -> None:
        conn, _ = srv.accept()
        # (bytes sent at once are kept too since issue 29: tests/test_capture_network.py)
        time.sleep(0.5)
        conn.sendall(b"U-Boot 2023.01\nAPP READY\n")
        conn.recv(1)  # until the capture closes the port

    th = threading.Thread(target=talk, daemon=True)
    th.start()
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"bootlens-socket-{os.getpid()}.rec"
    try:
        r = capture(SerialSource(f"socket://127.0.0.1:{srv.getsockname()[1]}"), str(out),
                    quit_pattern="APP READY", end_s=10)
        assert r.reason == "quit pattern"
        assert read_recording(str(out)).data == b"U-Boot 2023.01\nAPP READY\n"
    finally:
        out.unlink(missing_ok=True)
        srv.close()


@pytest.mark.slow
def test_experiment_through_labgrid_with_a_hook(lab: Lab, tmp_path: Path) -> None:
    """``bootlens experiment labgrid``: the hook switches the replayed board between the
    recordings of bootdelay=2 and bootdelay=0 (tests/data/rerun); the bootloader stage's
    saving is the recordings' (about 2.2 s)."""
    base = sorted(RERUN.glob("bootdelay-2/boot-[1-2].rec"))
    nodelay = sorted(RERUN.glob("bootdelay-0/boot-[1-2].rec"))
    env = lab.env(replay_board(base, variants={"uboot-env bootdelay=0": [str(p.resolve()) for p in nodelay]}),
                  name="env-exp.yaml")
    (lab.root / "count").unlink(missing_ok=True)
    hook = f"{sys.executable} {HERE} hook {lab.root}"
    r = cli("experiment", "labgrid", "--env", str(env), "--hook", hook, "--try", "nodelay=uboot-env:bootdelay=0",
            "--repeat", "2", "-o", str(tmp_path / "e"), "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    assert doc["target"] == "labgrid"
    hooks = (lab.root / "hook.txt").read_text().splitlines()
    assert "apply uboot-env bootdelay=0" in hooks and hooks[-1] == "reset"  # put back as it was
    folders = [p for p in (tmp_path / "e").iterdir() if p.is_dir()]
    stages = {}
    for f in folders:
        meta = json.loads((f / "run.json").read_text())
        assert meta["labgrid"]["power"] == "ExternalPowerDriver" and "port" not in meta
        stats = {s.name: s for s in statistics_of(analyze_run(f).analysis.boots)}
        stages[meta["experiment"]["configuration"]] = stats["bootloader"].median / 1e9
    # the replayed board hands out its recordings in turn, and the boot order is drawn at random:
    # each side's median is of some two of its recordings, so the saving lies between the extremes
    spans = {k: [next(s.duration_ns or 0 for s in b.stages if s.name == "bootloader") / 1e9
                 for b in analyze_paths([str(p) for p in v]).boots] for k, v in (("baseline", base), ("nodelay", nodelay))}
    low, high = min(spans["baseline"]) - max(spans["nodelay"]), max(spans["baseline"]) - min(spans["nodelay"])
    assert low - 0.1 < stages["baseline"] - stages["nodelay"] < high + 0.1, (stages, spans)
    assert low > 1.9  # the recordings' saving: about 2.2 s, the countdown's 2 s and its own output


@pytest.mark.slow
@needs_qemu
def test_qemu_arm64_three_boots_through_labgrid(lab: Lab, tmp_path: Path) -> None:
    """The issue's bar: the QEMU reference target, its serial a TCP client of the exported
    cable, powered by ExternalPowerDriver, booted three times through the acquired place;
    statistics over the three, power-on -> ready."""
    from bootlens.targets.qemu import qemu_command, setup

    tf = setup("qemu-arm64")
    argv = qemu_command(tf, "@MONITOR@")
    argv[argv.index("stdio")] = "tcp:127.0.0.1:@PORT@,nodelay=on"
    env = lab.env({"kind": "qemu", "argv": argv}, name="env-qemu.yaml")
    out = tmp_path / "run"
    r = cli("run", "labgrid", "--env", str(env), "--repeat", "3", "-o", str(out), timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Statistics over 3 boots" in r.stdout and "marker ready" in r.stdout
    run = analyze_run(out)
    assert run.recordings == 3 and run.ready_count == 3
    for b in run.analysis.boots:
        assert b.alignment.origin == "power_on"
        st = {s.name: s for s in b.stages}
        for name in ("firmware", "bootloader", "kernel_load", "kernel_init", "userspace"):
            assert st[name].status == "measured", name
        assert st["bootloader"].duration_ns > 1.9e9  # U-Boot's default 2 s autoboot delay
        assert b.total.end_name == "ready" and b.total.end_ns is not None and 3e9 < b.total.end_ns < 120e9
    names = [s.name for s in statistics_of(run.analysis.boots)]
    assert names[0].startswith("total (power-on") and "marker ready" in names
    assert not (lab.root / "board.pid").exists()  # powered off after the last boot
    # t=0 is when labgrid's power-on returns: after the guest was released, by the time cmd_on
    # takes to exit and labgrid to notice (measured 26-32 ms here), never before
    released = [int(x.split()[1]) for x in (lab.root / "released.txt").read_text().splitlines()[-3:]]
    for i, rel in enumerate(released, 1):
        t0 = read_recording(str(out / f"boot-{i}.rec")).header.t0_monotonic_ns
        assert 0 < t0 - rel < 300e6, (t0 - rel) / 1e6



@pytest.mark.slow
@needs_qemu
def test_optimize_qemu_arm64_through_labgrid(lab: Lab, tmp_path: Path) -> None:
    """``bootlens optimize labgrid`` on the reference target behind the lab: the hook applies
    what bootlens asks (tracing on the command line for the advisor's boot, then each finding:
    U-Boot's bootdelay=0 in a flash environment image, kernel arguments) and the measured run
    folders show the bootloader stage losing the 2 s autoboot delay."""
    from bootlens.targets.qemu import qemu_command, setup

    tf = setup("qemu-arm64")
    argv = qemu_command(tf, "@MONITOR@")
    argv[argv.index("stdio")] = "tcp:127.0.0.1:@PORT@,nodelay=on"
    env = lab.env({"kind": "qemu", "target": "qemu-arm64", "argv": argv}, name="env-optimize.yaml")
    (lab.root / "hook.txt").unlink(missing_ok=True)
    out = tmp_path / "opt"
    r = cli("optimize", "labgrid", "--env", str(env), "--hook", f"{sys.executable} {HERE} hook {lab.root}",
            "--repeat", "2", "--rounds", "1", "-o", str(out), timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    hooks = (lab.root / "hook.txt").read_text().splitlines()
    assert any(h.startswith("apply cmdline initcall_debug") for h in hooks), hooks  # the advisor's traced boot
    assert "apply uboot-env bootdelay=0" in hooks and hooks[-1] == "reset"
    base = {x.name: x for x in statistics_of(analyze_run(out / "baseline").analysis.boots)}
    nodelay = {x.name: x for x in statistics_of(analyze_run(out / "uboot.autoboot_delay").analysis.boots)}
    assert base["bootloader"].median - nodelay["bootloader"].median > 1.5e9


@pytest.mark.slow
@needs_qemu
def test_qemu_arm64_through_labgrids_qemudriver(tmp_path: Path) -> None:
    """labgrid's QEMUDriver is both the console and the power switch: no coordinator, the
    reference target's kernel, initramfs and U-Boot as labgrid images; two boots."""
    from bootlens.targets.qemu import BASE_CMDLINE, setup

    tf = setup("qemu-arm64")
    s = tf.spec
    machine = dict(zip(s.machine[::2], s.machine[1::2]))
    env = tmp_path / "env.yaml"
    env.write_text(
        "targets:\n  main:\n    drivers:\n      QEMUDriver:\n        qemu_bin: qemu\n"
        f"        machine: {machine['-M']}\n        cpu: {machine['-cpu']}\n        memory: {machine['-m']}M\n"
        f"        kernel: kernel\n        bios: bios\n        boot_args: 'console={s.console} {BASE_CMDLINE}'\n"
        f"        extra_args: '-initrd {tf.initramfs} -no-reboot'\n"
        f"tools:\n  qemu: {shutil.which(s.qemu)}\nimages:\n  kernel: {tf.kernel}\n  bios: {s.firmware}\n")
    out = tmp_path / "run"
    r = cli("run", "labgrid", "--env", str(env), "--repeat", "2", "-o", str(out), timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    # the guest powers itself off after APP READY, which labgrid's QEMUDriver does not notice:
    # neither the next power-off nor labgrid's clean-up at exit may trip over it
    assert "Traceback" not in r.stderr and "exception" not in r.stderr, r.stderr[-2000:]
    run = analyze_run(out)
    assert run.ready_count == 2
    assert json.loads((out / "run.json").read_text())["labgrid"]["power"] == "QEMUDriver"
    for b in run.analysis.boots:
        st = {x.name: x for x in b.stages}
        assert st["bootloader"].status == "measured" and st["bootloader"].duration_ns > 1.9e9
        assert b.total.end_name == "ready"
