"""target, run, experiment and optimize: the commands that boot a target."""

from __future__ import annotations

import sys

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from ..errors import BootlensError, UsageError
from . import main
from .common import fail as _fail, write_output as _write_output


if TYPE_CHECKING:
    from ..experiment import Bench


@main.group()
def target() -> None:
    """The built-in reference targets (real Debian kernels under QEMU)."""


@target.command("setup")
@click.argument("name", metavar="TARGET")
@click.option("--force", is_flag=True, help="Download and rebuild even if cached.")
def target_setup(name: str, force: bool) -> None:
    """Fetch the kernel and busybox for TARGET (qemu-arm64, qemu-x86_64) and build its initramfs."""
    from ..target import setup

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

    from ..render.progress import boot_bar

    from ..render.compare_terminal import render_stats
    from ..render.terminal import render_terminal
    from ..runs import run_target
    from ..stats import statistics_of
    from ..target import parse_env_overrides, setup

    console = Console(highlight=False, stderr=as_json)
    folder = Path(output or f"runs/{name}-{_time.strftime('%Y%m%d-%H%M%S')}")
    bar, boot_done = boot_bar(console, name, repeat)

    def progress(i: int, seconds: float) -> None:
        boot_done(i, repeat, "", seconds)

    bar.start()
    try:
        if name == "board":
            if not port or not power_cycle:
                _fail(UsageError("run board needs --port (its console) and --power-cycle (a command)"))
            from ..runs import run_board

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
        from ..inputs import Group
        from ..render.html import render_html

        _write_output(report_path, render_html([Group(str(folder), result, True)]))
    if as_json:
        from ..render.jsonout import write_json

        write_json(result, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    if repeat == 1:
        render_terminal(result, console, 10)
    else:
        render_stats(statistics_of(result.boots), console, repeat)
    console.print(f"recordings in {folder}/" + (f"; report in {report_path}" if report_path else ""))



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
    from ..experiment import BoardBench, QemuBench
    from ..target import setup

    if name == "board":
        if not port or not power_cycle or not hook:
            raise UsageError("board needs --port (its console), --power-cycle (a command) and --hook (a script "
                             "that applies changes; see docs/experiment.md)")
        if append:
            raise UsageError("--append is for reference targets; on a board the hook changes the command line")
        return BoardBench(port, baud or 115200, power_cycle, ready, hook, timeout_s)
    return QemuBench(setup(name), append, baud, min(timeout_s, 180.0))



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

    from ..render.progress import boot_bar

    from ..experiment import experiment, parse_try
    from ..render.experiment import experiment_json_obj, render_experiment, write_json_obj

    console = Console(highlight=False, stderr=as_json)
    folder = Path(output or f"runs/experiment-{name}-{_time.strftime('%Y%m%d-%H%M%S')}")
    bar, progress = boot_bar(console, name)
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

    from ..render.progress import boot_bar

    from ..experiment import optimize
    from ..render.experiment import optimize_json_obj, render_optimize, write_json_obj

    console = Console(highlight=False, stderr=as_json)
    folder = Path(output or f"runs/optimize-{name}-{_time.strftime('%Y%m%d-%H%M%S')}")
    bar, progress = boot_bar(console, name)
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
        from ..render.html import render_compare_html

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

