"""capture: a console into a recording, with host timestamps."""

from __future__ import annotations

import sys

import click

from ..errors import BootlensError, UsageError
from . import main
from .common import fail as _fail, release_closed_outputs as _release_closed_outputs


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

    from ..capture import CommandSource, SerialSource, Source, capture as run_capture, stdin_source

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


