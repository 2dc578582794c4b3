"""``run --trace``: the kernel arguments, the dumping overlay, the dump split out of the
recording and kept out of the boot's console lines; and a real traced boot of qemu-arm64 (slow)."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import needs_qemu
from test_target import parse_newc

from bootlens.targets import initramfs as I, qemu as T
from bootlens.timeline.analyze import analyze_paths
from bootlens.core.errors import UsageError
from bootlens.timeline.inputs import analyze_folder
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.capture.recording import Header, RecordingWriter, read_recording
from bootlens.targets.trace_plan import check_append, parse_trace
from bootlens.targets.tracerun import APP_HOOK, DUMP_SCRIPT, hooked_app, write_overlay
from bootlens.capture.trace_dump import DUMP_BEGIN, DUMP_END, dump_span, save_dump, split_dump, trace_path

READY = ParseOptions((MarkerSpec.parse("ready=APP READY"),))

# the first lines of a real dump: `run qemu-arm64 --trace function_graph` on this machine (6.1.0-56-arm64)
REAL_TRACE = """\
# tracer: function_graph
#
#     TIME        CPU  TASK/PID         DURATION                  FUNCTION CALLS
#      |          |     |    |           |   |                     |   |   |   |
    0.617543 |   0)   swapper-1    |               |  do_one_initcall() {
    0.617977 |   0)   swapper-1    | ! 109.616 us  |    irq_enter_rcu();
    0.618437 |   0)   swapper-1    |               |    do_interrupt_handler() {
    0.618443 |   0)   swapper-1    |   ==========> |
    0.618443 |   0)   swapper-1    | ! 137.280 us  |      gic_handle_irq();
    0.618443 |   0)   swapper-1    |   <========== |
    0.618585 |   0)   swapper-1    | ! 149.424 us  |    } /* do_interrupt_handler */
    0.618629 |   0)   swapper-1    | + 23.120 us   |    initcall_blacklisted();
    0.618837 |   0)   swapper-1    |   2.064 us    |    mutex_unlock();
    0.619021 |   0)   swapper-1    | ! 1477.968 us |  } /* do_one_initcall */
