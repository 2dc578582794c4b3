"""The ``bootlens`` command: parse arguments, call one library function, print."""

from __future__ import annotations

import os
import sys

from typing import NoReturn

import click

from . import __version__
from .errors import BootlensError, UsageError
from .lines import native_available


class _QuietPipeGroup(click.Group):
    """Every command ends quietly with exit 0 when its reader goes away (``bootlens analyze
    big.log | head -1``), as ``cat`` does: no traceback, no "Broken pipe" (click alone exits 1)."""

    def invoke(self, ctx: click.Context) -> object:
        was_null = _is_devnull(1)
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            if not _release_closed_outputs():
                raise  # some other pipe (a socket): not ours to hide
            ctx.exit(0)
        except SystemExit as e:
            # rich's Console meets a closed pipe by pointing standard output at /dev/null and
            # exiting 1 (Console.on_broken_pipe): that exit, and only that one, becomes 0
            if e.code == 1 and not was_null and _is_devnull(1):
                ctx.exit(0)
            raise


def _is_devnull(fd: int) -> bool:
    """True if ``fd`` is /dev/null."""
    try:
        st, null = os.fstat(fd), os.stat(os.devnull)
    except OSError:
        return False
    return (st.st_rdev, st.st_ino) == (null.st_rdev, null.st_ino)


def _release_closed_outputs() -> bool:
    """Point standard output and error at /dev/null where their reader has gone, so that
    nothing (Python's final flush included) writes to them again; True if one had gone."""
    import select

    closed = False
    for fd in (1, 2):
        try:
            p = select.poll()
            p.register(fd, select.POLLOUT)
            gone = any(ev & select.POLLERR for _, ev in p.poll(0))  # a pipe without readers
        except (OSError, ValueError):
            continue
        if gone:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
            closed = True
    return closed


@click.group(cls=_QuietPipeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, prog_name="bootlens",
    message=f"%(prog)s, version %(version)s (native accelerator: {'on' if native_available() else 'off'})",
)
def main() -> None:
    """bootlens: the boot-time workbench for embedded Linux.

    Puts the bootloader, the kernel and user space on one time axis, from power-on to
    application ready, and tells you where the time goes.
    """


@main.command()
@click.argument("inputs", nargs=-1, required=True, metavar="FILE... | -")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON contract (docs/json.md) instead of tables.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(1, 10_000),
              help="How many initcalls, probes and processes to list.")
@click.option("--marker", "markers", multiple=True, metavar="NAME=REGEX",
              help="Mark lines matching REGEX as NAME; 'ready' ends the boot, e.g. --marker ready='APP READY'.")
