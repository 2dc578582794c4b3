"""Nothing a user captured is lost or mixed (issue 29 items 1 and 8): a recording is never
overwritten nor written by two captures at once, a run folder is held by one run; a recording
or log that starts with a UTF-8 byte-order mark reads; the echo of a device's terminal control
sequences is made harmless. Real pseudo-terminals and real ``bootlens`` processes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest
from conftest import wild_log

from bootlens.capture.recording import Header, RecordingWriter, read_recording
from bootlens.capture.run_folder import LOCK, RunFolderError, claim_folder
from bootlens.core.options import ParseOptions
from bootlens.timeline.analyze import analyze_paths

from test_capture import _wait_until

wait_until = partial(_wait_until, limit=30.0)  # a loaded host: more than the 20 s of test_capture

CLI = [sys.executable, "-m", "bootlens.cli"]
BOOT = b"".join(b"[    %d.%06d] line %d of the boot\n" % (i // 10, i * 1000 % 1_000_000, i) for i in range(200)) \
    + b"APP READY\n"


def run(*args: str, **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], capture_output=True, timeout=60, **kw)  # type: ignore[call-overload]


def test_two_captures_to_one_path_one_refuses_the_other_is_whole(tmp_path: Path) -> None:
    """Before: both opened the path with O_TRUNC|O_APPEND and interleaved their records (the
    file then read as 'not a bootlens recording' or as damaged boots). Both start at once on one
    pty; the loser refuses in one line before it reads a byte, the winner records the boot."""
    master, slave = pty.openpty()
    out = tmp_path / "same.rec"
    args = [*CLI, "capture", "-q", "-d", os.ttyname(slave), "-o", str(out), "--quit", "APP READY", "-e", "30"]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    try:
        wait_until(lambda: any(p.poll() is not None for p in procs))  # the loser is done
        loser = next(p for p in procs if p.poll() is not None)
        winner = next(p for p in procs if p is not loser)
        wait_until(lambda: out.exists() and out.stat().st_size > 0)  # the winner's header
        time.sleep(0.3)  # the winner is reading the port
        os.write(master, BOOT)
        _, err = winner.communicate(timeout=30)
        _, lost = loser.communicate(timeout=30)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        os.close(master)
        os.close(slave)
    assert loser.returncode == 2 and winner.returncode == 0, (lost, err)
    assert lost.decode().splitlines() == [f"bootlens: error: {out}: exists; give another -o, or --force to replace it"]
    rec = read_recording(str(out))
    assert rec.data == BOOT and rec.bad_records == 0
    assert [n.detail for n in rec.notes if n.event == "end"] == ["quit pattern"]


def test_an_existing_recording_is_refused_and_left_byte_identical(tmp_path: Path) -> None:
    out = tmp_path / "boot.rec"
    assert run("capture", "-q", "-o", str(out), input=b"first boot\n").returncode == 0
    before = out.read_bytes()
    r = run("capture", "-q", "-o", str(out), "--", sys.executable, "-c", "print('second boot')")
    assert r.returncode == 2
    assert r.stderr.decode().splitlines() == [f"bootlens: error: {out}: exists; give another -o, or --force to "
                                              "replace it"]
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["boot.rec"]


def test_force_replaces_once_a_byte_arrives_and_keeps_the_old_when_none_does(tmp_path: Path) -> None:
    out = tmp_path / "boot.rec"
    assert run("capture", "-q", "-o", str(out), input=b"first boot\n").returncode == 0
    before = out.read_bytes()
    r = run("capture", "-q", "--force", "-o", str(out), input=b"")  # nothing received
    assert r.returncode == 0, r.stderr
    assert "nothing received: the recording there is kept as it was" in r.stderr.decode()
    assert out.read_bytes() == before
    r = run("capture", "-q", "--force", "-o", str(out), input=b"second boot\n")
    assert r.returncode == 0, r.stderr
    assert read_recording(str(out)).data == b"second boot\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["boot.rec"]  # no side file left


def test_force_does_not_replace_a_recording_another_capture_is_writing(tmp_path: Path) -> None:
    out = tmp_path / "live.rec"
    w = RecordingWriter(str(out), Header("x", None, "start", "", 0))
    try:
        r = run("capture", "-q", "--force", "-o", str(out), input=b"other\n")
        assert r.returncode == 2
        assert r.stderr.decode().splitlines() == [f"bootlens: error: {out}: another capture is writing it"]
    finally:
        w.close()


def test_a_name_with_strftime_codes_gets_a_new_name_when_taken(tmp_path: Path) -> None:
    """The default name has the time to the second: two captures in one second must not clash."""
    pattern = str(tmp_path / "cap-%Y.rec")
    first = run("capture", "-q", "-o", pattern, input=b"one\n")
    second = run("capture", "-q", "-o", pattern, input=b"two\n")
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    year = time.strftime("%Y")
    assert second.stderr.decode().rstrip().endswith(f"-> {tmp_path}/cap-{year}-2.rec")
    assert read_recording(str(tmp_path / f"cap-{year}.rec")).data == b"one\n"
    assert read_recording(str(tmp_path / f"cap-{year}-2.rec")).data == b"two\n"


def test_reports_replace_reports_but_never_a_recording(tmp_path: Path) -> None:
    rec = tmp_path / "boot.rec"
    assert run("capture", "-q", "-o", str(rec), input=BOOT).returncode == 0
    before = rec.read_bytes()
    for args in (["export", str(rec), "-o", str(rec)], ["report", str(rec), "-o", str(rec)],
                 ["report", "--format", "svg", str(rec), "-o", str(rec)]):
        r = run(*args)
        assert r.returncode == 2, args
        assert r.stderr.decode().splitlines() == [f"bootlens: error: {rec}: is a bootlens recording; it is not "
                                                  "overwritten: give another output file"]
        assert rec.read_bytes() == before
    txt = tmp_path / "boot.txt"
    txt.write_text("an earlier export\n")
    assert run("export", str(rec), "-o", str(txt)).returncode == 0
    assert txt.read_bytes() == BOOT  # a derived output is replaced, as cc -o replaces its output


def test_no_output_replaces_an_input_of_its_command(tmp_path: Path) -> None:
    """A plain console log is captured data too: ``report boot.log -o boot.log`` (or through a
    second name of it) would read it and then write the report over it. Refused in one line."""
    log = tmp_path / "boot.log"
    log.write_bytes(BOOT)
    alias = tmp_path / "same.log"
    alias.symlink_to(log)
    base = tmp_path / "base.log"
    base.write_bytes(BOOT)
    for args, out in ((["report", str(log), "-o", str(log)], log),
                      (["report", "--format", "perfetto", str(log), "-o", str(alias)], alias),
                      (["compare", str(base), str(log), "--html", str(log)], log)):
        r = run(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.decode().splitlines() == [f"bootlens: error: {out}: is an input of this command; it is "
                                                  "not overwritten: give another output file"]
        assert log.read_bytes() == BOOT
    assert run("report", str(log), "-o", str(tmp_path / "r.html")).returncode == 0


def test_a_run_folder_is_held_by_one_run(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    claim = claim_folder(folder)
    try:
        assert (folder / LOCK).is_file()
        with pytest.raises(RunFolderError, match="another bootlens is writing this run folder"):
            claim_folder(folder)
        (folder / "boot-1.rec").write_text("x")
    finally:
        claim.release()
    assert not (folder / LOCK).exists()
    with pytest.raises(RunFolderError, match="exists and is not empty; give a new folder with -o"):
        claim_folder(folder)
    empty = tmp_path / "new" / "deep"
    with claim_folder(empty):  # nothing written: the folder the claim made goes with it
        assert empty.is_dir()
    assert not empty.exists()


def test_two_runs_into_one_folder_one_refuses(tmp_path: Path) -> None:
    """Two ``bootlens run board`` into one folder at once: before, both wrote boot-1.rec (the
    second truncating the first's); now the second is refused in one line while the first boots."""
    master, slave = pty.openpty()
    folder = tmp_path / "run"
    trigger = tmp_path / "power-on"
    args = ["run", "board", "--port", os.ttyname(slave), "--power-cycle", f"touch {trigger}", "--ready",
            "APP READY", "--timeout", "300", "-o", str(folder)]  # a bound, never reached: BOOT ends it
    first = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(trigger.exists)  # the first holds the folder and has powered the board on
        second = run(*args)
        trigger.unlink()
        os.write(master, BOOT)
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
        os.close(master)
        os.close(slave)
    assert second.returncode == 2, (second.stderr, err)
    assert second.stderr.decode().splitlines() == [f"bootlens: error: {folder}: another bootlens is writing this "
                                                   "run folder; give a new folder with -o"]
    assert first.returncode == 0, err
    assert sorted(p.name for p in folder.iterdir()) == ["boot-1.rec", "run.json"], err
    assert read_recording(str(folder / "boot-1.rec")).data == BOOT
    again = run(*args)
    assert again.returncode == 2 and again.stderr.decode().splitlines() == [
        f"bootlens: error: {folder}: exists and is not empty; give a new folder with -o"]


# --- a UTF-8 byte-order mark ----------------------------------------------------------------


def _facts(path: Path) -> tuple[int, list[int | None]]:
    a = analyze_paths([str(path)], ParseOptions(()))
    return len(a.boots), [s.duration_ns for s in a.boots[0].stages]


def test_a_recording_and_a_log_that_start_with_a_bom_read(tmp_path: Path) -> None:
    """A recording saved by a Windows editor ("UTF-8 with BOM") was 'no boot found'. Corpus log
    13 (Orange Pi Zero2: SPL, TF-A, U-Boot, kernel 6.1 to the login prompt; kernel init lines
    41-262, 1.636386 s by its printk stamps) as a recording, one chunk a line, and as a plain
    log, each with a BOM: the same boot as without."""
    log = wild_log("13")
    rec = tmp_path / "13.rec"
    w = RecordingWriter(str(rec), Header("replay", None, "start", "", 0))
    for i, line in enumerate(log.read_bytes().splitlines(keepends=True)):
        w.chunk(i * 1_000_000, line)
    w.close()
    bom_rec = tmp_path / "13-bom.rec"
    bom_rec.write_bytes(b"\xef\xbb\xbf" + rec.read_bytes())
    assert read_recording(str(bom_rec)).data == log.read_bytes()
    boots, stages = _facts(bom_rec)
    assert boots == 1 and stages[4] == 1_636_386_000 and (boots, stages) == _facts(rec)
    bom_log = tmp_path / "13-bom.log"
    bom_log.write_bytes(b"\xef\xbb\xbf" + log.read_bytes())
    assert _facts(bom_log) == _facts(log) and _facts(log)[1][4] == 1_636_386_000
    r = run("analyze", "--json", str(bom_rec))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["inputs"][0]["framing"] == "grabserial-t" and len(doc["boots"]) == 1


# --- the echo of a device's terminal control sequences -----------------------------------------


HOSTILE = (b"\x1b]0;pwned title\x07U-Boot \x1b[1;32mOK\x1b[0m\n"  # a title change; a colour
           b"\x1b[2J\x1b[H\x1b[?1049hclear and alternate screen\n"  # screen clear, home, alternate screen
           b"\xc2\x9b31mC1 CSI and a bell\x07 here\n"  # U+009B: an 8-bit CSI
           b"progress 10%\rprogress 20%\n"
           b"APP READY\n")


@pytest.mark.parametrize("raw", [False, True])
def test_the_echo_shows_control_sequences_harmlessly_the_recording_keeps_them(tmp_path: Path, raw: bool) -> None:
    master, slave = pty.openpty()
    out = tmp_path / "esc.rec"
    args = [*CLI, "capture", "-d", os.ttyname(slave), "-o", str(out), "--quit", "APP READY", "-e", "30"]
    proc = subprocess.Popen(args + (["--raw"] if raw else []), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: out.exists() and out.stat().st_size > 0)
        time.sleep(0.3)
        threading.Thread(target=os.write, args=(master, HOSTILE)).start()
        echo, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
        os.close(slave)
    assert proc.returncode == 0, err
    assert read_recording(str(out)).data == HOSTILE  # every byte, whatever the echo
    shown = [line.split(b"] ", 1)[1] for line in echo.split(b"\n")[:-1]]
    if raw:
        assert shown == HOSTILE.split(b"\n")[:-1]
        return
    assert shown == [
        b"\\x1b]0;pwned title\\x07U-Boot \x1b[1;32mOK\x1b[0m",
        b"\\x1b[2J\\x1b[H\\x1b[?1049hclear and alternate screen",
        b"\\x9b31mC1 CSI and a bell\\x07 here",
        b"progress 10%\rprogress 20%",
        b"APP READY",
    ]
