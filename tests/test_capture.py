"""bootlens capture, recordings and export: real pseudo-terminals and real subprocesses."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import CORPUS

from bootlens.timeline.analyze import analyze_paths
from bootlens.capture.loop import capture
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.capture.recording import Header, RecordingWriter, line_times, read_recording, to_grabserial
from bootlens.capture.sources import ReplaySource, SerialSource

CLI = [sys.executable, "-m", "bootlens.cli"]
READY = ParseOptions((MarkerSpec.parse("ready=APP READY"),))


def run(*args: str, **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], capture_output=True, timeout=60, **kw)  # type: ignore[call-overload]


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_pty_capture_times_each_line_when_it_was_sent(tmp_path: Path) -> None:
    """An emitter writes lines into a pty at known CLOCK_MONOTONIC times; the recording must
    hold exactly the bytes sent, read in chunks, each line timed at its emission."""
    master, slave = pty.openpty()
    name = os.ttyname(slave)
    sent: list[tuple[int, bytes]] = []
    lines = [f"[    {i}.000000] line {i} {'x' * (i * 7)}\n".encode() for i in range(12)] + [b"DONE\n"]

    def emit() -> None:
        for data in lines:
            time.sleep(0.12)
            sent.append((time.monotonic_ns(), data))
            os.write(master, data)

    out = tmp_path / "pty.rec"
    src = SerialSource(name, baud=3_000_000)
    thread = threading.Thread(target=emit)
    result = capture(src, str(out), quit_pattern="^DONE", on_ready=thread.start, echo=None)
    thread.join()
    os.close(master)
    os.close(slave)
    assert result.reason == "quit pattern"
    rec = read_recording(str(out))
    assert rec.data == b"".join(lines)
    assert rec.bad_records == 0
    assert rec.header.baud == 3_000_000
    assert len(rec.chunks) <= 2 * len(lines)  # chunks, not one byte per read
    got, times = line_times(rec, wire=False)
    assert got == lines
    for (t_sent, _), t in zip(sent, times):
        err = t - (t_sent - rec.header.t0_monotonic_ns)
        assert 0 <= err < 50_000_000, err  # read after it was written, well before the next line


def _slow_printer(n: int, delay: float, tail_sleep: float = 0.0) -> list[str]:
    code = (f"import sys,time\nfor i in range({n}):\n    print(f'line {{i}}', flush=True)\n"
            f"    time.sleep({delay})\ntime.sleep({tail_sleep})\n")
    return [sys.executable, "-c", code]


def _wait_for_lines(path: Path, n: int, limit: float = 20.0) -> None:
    """Until the recording holds n complete lines (a line's bytes may span several reads)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists():
            try:
                if read_recording(str(path)).data.count(b"\n") >= n:
                    return
            except Exception:  # the header may not be written yet
                pass
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} lines in {path} after {limit} s")