def analyze(inputs: tuple[str, ...], as_json: bool, top: int, markers: tuple[str, ...]) -> None:
    """Analyse boot logs: stages on one axis, top initcalls, probes and processes, silences.

    FILE is a console log (serial capture, grabserial -t/-T, dmesg, journalctl -k -o
    short-monotonic) or a recording from `bootlens capture`; '-' reads standard input. One
    file may hold several boots.
    """
    from .analyze import analyze_paths
    from .parsers import MarkerSpec, ParseOptions

    try:
        opts = ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))
        result = analyze_paths(list(inputs), opts, top)
    except BootlensError as e:
        _fail(e)
    if as_json:
        from .render.jsonout import write_json

        write_json(result, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        _exit_now()
    else:
        from rich.console import Console  # only the tables need rich: keep --json start-up lean

        from .render.terminal import render_terminal

        render_terminal(result, Console(highlight=False), top)


@main.command(context_settings={"ignore_unknown_options": True})
@click.option("-o", "--output", required=True, metavar="FILE", help="The recording to write (JSON Lines).")
@click.option("--port", metavar="URL", help="A serial device or pyserial URL: /dev/ttyUSB0, socket://host:port, "
              "rfc2217://host:port. Without --port or a command, standard input is read.")
@click.option("--baud", default=115200, show_default=True, type=click.IntRange(50, 20_000_000),
              help="Line rate; recorded so that line times can be corrected for time on the wire.")
@click.option("--bytesize", default=8, show_default=True, type=click.Choice(["5", "6", "7", "8"]), help="Data bits.")
@click.option("--parity", default="N", show_default=True, type=click.Choice(["N", "E", "O", "M", "S"]))
@click.option("--stopbits", default="1", show_default=True, type=click.Choice(["1", "1.5", "2"]))
@click.option("--rtscts", is_flag=True, help="Hardware flow control.")
@click.option("--xonxoff", is_flag=True, help="Software flow control.")
@click.option("--quit", "quit_pattern", metavar="REGEX", help="Stop after a line matching REGEX, e.g. 'APP READY'.")
@click.option("--start", "start_pattern", metavar="REGEX", help="Restart the echoed times at each line matching "
              "REGEX (grabserial -m); the recording keeps absolute times and notes each restart.")
@click.option("--instant", "instants", multiple=True, metavar="REGEX", help="Report when REGEX is first seen, even "
              "mid-line such as a login prompt (grabserial -i); repeatable.")
@click.option("--end", "end_s", type=click.FloatRange(0, min_open=True), metavar="SECONDS",
              help="Stop after this many seconds.")
@click.option("-q", "--quiet", is_flag=True, help="Do not echo the console while capturing.")
@click.option("--no-low-latency", "no_low_latency", is_flag=True, help="Do not ask the kernel to keep idle CPUs "
              "awake while capturing (a PM QoS request on /dev/cpu_dma_latency, as cyclictest makes; it "
              "cuts wake-up delays, and so timestamp errors, from milliseconds to about 0.1 ms).")
@click.option("--reconnect", is_flag=True, help="When the port vanishes (a USB adapter losing power with the "
              "board), wait for it, reopen it and mark the gap in the recording.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- COMMAND...]")
def capture(output: str, port: str | None, baud: int, bytesize: str, parity: str, stopbits: str, rtscts: bool,
            xonxoff: bool, quit_pattern: str | None, start_pattern: str | None, instants: tuple[str, ...],
            end_s: float | None, quiet: bool, no_low_latency: bool, reconnect: bool,
            command: tuple[str, ...]) -> None:
    """Capture a console with host timestamps into a recording (docs/recording.md).

    Every read is written to the recording as it returns, so Ctrl-C, SIGTERM or even SIGKILL
    leave everything received. Reads a serial port (--port), a command's output
    (`bootlens capture -o boot.rec -- qemu-system-aarch64 ...`) or standard input.
    """
    import re

    from .capture import CommandSource, SerialSource, Source, capture as run_capture, stdin_source

    if port and command:
        _fail(UsageError("give --port or a command, not both"))
    for opt, pat in [("--quit", quit_pattern), ("--start", start_pattern), *(("--instant", i) for i in instants)]:
        if pat is None:
            continue
        try:
            re.compile(pat)
        except re.error as e:
            _fail(UsageError(f"{opt} {pat!r}: bad regular expression: {e}"))
    source: Source
    if port:
        source = SerialSource(port, baud, int(bytesize), parity, float(stopbits), rtscts, xonxoff)
    elif command:
        source = CommandSource(command)
    else:
        source = stdin_source()
    try:
        if reconnect and not port:
            _fail(UsageError("--reconnect needs --port"))
        result = run_capture(source, output, quit_pattern=quit_pattern, end_s=end_s,
                             echo=None if quiet else sys.stdout, reconnect=reconnect,
                             start_pattern=start_pattern, instant_patterns=instants,
                             low_latency=not no_low_latency)
    except BootlensError as e:
        _fail(e)
    if result.reason == "output closed":
        _release_closed_outputs()  # Python's final flush of the echo must not fail
    for pat, t_ns in result.instants:
        click.echo(f"bootlens: {pat!r} " + ("not seen" if t_ns is None else f"first seen at {t_ns / 1e9:.6f} s"),
                   err=True)
    click.echo(f"bootlens: {result.bytes} bytes in {result.chunks} reads, {result.seconds:.3f} s "
               f"({result.reason}) -> {output}", err=True)


@main.command()
@click.argument("recording", metavar="RECORDING")
@click.option("--format", "fmt", type=click.Choice(["text", "grabserial"]), default="text", show_default=True,
              help="text: the bytes as received; grabserial: '[elapsed delta] ' before each line (grabserial -t).")
@click.option("--no-wire", is_flag=True, help="Do not correct line times for time on the wire (baud rate).")
@click.option("--restart", is_flag=True, help="grabserial: count times from each line that matched the capture's "
              "--start pattern, as grabserial -m shows them.")
@click.option("-o", "--output", metavar="FILE", help="Write here instead of standard output.")
def export(recording: str, fmt: str, no_wire: bool, restart: bool, output: str | None) -> None:
    """Turn a recording into plain text or grabserial -t format."""
    from .recording import read_recording, to_grabserial

    try:
        rec = read_recording(recording)
    except BootlensError as e:
        _fail(e)
    for w in rec.warnings:
        click.echo(f"bootlens: warning: {w}", err=True)
    if rec.bad_records:
        click.echo(f"bootlens: warning: {rec.bad_records} damaged records skipped", err=True)
    data = rec.data if fmt == "text" else to_grabserial(rec, wire=not no_wire, restart=restart)
    _write_output(output or "-", data)


@main.group()
def target() -> None:
    """The built-in reference targets (real Debian kernels under QEMU)."""


@target.command("setup")
@click.argument("name", metavar="TARGET")
@click.option("--force", is_flag=True, help="Download and rebuild even if cached.")
def target_setup(name: str, force: bool) -> None:
    """Fetch the kernel and busybox for TARGET (qemu-arm64, qemu-x86_64) and build its initramfs."""
    from .target import setup

    try:
        tf = setup(name, force=force)
    except BootlensError as e:
        _fail(e)
    click.echo(f"{name}: kernel {tf.kernel_version}; files in {tf.kernel.parent}")


@main.command("run")
@click.argument("name", metavar="TARGET")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(1, 1000), help="Boots to run.")
@click.option("--append", default="", metavar="ARGS", help="Extra kernel command line arguments.")
@click.option("--cmdline", metavar="ARGS", help="Replace the kernel arguments (console= is kept; "
              "default: 'printk.time=1 panic=-1').")
