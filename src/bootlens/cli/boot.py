"""target, run, experiment and optimize: the commands that boot a target."""

from __future__ import annotations

import sys

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from ..core.errors import BootlensError, UsageError
from . import main
from .common import EXIT_NOT_READY, fail as _fail, say as _say, write_output as _write_output
from .storeopts import store_hook, store_options, wants_store  # not .history: its commands (start-up)
from .labgridcmd import labgrid_options


if TYPE_CHECKING:
    from pathlib import Path

    from ..targets.base import Target
    from ..targets.runs import NotReady


def _open_target(name: str, ready: str, timeout_s: float, baud: int | None, port: str | None,
                 power_cycle: str | None, lg_env: str | None, lg_role: str, lg_place: str | None,
                 lg_coordinator: str | None, append: str = "", cmdline: str | None = None, hook: str | None = None,
                 changes: bool = False, deterministic: bool = False) -> Target:
    """The target TARGET names (lab.catalogue), opened from the command's options; which of them
    were typed on the command line (not taken from bootlens.toml) goes with them."""
    from click.core import ParameterSource

    from ..lab.catalogue import open_target
    from ..targets.base import TargetOptions

    ctx = click.get_current_context()
    typed = frozenset(p.removeprefix("lg_") for p in ctx.params
                      if ctx.get_parameter_source(p) is ParameterSource.COMMANDLINE)
    return open_target(TargetOptions(name, ready, timeout_s, baud, append, cmdline, port=port, power_cycle=power_cycle,
                                     hook=hook, env=lg_env, role=lg_role, place=lg_place, coordinator=lg_coordinator,
                                     changes=changes, typed=typed, deterministic=deterministic))


def _exit_if_not_ready(failed: list[NotReady], ready: str) -> None:
    """Name every boot that never reached the ready marker, one line each on standard error,
    and exit 3 (README, "Exit codes"); nothing when every boot reached it."""
    if not failed:
        return
    for f in failed:
        _say(f"bootlens: {f.path}: never reached the ready marker {ready!r}: {f.why}")
    sys.exit(EXIT_NOT_READY)


def _deterministic(f: Callable[..., None]) -> Callable[..., None]:
    """--deterministic, as run, experiment and optimize take it (their run folders say to read
    their boots on the guest's clocks; a single recording of ``target boot`` would not)."""
    return click.option(
        "--deterministic", is_flag=True,
        help="qemu-arm64: run QEMU with -icount (1 ns of guest time per instruction) and read each boot on "
        "the guest's own clocks, which the host's load does not move: power-on from the guest's counter, "
        "read just before the ready line. Boots take 3-5x longer in host time (docs/experiment.md).")(f)


@main.group()
def target() -> None:
    """The built-in reference targets (real Debian kernels under QEMU; a Debian 12 systemd image)."""


@target.command("setup")
@click.argument("name", metavar="TARGET")
@click.option("--force", is_flag=True, help="Download and rebuild even if cached.")
def target_setup(name: str, force: bool) -> None:
    """Fetch the kernel and busybox for TARGET (qemu-arm64, qemu-x86_64) and build its initramfs; for
    qemu-x86_64-systemd, build a Debian 12 systemd root filesystem image with mmdebstrap (needs root)."""
    from ..targets.qemu import setup

    try:
        tf = setup(name, force=force)
    except BootlensError as e:
        _fail(e)
    click.echo(f"{name}: kernel {tf.kernel_version}; files in {tf.kernel.parent}")


@target.command("boot")
@click.argument("name", metavar="TARGET")
@click.option("-o", "--output", default="boot.rec", show_default=True, metavar="FILE",
              help="The recording of the console, from power-on.")
@click.option("--append", default="", metavar="ARGS", help="Extra kernel command line arguments "
              "(e.g. systemd.mask=UNIT).")
@click.option("--cmdline", metavar="ARGS", help="Replace the kernel arguments (console= and root= are kept).")
@click.option("--rootfs-overlay", "overlay", metavar="DIR", type=click.Path(file_okay=False),
              help="Lay DIR's files and symlinks over the initramfs or the root filesystem image.")