def test_kill_9_mid_capture_leaves_a_readable_recording(tmp_path: Path) -> None:
    out = tmp_path / "killed.rec"
    proc = subprocess.Popen([*CLI, "capture", "-q", "-o", str(out), "--", *_slow_printer(400, 0.01)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_lines(out, 20)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    rec = read_recording(str(out))
    assert rec.bad_records <= 1
    got = rec.data.decode().split("\n")
    assert len(got) > 20
    assert got[:-1] == [f"line {i}" for i in range(len(got) - 1)]  # every line received, in order
    assert f"line {len(got) - 1}".startswith(got[-1])  # and what there was of the next one
    assert not any(n.event == "end" for n in rec.notes)  # killed: no end note, nothing else lost


def test_sigterm_ends_the_capture_cleanly(tmp_path: Path) -> None:
    out = tmp_path / "term.rec"
    proc = subprocess.Popen([*CLI, "capture", "-q", "-o", str(out), "--", *_slow_printer(1000, 0.01)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait_for_lines(out, 10)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert b"(terminated)" in err
    last = records(out)[-1]
    assert last["event"] == "end" and last["detail"] == "terminated"


def test_quit_pattern_stops_and_stops_the_command(tmp_path: Path) -> None:
    out = tmp_path / "quit.rec"
    code = "import time\nprint('booting', flush=True)\nprint('APP READY', flush=True)\ntime.sleep(60)\n"
    t = time.monotonic()
    r = run("capture", "-q", "-o", str(out), "--quit", "APP READY", "--", sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t < 30  # did not wait for the command's 60 s sleep
    assert records(out)[-1]["detail"] == "quit pattern"
    assert read_recording(str(out)).data == b"booting\nAPP READY\n"


def test_stdin_capture_with_echo(tmp_path: Path) -> None:
    out = tmp_path / "stdin.rec"
    r = run("capture", "-o", str(out), input=b"one\ntwo\nthree")
    assert r.returncode == 0, r.stderr
    assert read_recording(str(out)).data == b"one\ntwo\nthree"
    echoed = r.stdout.decode().splitlines()
    assert [re.sub(r"^\[ *\d+\.\d{6}\] ", "", x) for x in echoed] == ["one", "two", "three"]


def test_capture_errors_are_one_line(tmp_path: Path) -> None:
    for args in (["--port", "/dev/does-not-exist"], ["--", "/no/such/command"], ["--quit", "("]):
        r = run("capture", "-q", "-o", str(tmp_path / "x.rec"), *args)
        assert r.returncode == 2
        err = r.stderr.decode().strip().splitlines()
        assert len(err) == 1 and err[0].startswith("bootlens: error: ") and b"Traceback" not in r.stderr


def test_replay_source_through_capture(tmp_path: Path) -> None:
    out = tmp_path / "replay.rec"
    chunks = [(0.0, b"U-Boot 2023.01 (x)\n"), (0.1, b"Starting kernel ...\n"), (0.25, b"APP READY\n")]
    capture(ReplaySource(chunks), str(out), echo=None)
    rec = read_recording(str(out))
    assert rec.data == b"".join(c for _, c in chunks)
    _, times = line_times(rec)
    assert times[1] - times[0] >= 90_000_000 and times[2] - times[1] >= 140_000_000


def _recording_from_grabserial(src: Path, dest: Path) -> None:
    """Each line of a grabserial -t log as a chunk at its grabserial time: the same capture."""
    w = RecordingWriter(str(dest), Header("grabserial replay", None, "start", "", 0))
    rx = re.compile(rb"^\[(\d+)\.(\d{6}) [\d.]+\] ")
    for raw in src.read_bytes().split(b"\n"):
        m = rx.match(raw)
        if m:
            w.chunk(int(m[1] + m[2]) * 1000, raw[m.end():] + b"\n")
    w.close()


def test_recording_analyses_like_the_grabserial_log(tmp_path: Path) -> None:
    log = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
    rec = tmp_path / "corpus.rec"
    _recording_from_grabserial(log, rec)
    a = analyze_paths([str(log)], READY).boots[0]
    b = analyze_paths([str(rec)], READY).boots[0]
    assert [(s.name, s.start_ns, s.duration_ns) for s in a.stages] == \
        [(s.name, s.start_ns, s.duration_ns) for s in b.stages]
    assert a.total.duration_ns == b.total.duration_ns == 3_903_449_000
    assert b.counts.initcalls == 918
    # and export gives the grabserial text back (the corpus's last line had no newline)
    exported = run("export", str(rec), "--format", "grabserial").stdout
    assert analyze_paths([str(log)], READY).boots[0].counts == \
        analyze_paths([str(_write(tmp_path / "x.log", exported))], READY).boots[0].counts


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_wire_correction_places_bytes_when_they_were_sent() -> None:
    # 10 000 baud, 10 bits a byte: 1 ms per byte. A 10-byte read returned at 100 ms.
    from bootlens.capture.recording import Chunk, Recording

    rec = Recording("x", Header("x", 10_000, "start", "", 0), (Chunk(50_000_000, b"z\n"),
                                                              Chunk(100_000_000, b"abc\ndefgh\n")), (), 0)
    lines, times = line_times(rec)
    assert lines == [b"z\n", b"abc\n", b"defgh\n"]
    assert times == [49_000_000, 91_000_000, 95_000_000]
    # never before the previous read returned
    rec2 = Recording("x", Header("x", 10_000, "start", "", 0), (Chunk(50_000_000, b"z\n"),
                                                               Chunk(52_000_000, b"abcdefgh\n")), (), 0)
    assert line_times(rec2)[1][1] == 50_000_000
    assert line_times(rec2, wire=False)[1][1] == 52_000_000


def test_torn_last_record_and_bad_header(tmp_path: Path) -> None:
    good = tmp_path / "torn.rec"
    w = RecordingWriter(str(good), Header("x", None, "start", "", 0))
    w.chunk(1000, b"[    0.000000] Linux version 6.1\n")
    w.close()
    with good.open("ab") as f:
        f.write(b'{"t":2000,"b64":"WyAgI')  # a record cut by SIGKILL
    rec = read_recording(str(good))
    assert rec.bad_records == 1 and rec.data == b"[    0.000000] Linux version 6.1\n"
    d = json.loads(run("analyze", str(good), "--json").stdout)
    assert any("damaged records" in w for w in d["boots"][0]["warnings"])
    bad = _write(tmp_path / "bad.rec", b'{"format":"bootlens-recording", oops\n')
    r = run("analyze", str(bad))
    assert r.returncode == 2 and r.stderr.decode().count("\n") == 1 and b"bad header" in r.stderr


def test_export_text_is_the_bytes_received(tmp_path: Path) -> None:
    out = tmp_path / "e.rec"
    run("capture", "-q", "-o", str(out), input=b"\x00\xffraw\r\nbytes")
    assert run("export", str(out)).stdout == b"\x00\xffraw\r\nbytes"
    assert to_grabserial(read_recording(str(out))).startswith(b"[0.")


def test_silent_firmware_is_one_measured_span_from_power_on(tmp_path: Path) -> None:
    """A capture that released the target (origin power_on) but saw nothing before the kernel:
    power-on to kernel clock start is measured as one stage, never split by guessing."""
    rec = tmp_path / "silent-bios.rec"
    w = RecordingWriter(str(rec), Header("qemu", None, "power_on", "", 0))
    w.chunk(4_000_000_000, b"[    0.000000] Linux version 6.1.0-56-amd64 (x)\n")
    w.chunk(5_500_000_000, b"[    1.500000] Run /init as init process\n")
    w.chunk(6_000_000_000, b"APP READY\n")
    w.close()
    b = analyze_paths([str(rec)], READY).boots[0]
    st = {s.name: s for s in b.stages}
    assert b.alignment.origin == "power_on" and b.total.duration_ns == 6_000_000_000
    assert st["pre_kernel"].status == "measured" and st["pre_kernel"].duration_ns == 4_000_000_000
    assert st["firmware"].duration_ns is None and st["bootloader"].duration_ns is None
    assert sum(s.duration_ns or 0 for s in b.stages if s.parent is None) == b.total.duration_ns


def test_reconnect_after_the_adapter_vanishes(tmp_path: Path) -> None:
    """The port (a symlink, as /dev/serial/by-id/... is) loses its pty mid-boot and gets a new
    one, as a USB adapter powered by the board does: capture marks the gap and goes on."""
    link = tmp_path / "ttyUSB-by-id"
    m1, s1 = pty.openpty()
    link.symlink_to(os.ttyname(s1))
    out = tmp_path / "reconnect.rec"
    proc = subprocess.Popen([*CLI, "capture", "-q", "--reconnect", "--port", str(link), "-o", str(out),
                             "--quit", "^second boot done", "--end", "30"], stderr=subprocess.PIPE)
    try:
        _wait_until(lambda: out.exists() and out.stat().st_size > 0)
        time.sleep(0.3)  # let the capture open the port
        os.write(m1, b"U-Boot 2023.01 (first power-on)\n")
        _wait_for_lines(out, 1)
        os.close(s1)
        os.close(m1)  # the adapter is gone: reads fail, the device node disappears
        time.sleep(0.3)
        m2, s2 = pty.openpty()  # ... and comes back, maybe under another number
        link.unlink()
        link.symlink_to(os.ttyname(s2))
        _wait_until(lambda: b"gap_end" in out.read_bytes())
        time.sleep(0.2)
        os.write(m2, b"second boot done\n")
        _, err = proc.communicate(timeout=20)
        os.close(m2)
        os.close(s2)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    rec = read_recording(str(out))
    assert rec.data == b"U-Boot 2023.01 (first power-on)\nsecond boot done\n"
    events = [n.event for n in rec.notes]
    assert events == ["gap_start", "gap_end", "end"]
    gap = rec.notes[1].t_ns - rec.notes[0].t_ns
    assert gap >= 250_000_000  # the adapter was away at least the 0.3 s we kept it away
    d = json.loads(run("analyze", str(out), "--json").stdout)
    assert any("capture gap start" in w for w in d["inputs"][0]["warnings"])


def _wait_until(cond: object, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise AssertionError("timed out")


def test_run_board_power_cycles_and_times_from_power_restored(tmp_path: Path) -> None:
    """A 'board' on a pty: the power-cycle command (here it drops a trigger file, as a relay
    script would switch power) starts the board, which prints a boot log; two boots."""
    master, slave = pty.openpty()
    trigger = tmp_path / "power-on"
    boots: list[int] = []
    stop = threading.Event()

    def board() -> None:
        while not stop.is_set():
            if trigger.exists():
                trigger.unlink()
                boots.append(time.monotonic_ns())
                time.sleep(0.2)  # "ROM" time before the first byte
                for line in (b"U-Boot 2023.01 (board)\n", b"Starting kernel ...\n",
                             b"[    0.000000] Linux version 6.1.0 (x)\n", b"[    0.300000] Run /init as init process\n",
                             b"app: ready to serve\n"):
                    os.write(master, line)
                    time.sleep(0.05)
            time.sleep(0.01)

    thread = threading.Thread(target=board, daemon=True)
    thread.start()
    try:
        r = run("run", "board", "--port", os.ttyname(slave), "--power-cycle", f"touch {trigger}",
                "--ready", "ready to serve", "--repeat", "2", "--timeout", "20", "-o", str(tmp_path / "run"))
    finally:
        stop.set()
        thread.join()
        os.close(master)
        os.close(slave)
    assert r.returncode == 0, r.stderr.decode()
    assert "Statistics over 2 boots" in r.stdout.decode()
    a = analyze_paths([str(tmp_path / "run" / f"boot-{i}.rec") for i in (1, 2)],
                      ParseOptions((MarkerSpec.parse("ready=ready to serve"),)))
    assert len(boots) == 2 and len(a.boots) == 2
    for b in a.boots:
        assert b.alignment.origin == "power_on"
        fw = next(s for s in b.stages if s.name == "firmware")
        assert fw.duration_ns is not None and 150e6 < fw.duration_ns < 1.5e9  # the 0.2 s "ROM" time
        assert b.total.end.startswith("ready marker")
    bad = run("run", "board", "--port", "/dev/null", "--repeat", "1")  # no --power-cycle
    assert bad.returncode == 2 and b"needs --port" in bad.stderr


def test_quit_pattern_waits_for_the_end_of_its_line(tmp_path: Path) -> None:
    """The pattern can match before the line's newline has arrived: the line is still recorded
    whole; a line that never ends stops the capture after a short grace."""
    out = tmp_path / "split.rec"
    chunks = [(0.0, b"booting\nAPP REA"), (0.03, b"DY"), (0.06, b"\n"), (1.0, b"after\n")]
    r = capture(ReplaySource(chunks), str(out), quit_pattern="APP READY", echo=None)
    assert r.reason == "quit pattern"
    assert read_recording(str(out)).data == b"booting\nAPP READY\n"  # whole, and nothing after it
    out2 = tmp_path / "endless.rec"
    t = time.monotonic()
    r2 = capture(ReplaySource([(0.0, b"APP READY"), (5.0, b"\n")]), str(out2), quit_pattern="APP READY", echo=None)
    assert r2.reason == "quit pattern" and time.monotonic() - t < 3
    assert read_recording(str(out2)).data == b"APP READY"


def test_start_pattern_restarts_echo_times_and_instant_pattern_matches_mid_line(tmp_path: Path) -> None:
    """grabserial -m and -i: a line matching --start restarts the times shown (the recording
    keeps absolute times and notes the restart); --instant is timed even without a newline."""
    import io

    out = tmp_path / "start.rec"
    chunks = [(0.0, b"U-Boot 2023.01\n"), (0.2, b"Starting kernel ...\n"), (0.4, b"[    0.1] Linux version\n"),
              (0.6, b"buildroot login: "), (0.8, b"\nAPP READY\n")]
    echo = io.StringIO()
    r = capture(ReplaySource(chunks), str(out), quit_pattern="APP READY", echo=echo,
                start_pattern="^Starting kernel", instant_patterns=("login: ", "never there"))
    rec = read_recording(str(out))
    assert rec.data == b"".join(c for _, c in chunks)  # nothing lost, nothing changed
    notes = {n.event: n for n in rec.notes}
    ts = [c.t_ns for c in rec.chunks]
    assert notes["start"].t_ns == ts[1] and notes["start"].detail == "^Starting kernel"
    assert notes["instant"].t_ns == ts[3] and notes["instant"].detail == "login: "
    assert r.instants == (("login: ", ts[3]), ("never there", None))
    shown = [(float(m.group(1)), m.group(2)) for m in re.finditer(r"^\[\s*(-?[\d.]+)\] (.*)$", echo.getvalue(), re.M)]
    assert shown[0] == (pytest.approx(ts[0] / 1e9, abs=1e-6), "U-Boot 2023.01")  # before the start: from t0
    assert shown[1] == (0.0, "Starting kernel ...")
    assert shown[2] == (pytest.approx((ts[2] - ts[1]) / 1e9, abs=1e-6), "[    0.1] Linux version")
    # the grabserial export shows the same restart on request, absolute times by default
    grab = to_grabserial(rec, restart=True).decode().splitlines()
    assert grab[1].startswith("[0.000000 ") and "Starting kernel" in grab[1]
    assert to_grabserial(rec).decode().splitlines()[1].startswith(f"[{ts[1] // 10**9}.{ts[1] % 10**9 // 1000:06d} ")


def test_capture_cli_reports_instants_and_rejects_bad_patterns(tmp_path: Path) -> None:
    out = tmp_path / "i.rec"
    r = run("capture", "-q", "-o", str(out), "--instant", "login: ", "--instant", "absent", "--",
            sys.executable, "-c", "import sys; sys.stdout.write('a\\nbox login: '); sys.stdout.flush()")
    assert r.returncode == 0, r.stderr
    assert re.search(rb"'login: ' first seen at \d+\.\d{6} s", r.stderr)
    assert b"'absent' not seen" in r.stderr
    bad = run("capture", "-o", str(out), "--start", "(", "--", "true")
    assert bad.returncode == 2 and bad.stderr.count(b"\n") == 1 and b"--start '('" in bad.stderr


def test_throttled_command_delivers_at_line_rate_and_blocks_the_writer(tmp_path: Path) -> None:
    """--baud for an infinitely fast emulated UART: bytes reach the recording no faster than
    the line rate, and a writer that outruns the line blocks (the pipe is one page), as QEMU's
    vCPU blocks on its PL011 output."""
    from bootlens.capture.sources import CommandSource, ThrottledSource

    stamp = tmp_path / "written"
    code = ("import os, sys, time; time.sleep(0.3); t = time.monotonic(); os.write(1, b'x' * 12287 + b'\\n'); "
            f"open({str(stamp)!r}, 'w').write(str(time.monotonic() - t))")
    out = tmp_path / "slow.rec"
    src = ThrottledSource(CommandSource([sys.executable, "-c", code]), 115200)
    r = capture(src, str(out), echo=None)
    rec = read_recording(str(out))
    assert rec.data == b"x" * 12287 + b"\n" and rec.header.baud == 115200
    byte_s = 10 / 115200
    # the line: every chunk arrives at least its own length of byte times after the previous
    for a, b in zip(rec.chunks, rec.chunks[1:]):
        assert (b.t_ns - a.t_ns) / 1e9 >= len(b.data) * byte_s * 0.98
    line_s = 12288 * byte_s  # 1.067 s
    assert r.seconds >= line_s * 0.98
    # the writer was held back until all but about a page (plus one read) had gone down the line
    assert float(stamp.read_text()) >= (12288 - 4096 - src.chunk) * byte_s * 0.9


def test_low_latency_request_is_held_for_the_capture_and_noted(tmp_path: Path) -> None:
    """The PM QoS request (cyclictest's) is held while capturing, where permitted, and the
    recording says so; --no-low-latency leaves it out."""
    from bootlens.capture.loop import PM_QOS_DEVICE, low_wakeup_latency

    with low_wakeup_latency(False) as held:
        assert held is False
    allowed = os.access(PM_QOS_DEVICE, os.W_OK)
    out = tmp_path / "q.rec"
    r = run("capture", "-q", "-o", str(out), "--", sys.executable, "-c", "print('hi')")
    assert r.returncode == 0, r.stderr
    head = records(out)[0]
    assert (head.get("extra") == {"cpu_wakeup_latency_us": 0}) == allowed
    r = run("capture", "-q", "--no-low-latency", "--force", "-o", str(out), "--", sys.executable, "-c", "print('hi')")
    assert r.returncode == 0 and "extra" not in records(out)[0]