@click.option("--rootfs-overlay", "overlay", metavar="DIR", type=click.Path(file_okay=False),
              help="Lay DIR's files over the initramfs, e.g. an edited etc/init.d/S40settle.")
@click.option("--uboot-env", "uboot_env", multiple=True, metavar="NAME=VALUE",
              help="Override a U-Boot variable (an environment image in QEMU's flash), e.g. bootdelay=0.")
@click.option("-o", "--output", metavar="DIR", help="Run folder (default: runs/TARGET-DATE-TIME).")
@click.option("--json", "as_json", is_flag=True, help="Print the analysis as JSON.")
@click.option("--report", "report_path", metavar="FILE", help="Also write the HTML report of the run to FILE "
              "(as `bootlens report RUN-FOLDER -o FILE` would).")
@click.option("--port", metavar="URL", help="TARGET 'board': the console, a serial device or pyserial URL.")
@click.option("--baud", type=click.IntRange(50, 20_000_000), metavar="RATE",
              help="TARGET 'board': the console's line rate (default 115200). Reference targets: read "
              "the console no faster than a serial line at RATE (QEMU's UART is infinitely fast; "
              "see docs/target.md for what this does and does not model).")
@click.option("--power-cycle", "power_cycle", metavar="CMD",
              help="TARGET 'board': a command that power-cycles it and returns when power is back "
              "(a relay, uhubctl); t=0 is when it returns.")
@click.option("--ready", default="APP READY", show_default=True, metavar="REGEX",
              help="TARGET 'board': the line that means the application is ready (ends each boot; "
              "the reference targets print APP READY).")
@click.option("--timeout", "timeout_s", default=300.0, show_default=True, type=click.FloatRange(1),
              help="Seconds to wait for the ready line before giving up on a boot.")