@click.option("--collect", metavar="DIR", type=click.Path(file_okay=False),
              help="qemu-x86_64-systemd: let the guest run on after the ready line, collect systemd-analyze "
              "(time, blame, critical-chain, plot, dump) and journalctl (json, export, short-monotonic, "
              "short-precise) outputs of this boot into DIR, then power off.")
@click.option("--timeout", "timeout_s", default=300.0, show_default=True, type=click.FloatRange(1),
              help="Seconds to wait for the ready line (or, collecting, the guest's power-off).")
@click.option("--trace", "trace_spec", metavar="SPEC",
              help="Boot-time ftrace (busybox reference targets): comma-separated function_graph[=FUNC] "
              "(default FUNC do_one_initcall), function[=FUNC], initcall, sched, depth=N (graph depth, "
              "default 3, 0: none), buf=SIZE (per CPU, default 8M). The buffer is dumped on the console "
              "after the ready line and kept beside the recording as .trace.txt (docs/ftrace-run.md).")
def target_boot(name: str, output: str, append: str, cmdline: str | None, overlay: str | None,
                collect: str | None, timeout_s: float, trace_spec: str | None) -> None:
    """Boot TARGET once and record its console from power-on (QEMU stops at APP READY)."""
    from pathlib import Path

    from ..targets.qemu import boot, kernel_cmdline, setup
    from ..targets.trace_plan import parse_trace
    from ..capture.trace_dump import trace_path

    try:
        plan = parse_trace(trace_spec) if trace_spec is not None else None
        tf = setup(name)
        boot(tf, output, kernel_cmdline(tf, cmdline, append), timeout_s, overlay=Path(overlay) if overlay else None,
             collect=Path(collect) if collect else None, trace=plan)
    except BootlensError as e:
        _fail(e)
    traced = plan is not None and trace_path(Path(output)).is_file()
    click.echo(f"recording in {output}" + (f"; the guest's files in {collect}/" if collect else "")
               + (f"; trace in {trace_path(Path(output))}" if traced else ""))


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
              help="The line that means the application is ready: it ends each boot and the measurement "
              "(the reference targets print APP READY). A boot that never prints it makes the exit code 3.")
@click.option("--timeout", "timeout_s", default=300.0, show_default=True, type=click.FloatRange(1),
              help="Seconds to wait for the ready line before giving up on a boot (exit code 3).")
@click.option("--trace", "trace_spec", metavar="SPEC",
              help="Boot-time ftrace (busybox reference targets): comma-separated function_graph[=FUNC] "
              "(default FUNC do_one_initcall), function[=FUNC], initcall, sched, depth=N (graph depth, "
              "default 3, 0: none), buf=SIZE (per CPU, default 8M). The buffer is dumped on the console "
              "after the ready line and kept beside the recording as .trace.txt (docs/ftrace-run.md).")