"""

CONSOLE = [  # (seconds since power-on, line): the end of a real boot of the same target
    (3.90, "[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x411fd070]"),
    (3.91, "[    0.000000] Linux version 6.1.0-56-arm64 (debian-kernel@lists.debian.org)"),
    (5.20, "[    1.234000] calling  con_init+0x0/0x21c @ 0"),
    (5.21, "[    1.236000] initcall con_init+0x0/0x21c returned 0 after 1970 usecs"),
    (12.0, "[    8.101000] Run /init as init process"),
    (17.8, "checks done (7 scripts, kernel 6.1.0)"),
    (17.88, "APP READY"),
]


def write_recording(path: Path, trace: str | None, complete: bool = True) -> None:
    """A recording of CONSOLE, then (as the guest's dump script prints it, CRLF) the trace."""
    w = RecordingWriter(str(path), Header("qemu", None, "power_on", "", 0))
    for t, line in CONSOLE:
        w.chunk(int(t * 1e9), line.encode() + b"\r\n")
    t_ns = 18_000_000_000
    if trace is not None:
        body = [DUMP_BEGIN, *trace.splitlines(), *([DUMP_END] if complete else [])]
        for i, line in enumerate(body):
            w.chunk(t_ns + i * 1_000_000, line.encode() + b"\r\n")
    w.end(t_ns + 10**9, "quit pattern")
    w.close()


# --- the plan: kernel arguments ------------------------------------------------------------

def test_function_graph_defaults() -> None:
    p = parse_trace("function_graph")
    assert p.kernel_args == ("ftrace=function_graph ftrace_graph_filter=do_one_initcall ftrace_graph_max_depth=3 "
                             "trace_options=nooverwrite,funcgraph-abstime,funcgraph-proc,funcgraph-tail "
                             "trace_buf_size=8M")


def test_filters_events_depth_and_buffer() -> None:
    p = parse_trace("function_graph=do_one_initcall,vfs_read,initcall,sched,depth=0,buf=16M")
    assert p.filters == ("do_one_initcall", "vfs_read") and p.events == ("initcall:*", "sched:*")
    assert p.kernel_args == ("ftrace=function_graph ftrace_graph_filter=do_one_initcall,vfs_read "
                             "trace_event=initcall:*,sched:* "
                             "trace_options=nooverwrite,funcgraph-abstime,funcgraph-proc,funcgraph-tail "
                             "trace_buf_size=16M")  # depth=0: no ftrace_graph_max_depth (no limit)
    assert parse_trace("initcall").kernel_args == "trace_event=initcall:* trace_options=nooverwrite trace_buf_size=8M"
    assert parse_trace("function=vfs_*").kernel_args == ("ftrace=function ftrace_filter=vfs_* "
                                                         "trace_options=nooverwrite trace_buf_size=8M")
    assert parse_trace("function").filters == ()


@pytest.mark.parametrize("spec, message", [
    ("", "empty item"),
    ("function_graph,,initcall", "empty item"),
    ("function_graph,function", "one tracer at a time"),
    ("irq", "unknown item 'irq'"),
    ("initcall,vfs_read", "unknown item 'vfs_read'"),  # a function name continues a tracer's filter only
    ("function_graph=do one", "not a kernel function name"),
    ("function_graph,depth=x", "depth='x' is not a number"),
    ("function_graph,buf=lots", "buf='lots'"),
    ("depth=2", "nothing to trace"),
])
def test_bad_specs_are_one_line_errors(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_trace(spec)


def test_append_may_not_set_what_trace_sets() -> None:
    tf = T.TargetFiles(T.spec("qemu-arm64"), Path("k"), Path("i"), "6.1")
    check_append(T.kernel_cmdline(tf, append="initcall_debug ignore_loglevel quiet"))
    with pytest.raises(UsageError, match="trace_event="):
        check_append(T.kernel_cmdline(tf, append="quiet trace_event=sched:*"))
    with pytest.raises(UsageError, match="ftrace="):  # --cmdline replaces the defaults, not the check
        check_append(T.kernel_cmdline(tf, cmdline="ftrace=function", append="quiet"))


def test_cli_refuses_trace_on_the_systemd_target_and_a_bad_spec() -> None:
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "run", "qemu-arm64", "--trace", "irq"],
                       capture_output=True)
    assert r.returncode == 2 and b"unknown item 'irq'" in r.stderr
    tf = T.TargetFiles(T.spec("qemu-x86_64-systemd"), Path("/nonexistent"), Path("/nonexistent"), "6.1",
                       rootfs=Path("/nonexistent"))
    with pytest.raises(T.TargetError, match="--trace is for the busybox targets"):
        T.boot(tf, "/nonexistent/out.rec", trace=parse_trace("initcall"))


# --- the overlay -------------------------------------------------------------------------

def test_the_app_gets_a_dumping_poweroff_function() -> None:
    hooked = hooked_app(I.APP.encode()).decode()
    lines = hooked.splitlines()
    assert lines[0] == "#!/bin/sh" and lines[1] == APP_HOOK.rstrip("\n")
    assert hooked.replace(APP_HOOK, "") == I.APP  # nothing else changed
    assert hooked_app(b"\x7fELF\x02\x01") == b"\x7fELF\x02\x01"  # not a script: only /bin/poweroff dumps