def run_cmd(name: str, repeat: int, append: str, cmdline: str | None, overlay: str | None,
            uboot_env: tuple[str, ...], output: str | None, as_json: bool, port: str | None, baud: int | None,
            power_cycle: str | None, ready: str, timeout_s: float, report_path: str | None) -> None:
    """Boot TARGET repeatedly, capture each boot from power-on, analyse.

    TARGET is a reference target (qemu-arm64, qemu-x86_64; set up first if needed) or `board`:
    real hardware, with --port for its console and --power-cycle for a command that restarts it.
    With --repeat N: N boots, one recording per boot in the run folder, and statistics per stage
    and marker.
    """
    import time as _time
    from pathlib import Path

    from rich.console import Console

    from .render.terminal import render_stats, render_terminal
    from .runs import run_target, statistics_of
    from .target import parse_env_overrides, setup

    console = Console(highlight=False, stderr=as_json)
    folder = Path(output or f"runs/{name}-{_time.strftime('%Y%m%d-%H%M%S')}")
    bar, boot_done = _boot_bar(console, name, repeat)

    def progress(i: int, seconds: float) -> None:
        boot_done(i, repeat, "", seconds)

    bar.start()
    try:
        if name == "board":
            if not port or not power_cycle:
                _fail(UsageError("run board needs --port (its console) and --power-cycle (a command)"))
            from .runs import run_board

            result = run_board(port, baud or 115200, power_cycle, folder, repeat, ready, timeout_s, progress)
        else:
            env = parse_env_overrides(uboot_env)
            tf = setup(name)
            result = run_target(tf, folder, repeat, append, progress, env or None, cmdline,
                                Path(overlay) if overlay else None, baud)
    except BootlensError as e:
        bar.stop()
        _fail(e)
    finally:
        bar.stop()
    if report_path:
        from .inputs import Group
        from .render.html import render_html

        _write_output(report_path, render_html([Group(str(folder), result, True)]))
    if as_json:
        from .render.jsonout import write_json

        write_json(result, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    if repeat == 1:
        render_terminal(result, console, 10)
    else:
        render_stats(statistics_of(result.boots), console, repeat)
    console.print(f"recordings in {folder}/" + (f"; report in {report_path}" if report_path else ""))


@main.command()
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option("-o", "--output", metavar="FILE", help="Where to write (default: report.html, report.svg or "
              "report.perfetto.json in the current folder; '-' for standard output).")
@click.option("--format", "fmt", type=click.Choice(["html", "svg", "perfetto"]), default="html", show_default=True,
              help="html: interactive, self-contained report; svg: static boot graph; perfetto: Chrome Trace "
              "Event JSON for ui.perfetto.dev and chrome://tracing.")
@click.option("--marker", "markers", multiple=True, metavar="NAME=REGEX",
              help="Mark lines matching REGEX as NAME; 'ready' ends the boot (run folders remember theirs).")
@click.option("--top", default=25, show_default=True, type=click.IntRange(1, 10_000),
              help="Rows in the tables of top initcalls and processes.")
def report(inputs: tuple[str, ...], output: str | None, fmt: str, markers: tuple[str, ...], top: int) -> None:
    """Write a report of one or more boots: INPUT is a log, a recording or a run folder.

    The HTML report is one file that works offline: the whole boot on one zoomable timeline,
    the stages, the top initcalls and processes, and the log itself.
    """
    from .inputs import analyze_inputs
    from .parsers import MarkerSpec, ParseOptions

    default = {"html": "report.html", "svg": "report.svg", "perfetto": "report.perfetto.json"}[fmt]
    out = output or default
    try:
        opts = ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))
        groups = analyze_inputs(list(inputs), opts, top)
        if fmt == "html":
            from .render.html import render_html

            data = render_html(groups)
        elif fmt == "svg":
            from .render.svg import render_svg

            data = render_svg(groups)
        else:
            from .render.perfetto import render_perfetto

            data = render_perfetto(groups)
    except BootlensError as e:
        _fail(e)
    _write_output(out, data)
    if out != "-":
        boots = sum(len(g.analysis.boots) for g in groups)
        click.echo(f"bootlens: {fmt} report of {boots} boot{'s' if boots != 1 else ''} -> {out}", err=True)


@main.command()
@click.argument("inputs", nargs=-1, required=True, metavar="BASELINE INPUT...")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON contract (docs/json.md, "
              "'bootlens compare --json') instead of tables.")