@_deterministic
@labgrid_options
@store_options("the run (its boots)")
def run_cmd(name: str, repeat: int, append: str, cmdline: str | None, overlay: str | None,
            uboot_env: tuple[str, ...], output: str | None, as_json: bool, port: str | None, baud: int | None,
            power_cycle: str | None, ready: str, timeout_s: float, report_path: str | None,
            trace_spec: str | None, deterministic: bool, lg_env: str | None, lg_role: str, lg_place: str | None,
            lg_coordinator: str | None, db: str | None, labels: tuple[str, ...]) -> None:
    """Boot TARGET repeatedly, capture each boot from power-on, analyse.

    TARGET is a reference target (qemu-arm64, qemu-x86_64, qemu-x86_64-systemd; set up first if
    needed) or `board`: real hardware, with --port for its console and --power-cycle for a
    command that restarts it, or `labgrid`: a role of a labgrid environment (--env; docs/labgrid.md).
    With --repeat N: N boots, one recording per boot in the run folder, and statistics per stage
    and marker. Exit code 3 when a boot never reached the ready line (--ready): the boots are
    still analysed and printed, and each failing one is named on standard error with its
    recording. With --trace, each boot's ftrace buffer is kept as boot-N.trace.txt and analysed
    with its boot.
    """
    import time as _time
    from pathlib import Path

    from rich.console import Console

    from ..render.progress import boot_bar

    from ..render.compare_terminal import render_stats
    from ..render.terminal import render_terminal
    from ..stats.figures import statistics_of
    from ..targets.base import BootConfig
    from ..targets.qemu import parse_env_overrides
    from ..targets.runs import run_target
    from ..targets.trace_plan import parse_trace

    console = Console(highlight=False, stderr=as_json)
    folder = Path(output or f"runs/{name}-{_time.strftime('%Y%m%d-%H%M%S')}")
    bar, boot_done = boot_bar(console, name, repeat)

    def progress(i: int, seconds: float) -> None:
        boot_done(i, repeat, "", seconds)

    try:
        config = BootConfig(uboot_env=tuple(parse_env_overrides(uboot_env).items()),
                            overlay=Path(overlay) if overlay else None,
                            trace=parse_trace(trace_spec) if trace_spec is not None else None)
        target = _open_target(name, ready, timeout_s, baud, port, power_cycle, lg_env, lg_role, lg_place,
                              lg_coordinator, append, cmdline, deterministic=deterministic)
        bar.start()
        run = run_target(target, folder, repeat, config, progress)
    except BootlensError as e:
        bar.stop()
        _fail(e)
    finally:
        bar.stop()
    result = run.analysis
    if wants_store(db, labels) and result.boots:
        from ..timeline.inputs import Group

        store_hook(db, _with_target(labels, name), Group(str(folder), result, True), "run", str(folder))
    if report_path and result.boots:
        from ..timeline.inputs import Group
        from ..render.html import render_html_pieces

        _write_output(report_path, render_html_pieces([Group(str(folder), result, True)]))
    if as_json:
        from ..render.jsonout import write_json

        write_json(result, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    elif result.boots:
        if repeat == 1:
            render_terminal(result, console, 10)
        else:
            render_stats(statistics_of(result.boots), console, repeat)
    if not as_json:
        console.print(f"recordings in {folder}/" + (f"; report in {report_path}" if report_path and result.boots
                                                    else ""))
    _exit_if_not_ready(list(run.not_ready), ready)



def _with_target(labels: tuple[str, ...], name: str) -> tuple[str, ...]:
    """The labels, with target=NAME unless one names the target already."""
    return labels if any(lb.partition("=")[0].strip() == "target" for lb in labels) else (*labels, f"target={name}")


def _experiment_options(f: Callable[..., None]) -> Callable[..., None]:
    """The options ``experiment`` and ``optimize`` share: how many boots, where, which target."""
    opts = [
        click.option("--repeat", default="3", show_default=True, type=_REPEAT, metavar="N|auto",
                     help="Boots per configuration (2 or more for a significance verdict; 3 decide a clear "
                     "change). 'auto': 3, then more, interleaved, until every change's verdict is decided "
                     "or --max-repeat."),
        click.option("--max-repeat", "max_repeat", default=10, show_default=True, type=click.IntRange(2, 1000),
                     metavar="N", help="With --repeat auto: the most boots per configuration."),
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
                     help="The line that means the application is ready: it ends each boot and the measurement "
                     "(the reference targets print APP READY)."),
        click.option("--hook", metavar="SCRIPT", help="TARGET 'board': the script that changes the board: "
                     "`SCRIPT reset`, then `SCRIPT apply KIND VALUE` per change (docs/experiment.md)."),
        click.option("--timeout", "timeout_s", default=300.0, show_default=True, type=click.FloatRange(1),
                     help="Seconds to wait for the ready line before giving up on a boot (exit code 3)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return labgrid_options(_deterministic(f))


if TYPE_CHECKING:
    _ParamBase = click.ParamType[int | str]  # generic from click 8.2 on; a plain class before
else:
    _ParamBase = click.ParamType


class _RepeatType(_ParamBase):
    """--repeat: a number of boots (1 to 1000) or 'auto'."""

    name = "N|auto"
    expected = "a whole number from 1 to 1000, or 'auto'"  # bootlens.toml's message (cli.configschema)

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int | str:
        text = str(value).strip().lower()
        if text == "auto":
            return "auto"
        try:
            n = int(text)
        except ValueError:
            self.fail(f"{value!r} is neither a number of boots nor 'auto'", param, ctx)
        if not 1 <= n <= 1000:
            self.fail(f"{n} is not in the range 1<=x<=1000 (or 'auto')", param, ctx)
        return n


_REPEAT = _RepeatType()


def _repeat_plan(repeat: int | str, max_repeat: int) -> tuple[int, int | None]:
    """(boots first, the cap or None): --repeat auto boots 3 (fewer if --max-repeat is lower)
    and at most --max-repeat; a number boots exactly that many, and --max-repeat typed with it
    is a mistake."""
    from click.core import ParameterSource

    if repeat == "auto":
        return min(3, max_repeat), max_repeat
    ctx = click.get_current_context()
    if ctx.get_parameter_source("max_repeat") is ParameterSource.COMMANDLINE:
        raise UsageError(f"--max-repeat goes with --repeat auto (--repeat {repeat} boots exactly {repeat})")
    return int(repeat), None


@main.command("experiment")
@click.argument("name", metavar="TARGET")
@click.option("--try", "tries", multiple=True, required=True, metavar="NAME=CHANGE",
              help="A change to measure, repeatable: NAME=cmdline:ARGS, NAME=uboot-env:VAR=VALUE, "
              "NAME=overlay:DIR (files laid over the root filesystem) or NAME=rule:RULE_ID (the advisor's change).")
@_experiment_options
@store_options("each configuration's boots (labels config=NAME and experiment=FOLDER added)")
def experiment_cmd(name: str, tries: tuple[str, ...], repeat: int | str, max_repeat: int, output: str | None, append: str, as_json: bool,
                   baud: int | None, port: str | None, power_cycle: str | None, ready: str, hook: str | None,
                   timeout_s: float, deterministic: bool, lg_env: str | None, lg_role: str, lg_place: str | None,
                   lg_coordinator: str | None, db: str | None, labels: tuple[str, ...]) -> None:
    """Measure what each change saves: boot the baseline, each change alone and all changes
    together, --repeat times each (interleaved), and set each saving next to the advisor's estimate.

    TARGET is a reference target (qemu-arm64, qemu-x86_64, qemu-x86_64-systemd) or `board` (with
    --port, --power-cycle and --hook). Example: bootlens experiment qemu-arm64 --try
    nodelay=uboot-env:bootdelay=0 --try quiet=cmdline:quiet --repeat 3
    """
    import time as _time
    from pathlib import Path

    from rich.console import Console

    from ..render.progress import boot_bar

    from ..experiment.experiment import experiment, parse_try
    from ..render.experiment import experiment_json_obj, render_experiment, write_json_obj

    console = Console(highlight=False, stderr=as_json)
    folder = Path(output or f"runs/experiment-{name}-{_time.strftime('%Y%m%d-%H%M%S')}")
    bar, progress = boot_bar(console, name)
    try:
        specs = [parse_try(t) for t in tries]
        target = _open_target(name, ready, timeout_s, baud, port, power_cycle, lg_env, lg_role, lg_place,
                              lg_coordinator, append, hook=hook, changes=True, deterministic=deterministic)
        bar.start()
        first, most = _repeat_plan(repeat, max_repeat)
        result = experiment(target, specs, folder, first, progress=progress, max_repeat=most)
    except BootlensError as e:
        bar.stop()
        _fail(e)
    finally:
        bar.stop()
    if as_json:
        write_json_obj(experiment_json_obj(result), sys.stdout.buffer)
        sys.stdout.buffer.flush()
    else:
        render_experiment(result, console)
    measured = [result.baseline, *(o.measured for o in result.changes),
                *((result.together.measured,) if result.together is not None else ())]
    if wants_store(db, labels):
        from ..timeline.inputs import Group

        for m in measured:
            if m.analysis.boots:
                store_hook(db, _with_target(labels, name) + (f"config={m.setup.name}", f"experiment={folder.name}"),
                           Group(str(m.folder), m.analysis, True), "experiment", str(m.folder))
    _exit_if_not_ready(_not_ready([m.folder for m in measured if m.ready_boots < m.boots]), ready)


def _not_ready(folders: list[Path]) -> list[NotReady]:
    """The boots of these run folders that never reached the ready marker."""
    from ..targets.runs import analyze_run

    return [f for folder in folders for f in analyze_run(folder).not_ready]


@main.command("optimize")
@click.argument("name", metavar="TARGET")
@_experiment_options
@click.option("--html", metavar="FILE", help="Also write the before/after compare report (HTML) to FILE; '-' "
              "writes only it, to standard output.")
@click.option("--rounds", default=3, show_default=True, type=click.IntRange(1, 20), metavar="N",
              help="At most N rounds: while a round keeps a change, the next advises on a boot of what was kept "
              "and tries the new findings on top of it. 1: a single round.")
@click.option("--rebuild-kernel", is_flag=True, help="Also try kernels built from source (qemu-arm64: Debian's "
              "linux-source, the aarch64 cross compiler): one with only what the traced boot used, then the "
              "advisor's Kconfig findings on top of it. Builds take minutes each (cached).")
def optimize_cmd(name: str, repeat: int | str, max_repeat: int, output: str | None, append: str, as_json: bool, baud: int | None,
                 port: str | None, power_cycle: str | None, ready: str, hook: str | None, timeout_s: float,
                 lg_env: str | None, lg_role: str, lg_place: str | None, lg_coordinator: str | None,
                 html: str | None, rounds: int, deterministic: bool, rebuild_kernel: bool) -> None:
    """Find and keep the changes that make TARGET boot faster.

    Boots once with the kernel's tracing on and asks the advisor; tries every finding that
    bootlens can apply (kernel command line, U-Boot variables, init script edits) alone,
    --repeat boots each against as many of the baseline; keeps those that save time
    significantly and still reach the ready line; boots them together and prints the final
    configuration with the before/after comparison. While a round keeps a change, the next one
    (up to --rounds) advises again on a boot of what was kept and tries its new findings on top
    of it; the target as it was and the final configuration are then booted side by side.
    Kconfig findings are tried with --rebuild-kernel (a kernel built from the boot first, then
    the others on top of it); manual ones are listed, not tried. Exit code 3 when a boot of the traced
    boot, the baseline or the final configuration never reached the ready line (a change that
    breaks the boot is only not kept).
    """
    import time as _time
    from pathlib import Path

    from rich.console import Console

    from ..render.progress import boot_bar

    from ..experiment.optimize import optimize
    from ..render.experiment import optimize_json_obj, render_optimize, write_json_obj

    console = Console(highlight=False, stderr=as_json)
    folder = Path(output or f"runs/optimize-{name}-{_time.strftime('%Y%m%d-%H%M%S')}")
    bar, progress = boot_bar(console, name)
    try:
        target = _open_target(name, ready, timeout_s, baud, port, power_cycle, lg_env, lg_role, lg_place,
                              lg_coordinator, append, hook=hook, changes=True, deterministic=deterministic)
        bar.start()
        first, most = _repeat_plan(repeat, max_repeat)
        result = optimize(target, folder, first, progress=progress, max_repeat=most, rounds=rounds,
                          rebuild_kernel=rebuild_kernel)
    except BootlensError as e:
        bar.stop()
        _fail(e)
    finally:
        bar.stop()
    if html and result.comparison is not None:
        from ..render.experiment import tried_rows
        from ..render.html import render_compare_html

        _write_output(html, render_compare_html(result.comparison, tried_rows(result)))
        if html == "-":
            return
    elif html:
        click.echo("bootlens: nothing kept, no before/after report written", err=True)
    if as_json:
        write_json_obj(optimize_json_obj(result), sys.stdout.buffer)
        sys.stdout.buffer.flush()
    else:
        render_optimize(result, console)
        if html and result.comparison is not None:
            console.print(f"before/after compare report in {html}")
    # a tried change that breaks the boot is a result (not kept), not a failure of the run
    folders = [r.advise_folder for r in result.rounds]
    if result.baseline.ready_boots < result.baseline.boots:
        folders.append(result.baseline.folder)
    fo = result.final_outcome
    if fo is not None and fo.measured.ready_boots < fo.measured.boots:
        folders.append(fo.measured.folder)
    _exit_if_not_ready(_not_ready(folders), ready)