def test_overlay_keeps_the_users_files_and_hooks_their_app(tmp_path: Path) -> None:
    user = tmp_path / "user"
    (user / "usr/bin").mkdir(parents=True)
    (user / "usr/bin/app").write_text("#!/bin/sh\necho 'MY APP READY'\npoweroff -f\n")
    (user / "etc/init.d").mkdir(parents=True)
    (user / "etc/init.d/S40settle").write_text("#!/bin/sh\n")
    ov = write_overlay(tmp_path / "ov", user, I.APP.encode())
    files = parse_newc(gzip.decompress(I.build_initramfs(b"busybox", ov)))
    assert files["etc/init.d/S40settle"][1] == b"#!/bin/sh\n"
    mode, app = files["usr/bin/app"]
    assert mode == 0o100755 and b"MY APP READY" in app and app.index(b"poweroff()") < app.index(b"MY APP READY")
    mode, script = files[DUMP_SCRIPT]
    assert mode == 0o100755 and DUMP_BEGIN.encode() in script and b"cat $T/trace" in script
    # /bin/poweroff was a link to busybox: now a script (for callers that use its path)
    assert files["bin/poweroff"][0] == 0o100755 and DUMP_SCRIPT.encode() in files["bin/poweroff"][1]
    plain = write_overlay(tmp_path / "ov2", None, I.APP.encode())
    assert b"APP READY" in (plain / "usr/bin/app").read_bytes()



def test_an_app_that_is_a_link_is_kept_a_link_never_read_on_the_host(tmp_path: Path) -> None:
    """Issue 29: the user's usr/bin/app was read through is_file(), which follows a link: an
    overlay with app -> /etc/passwd put the host's file into the guest as its application. A
    link is the guest's to resolve: kept, like an application that is not a script."""
    import os

    for target in ("/etc/passwd", "../../../../etc/passwd"):
        user = tmp_path / f"user{len(target)}"
        (user / "usr/bin").mkdir(parents=True)
        os.symlink(target, user / "usr/bin/app")
        ov = write_overlay(tmp_path / f"ov{len(target)}", user, I.APP.encode())
        files = parse_newc(gzip.decompress(I.build_initramfs(b"busybox", ov)))
        assert files["usr/bin/app"] == (0o120777, target.encode())
        assert files["bin/poweroff"][0] == 0o100755  # the dump still happens through /bin/poweroff

# --- the dump in the recording --------------------------------------------------------------

def test_dump_is_split_out_and_not_read_as_console_lines(tmp_path: Path) -> None:
    rec = tmp_path / "boot-1.rec"
    write_recording(rec, REAL_TRACE)
    raw = read_recording(str(rec)).data
    dump = save_dump(rec)
    assert dump is not None and dump.complete and dump.lines == REAL_TRACE.count("\n")
    assert trace_path(rec).read_text() == REAL_TRACE  # CRLF undone, nothing else changed
    assert read_recording(str(rec)).data == raw  # the recording keeps every byte
    a = analyze_paths([str(rec)], READY)
    assert a.inputs[0].lines == len(CONSOLE)  # none of the dump's lines, nor its markers
    b = a.boots[0]
    assert b.total.duration_ns == pytest.approx(17.88e9, abs=1e7)  # ends at ready, not after the dump


def test_without_dump_nothing_changes(tmp_path: Path) -> None:
    plain, traced = tmp_path / "plain.rec", tmp_path / "traced.rec"
    write_recording(plain, None)
    write_recording(traced, REAL_TRACE)
    assert split_dump(str(plain)) is None and save_dump(plain) is None and not trace_path(plain).exists()
    a, b = analyze_paths([str(plain)], READY).boots[0], analyze_paths([str(traced)], READY).boots[0]
    assert a.total.duration_ns == b.total.duration_ns
    assert [(e.kind, e.name, e.start, e.line_no) for e in a.boot.events] == [
        (e.kind, e.name, e.start, e.line_no) for e in b.boot.events]


def test_a_dump_cut_short_is_kept_as_far_as_it_came(tmp_path: Path) -> None:
    rec = tmp_path / "boot-1.rec"
    write_recording(rec, REAL_TRACE, complete=False)  # the timeout passed during the dump
    dump = save_dump(rec)
    assert dump is not None and not dump.complete and dump.text.decode() == REAL_TRACE
    assert analyze_paths([str(rec)], READY).inputs[0].lines == len(CONSOLE)