@click.option("--top", default=20, show_default=True, type=click.IntRange(1, 10_000),
              help="Rows in the tables of initcall, process and probe differences.")
@click.option("--html", metavar="FILE", help="Also write the HTML compare report (a waterfall of the stage "
              "differences, sortable tables) to FILE; '-' writes only it, to standard output.")
@click.option("--marker", "markers", multiple=True, metavar="NAME=REGEX",
              help="Mark lines matching REGEX as NAME; 'ready' ends the boot (run folders remember theirs).")
def compare(inputs: tuple[str, ...], as_json: bool, top: int, markers: tuple[str, ...], html: str | None) -> None:
    """Compare boots: each INPUT against the first, the baseline.

    An INPUT is a log, a recording or a run folder (repeated boots, from `bootlens run
    --repeat N`). Per total, stage and marker: the median over each input's boots and the
    difference to the baseline; then the initcalls, user processes and probes that changed most.
    A difference no larger than the run-to-run spread (max - min over the boots of either side)
    is shown as not significant; with one boot on a side it is unknown.
    """
    from .compare import compare_groups
    from .inputs import analyze_inputs
    from .parsers import MarkerSpec, ParseOptions

    if len(inputs) < 2:
        _fail(UsageError("compare needs at least two inputs: a baseline and one to compare with it"))
    try:
        opts = ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))
        result = compare_groups(analyze_inputs(list(inputs), opts), top)
    except BootlensError as e:
        _fail(e)
    if html:
        from .render.html import render_compare_html

        _write_output(html, render_compare_html(result))
        if html != "-":
            click.echo(f"bootlens: compare report -> {html}", err=True)
        if html == "-" or as_json:
            return
    if as_json:
        from .render.compare_json import write_compare_json

        write_compare_json(result, sys.stdout.buffer)
        _exit_now()
    from rich.console import Console

    from .render.terminal import render_compare

    render_compare(result, Console(highlight=False))


# --- experiment and optimize (issue 5, parts 3 and 4) ---------------------------------------
# Imported here so that this block stays self-contained; only annotations use them.
from collections.abc import Callable  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from .experiment import Bench


def _bench_options(f: Callable[..., None]) -> Callable[..., None]:
    """The options ``experiment`` and ``optimize`` share: how many boots, where, which target."""
    opts = [
        click.option("--repeat", default=3, show_default=True, type=click.IntRange(1, 1000),
                     help="Boots per configuration (2 or more for a significance verdict)."),
        click.option("-o", "--output", metavar="DIR", help="Where the run folders go, one per configuration "
                     "(default: runs/COMMAND-TARGET-DATE-TIME); must be new or empty."),
        click.option("--append", default="", metavar="ARGS", help="Kernel arguments every configuration gets "
                     "(the product's own); changes add to them. Reference targets only."),
        click.option("--json", "as_json", is_flag=True, help="Print the JSON document (docs/json.md) instead "
                     "of tables."),
        click.option("--baud", type=click.IntRange(50, 20_000_000), metavar="RATE", help="TARGET 'board': the "
                     "console's line rate (default 115200). Reference targets: read the console no faster than "
                     "a serial line at RATE."),
        click.option("--port", metavar="URL", help="TARGET 'board': its console, a serial device or pyserial URL."),
        click.option("--power-cycle", "power_cycle", metavar="CMD", help="TARGET 'board': a command that "
                     "power-cycles it and returns when power is back."),
        click.option("--ready", default="APP READY", show_default=True, metavar="REGEX",
                     help="TARGET 'board': the line that means the application is ready."),
        click.option("--hook", metavar="SCRIPT", help="TARGET 'board': the script that changes the board: "
                     "`SCRIPT reset`, then `SCRIPT apply KIND VALUE` per change (docs/experiment.md)."),
        click.option("--timeout", "timeout_s", default=300.0, show_default=True, type=click.FloatRange(1),
                     help="Seconds to wait for the ready line before giving up on a boot."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _bench(name: str, append: str, baud: int | None, port: str | None, power_cycle: str | None, ready: str,
           hook: str | None, timeout_s: float) -> Bench:
    """The target to experiment on: a reference target, or a board driven through its hook."""
    from .experiment import BoardBench, QemuBench
    from .target import setup

    if name == "board":
        if not port or not power_cycle or not hook:
            raise UsageError("board needs --port (its console), --power-cycle (a command) and --hook (a script "
                             "that applies changes; see docs/experiment.md)")
        if append:
            raise UsageError("--append is for reference targets; on a board the hook changes the command line")
        return BoardBench(port, baud or 115200, power_cycle, ready, hook, timeout_s)
    return QemuBench(setup(name), append, baud, min(timeout_s, 180.0))


def _boot_bar(console: Console, name: str, total: int | None = None
              ) -> tuple[Progress, Callable[[int, int, str, float], None]]:
    """A progress bar over boots: done, what is booting (empty for plain repeats) and time left;
    one line per boot instead when the console is not a terminal."""
    import time as _time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    started = _time.monotonic()
    bar = Progress(TextColumn("booting {task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("boots · {task.fields[what]}{task.fields[left]}"), TimeElapsedColumn(),
                   console=console, disable=not console.is_terminal)
    task = bar.add_task(name, total=total, what="", left="time left unknown until the first boot ends")

    def progress(done: int, total: int, what: str, seconds: float) -> None:
        left = (_time.monotonic() - started) / done * (total - done)
        bar.update(task, completed=done, total=total, what=f"{what} · " if what else "", left=f"about {left:.0f} s left")
        if not console.is_terminal:
            console.print(f"boot {done}/{total}{f' ({what})' if what else ''} done in {seconds:.1f} s; "
                          f"about {left:.0f} s left")

    return bar, progress


@main.command("experiment")
@click.argument("name", metavar="TARGET")
@click.option("--try", "tries", multiple=True, required=True, metavar="NAME=CHANGE",
              help="A change to measure, repeatable: NAME=cmdline:ARGS, NAME=uboot-env:VAR=VALUE, "
              "NAME=overlay:DIR (files laid over the root filesystem) or NAME=rule:RULE_ID (the advisor's change).")
@_bench_options
def experiment_cmd(name: str, tries: tuple[str, ...], repeat: int, output: str | None, append: str, as_json: bool,
                   baud: int | None, port: str | None, power_cycle: str | None, ready: str, hook: str | None,
                   timeout_s: float) -> None:
    """Measure what each change saves: boot the baseline, each change alone and all changes
    together, --repeat times each (interleaved), and set each saving next to the advisor's estimate.

    TARGET is a reference target (qemu-arm64, qemu-x86_64) or `board` (with --port,
    --power-cycle and --hook). Example: bootlens experiment qemu-arm64 --try
    nodelay=uboot-env:bootdelay=0 --try quiet=cmdline:quiet --repeat 3
    """
    import time as _time
    from pathlib import Path

    from rich.console import Console

    from .experiment import experiment, parse_try
    from .render.experiment import experiment_json_obj, render_experiment, write_json_obj

    console = Console(highlight=False, stderr=as_json)
    folder = Path(output or f"runs/experiment-{name}-{_time.strftime('%Y%m%d-%H%M%S')}")
    bar, progress = _boot_bar(console, name)
    try:
        specs = [parse_try(t) for t in tries]
        bench = _bench(name, append, baud, port, power_cycle, ready, hook, timeout_s)
        bar.start()
        result = experiment(bench, specs, folder, repeat, progress=progress)
    except BootlensError as e:
        bar.stop()
        _fail(e)
    finally:
        bar.stop()
    if as_json:
        write_json_obj(experiment_json_obj(result), sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    render_experiment(result, console)


@main.command("optimize")
@click.argument("name", metavar="TARGET")
@_bench_options
@click.option("--html", metavar="FILE", help="Also write the before/after compare report (HTML) to FILE; '-' "
              "writes only it, to standard output.")
def optimize_cmd(name: str, repeat: int, output: str | None, append: str, as_json: bool, baud: int | None,
                 port: str | None, power_cycle: str | None, ready: str, hook: str | None, timeout_s: float,
                 html: str | None) -> None:
    """Find and keep the changes that make TARGET boot faster.

    Boots once with the kernel's tracing on and asks the advisor; tries every finding that
    bootlens can apply (kernel command line, U-Boot variables, init script edits) alone,
    --repeat boots each against as many of the baseline; keeps those that save time
    significantly and still reach the ready line; boots them together and prints the final
    configuration with the before/after comparison. Kconfig and manual findings are listed,
    not tried.
    """
    import time as _time
    from pathlib import Path

    from rich.console import Console

    from .experiment import optimize
    from .render.experiment import optimize_json_obj, render_optimize, write_json_obj

    console = Console(highlight=False, stderr=as_json)
    folder = Path(output or f"runs/optimize-{name}-{_time.strftime('%Y%m%d-%H%M%S')}")
    bar, progress = _boot_bar(console, name)
    try:
        bench = _bench(name, append, baud, port, power_cycle, ready, hook, timeout_s)
        bar.start()
        result = optimize(bench, folder, repeat, progress=progress)
    except BootlensError as e:
        bar.stop()
        _fail(e)
    finally:
        bar.stop()
    if html and result.comparison is not None:
        from .render.html import render_compare_html

        _write_output(html, render_compare_html(result.comparison))
        if html == "-":
            return
    elif html:
        click.echo("bootlens: nothing kept, no before/after report written", err=True)
    if as_json:
        write_json_obj(optimize_json_obj(result), sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    render_optimize(result, console)
    if html and result.comparison is not None:
        console.print(f"before/after compare report in {html}")

# --- end of experiment and optimize ----------------------------------------------------------


# --- bootlens advise (issue 5) ---------------------------------------------------------------
@main.command("advise")
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON contract (docs/json.md, "
              "'bootlens advise --json') instead of the listing.")
@click.option("--marker", "markers", multiple=True, metavar="NAME=REGEX",
              help="Mark lines matching REGEX as NAME; 'ready' ends the boot (run folders remember theirs).")
@click.option("--baud", type=click.IntRange(50, 20_000_000), metavar="RATE",
              help="The console's line rate, for the console rules (default: what a recording's header "
                   "says; unknown otherwise, and those rules give no number).")
def advise_cmd(inputs: tuple[str, ...], as_json: bool, markers: tuple[str, ...], baud: int | None) -> None:
    """Say what to change to boot faster, with the saving each change would bring.

    INPUT is a log, a recording or a run folder. Every rule (docs/advise.md) reads each boot and
    reports findings worst first: the estimated saving and the arithmetic behind it from this
    boot's own data, its confidence, the concrete change (kernel command line, U-Boot variable,
    init script, Kconfig) and its trade-off. The findings of an input of several boots (a run
    folder, a log of many boots) are merged: one set, each finding with the boots it applied to
    and its median saving (min and max). Warnings go to standard error, each once, counted.
    Where the log cannot support a figure, the finding says why.
    """
    from .advise import default_registry
    from .advise.summary import advise_inputs
    from .parsers import MarkerSpec, ParseOptions

    try:
        opts = ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))
        result = advise_inputs(list(inputs), opts, baud)
    except BootlensError as e:
        _fail(e)
    from .render.advise_terminal import warning_lines

    for w in warning_lines(result):  # each once, counted over the boots, never in the listing
        click.echo(w, err=True)
    if as_json:
        from .render.advise_json import write_advise_json

        write_advise_json(result, default_registry().ids(), sys.stdout.buffer)
        _exit_now()
    from rich.console import Console

    from .render.advise_terminal import render_advise

    render_advise(result, Console(highlight=False))
# --- end of bootlens advise --------------------------------------------------------------------


def _write_output(path: str, data: bytes) -> None:
    """Write bytes to a file, or to standard output for '-'; a failure is a one-line error."""
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        _fail(UsageError(f"{path}: cannot write: {e.strerror}"))


def _exit_now() -> None:
    """Exit 0 without tearing down the analysis: freeing a big log's millions of objects one by
    one takes longer than the OS takes to reclaim the whole process."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _fail(e: BootlensError) -> NoReturn:
    click.echo(f"bootlens: error: {e}", err=True)
    sys.exit(e.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