def test_span_of_marker_lines() -> None:
    lines = [b"a\r\n", DUMP_BEGIN.encode() + b"\r\n", b"x\r\n", DUMP_END.encode() + b"\r\n", b"b\n"]
    assert dump_span(lines) == (1, 4)
    assert dump_span(lines[:3]) == (1, 3)
    assert dump_span([b"a\n", b"b\n"]) is None


def test_run_folder_with_a_trace_file_is_analysed_per_boot(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").write_bytes(orjson.dumps({"markers": {"ready": "APP READY"}, "trace": "function_graph"}))
    for i in (1, 2):
        write_recording(folder / f"boot-{i}.rec", REAL_TRACE)
        save_dump(folder / f"boot-{i}.rec")
    a = analyze_folder(folder)
    assert len(a.boots) == 2 and [s.lines for s in a.inputs] == [len(CONSOLE)] * 2
    assert all(b.total.duration_ns == pytest.approx(17.88e9, abs=1e7) for b in a.boots)


# --- a real traced boot ------------------------------------------------------------------------

@pytest.mark.slow
@needs_qemu
def test_traced_boot_of_qemu_arm64(tmp_path: Path) -> None:
    """Real kernel, real function_graph at boot, the buffer brought back over the console."""
    run = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "run", "qemu-arm64", "--trace", "function_graph",
                        "--append", "initcall_debug ignore_loglevel", "-o", str(run)], capture_output=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert orjson.loads((run / "run.json").read_bytes())["trace"] == "function_graph"
    trace = (run / "boot-1.trace.txt").read_text()
    lines = trace.splitlines()
    assert lines[0] == "# tracer: function_graph" and lines[2].startswith("#     TIME        CPU  TASK/PID")
    opens = [ln for ln in lines if ln.endswith("|  do_one_initcall() {")]
    closes = [ln for ln in lines if ln.endswith("|  } /* do_one_initcall */")]
    assert len(opens) == len(closes) > 500  # nooverwrite, 8M: every graph whole
    assert not any(ln.startswith("[") for ln in lines)  # no kernel message inside the dump
    # the initcalls the console says ran after the tracer started, against the graph's depth-2 names
    rec = read_recording(str(run / "boot-1.rec")).data.decode("utf-8", "replace")
    start = float(re.search(r"\[\s*([\d.]+)\] Starting tracer 'function_graph'", rec).group(1))  # type: ignore[union-attr]
    called = [n for t, n in re.findall(r"\[\s*([\d.]+)\] calling  (\w+)", rec) if float(t) >= start]
    assert len(called) == len(opens)  # one graph per initcall, none lost
    graphed = set(re.findall(r"\|    (\w+)\(\)", trace))
    assert sum(n in graphed for n in called) >= 0.9 * len(called)  # the rest are notrace or inlined
    # the boot ends at its ready line; the dump is not console lines of it
    a = analyze_folder(run)
    (b,) = a.boots
    assert b.total.end.startswith("ready marker")
    assert a.inputs[0].lines == rec.count("\n") - len(lines) - 2
    # analyze RUNFOLDER reads boot-1.trace.txt with its boot: the KFT table, against grep on the file
    j = orjson.loads(subprocess.run([sys.executable, "-m", "bootlens.cli", "analyze", "--json", str(run)],
                                    capture_output=True, check=True, timeout=300).stdout)
    (jb,) = j["boots"]
    assert jb["ftrace"]["tracer"] == "function_graph" and jb["ftrace"]["lines"] == len(lines)
    fn = jb["functions"]
    assert fn["graph_lines"] == sum(not ln.startswith("#") for ln in lines)
    top = {r["name"]: r for r in fn["overall"]}
    assert top["do_one_initcall"]["calls"] == len(opens)
    per_initcall = {t["name"] for t in fn["initcalls"]}
    assert sum(n in per_initcall for n in called) >= 0.9 * len(called)
