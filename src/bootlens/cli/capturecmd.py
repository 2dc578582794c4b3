"""capture: a console into a recording, with host timestamps; grabserial's options in
grabserial's meaning where they do not collide with bootlens's (README, "grabserial users")."""

from __future__ import annotations

import sys
from typing import Any

import click

from ..core.errors import BootlensError, UsageError, printable
from . import main
from .common import BootlensCommand, OneLineUsageError, fail as _fail, release_closed_outputs as _release_closed_outputs

DEFAULT_OUTPUT = "capture-%Y%m%d-%H%M%S.rec"

# grabserial's options that bootlens capture does not take, and why (its -q is ours --quitpat:
# bootlens's -q has meant --quiet from the start)
NOT_TAKEN = {
    "-c": "grabserial's -c/--command (send a command to the port): bootlens capture only reads the console",
    "--command": "grabserial's -c/--command (send a command to the port): bootlens capture only reads the console",
    "-C": "grabserial's -C/--command-mode: bootlens capture only reads the console",
    "--command-mode": "grabserial's -C/--command-mode: bootlens capture only reads the console",
    "-E": "grabserial's -E/--endofline goes with its -c, which bootlens capture does not take",
    "--endofline": "grabserial's -E/--endofline goes with its -c, which bootlens capture does not take",
    "-A": "grabserial's -A/--append: a recording is not appended to; give each capture its own -o "
          "(strftime codes such as %H%M%S in the name do that)",
    "--append": "grabserial's -A/--append: a recording is not appended to; give each capture its own -o",
    "-z": "grabserial's -z/--split-lines: a recording keeps every byte whatever the rotation",
    "--split-lines": "grabserial's -z/--split-lines: a recording keeps every byte whatever the rotation",
    "--hex-output": "grabserial's --hex-output: the recording holds the bytes exactly; bootlens export shows them",
    "--hex-ascii": "grabserial's --hex-ascii: the recording holds the bytes exactly; bootlens export shows them",
    "--hex-size": "grabserial's --hex-size: the recording holds the bytes exactly; bootlens export shows them",
}


class CaptureCommand(BootlensCommand):
    """``capture``'s parsing: the command to capture only after ``--``; grabserial options
    bootlens does not take are named as such."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        raw = list(args)
        try:
            rest = super().parse_args(ctx, args)
        except click.NoSuchOption as e:
            why = NOT_TAKEN.get(e.option_name)
            if why is None:
                raise
            raise OneLineUsageError(f"capture: {e.option_name}: {why}", ctx) from None
        command = tuple(ctx.params.get("command") or ())
        if command:
            after = raw[raw.index("--") + 1:] if "--" in raw else []
            strays = list(command[:len(command) - len(after)]) if command[len(command) - len(after):] == tuple(after) \
                else list(command)
            if strays:
                stray = strays[0]
                msg = f"unexpected argument {stray!r}: the command to capture goes after --, e.g. bootlens " \
                      f"capture -o boot.rec -- {stray} ..."
                i = raw.index(stray) if stray in raw else -1
                if i > 0 and raw[i - 1] == "-q":
                    msg = (f"unexpected argument {stray!r}: -q is --quiet here (grabserial's -Q); grabserial's "
                           f"-q PATTERN is --quitpat PATTERN")
                raise OneLineUsageError(f"capture: {msg}", ctx)
            from click.core import ParameterSource

            if ctx.get_parameter_source("port") is ParameterSource.DEFAULT_MAP:
                ctx.params["port"] = None  # bootlens.toml's port, and a command typed now: the command
                ctx.set_parameter_source("port", ParameterSource.DEFAULT)
        return rest


class HarmlessEcho:
    """The echo as a terminal may draw it: a device's control sequences (a title, a screen
    clear, the alternate screen) shown escaped, colours kept (:func:`visible_terminal`)."""

    def __init__(self, out: Any) -> None:
        from ..render.visible import visible_terminal

        self._out = out
        self._show = visible_terminal

    def write(self, s: str, /) -> int:
        n: int = self._out.write(self._show(s))
        return n

    def flush(self) -> None:
        self._out.flush()


def _rotation(text: str) -> tuple[float, bool]:
    """grabserial's -R value: seconds, or a number with s, m or h (then rounded to multiples)."""
    unit = {"s": 1, "m": 60, "h": 3600}.get(text[-1:])
    try:
        value = float(text[:-1] if unit else text)
    except ValueError:
        raise UsageError(f"-R/--rotate {text!r}: expected seconds, or a number with s, m or h (e.g. 30m)") from None
    if not value > 0 or value == float("inf"):
        raise UsageError(f"-R/--rotate {text!r}: the period must be positive")
    return value * (unit or 1), unit is not None


@main.command(cls=CaptureCommand, context_settings={"allow_interspersed_args": False})
@click.option("-o", "--output", metavar="FILE", help="The recording to write (JSON Lines: every byte with its time; "
              "bootlens export turns it into text). strftime codes are replaced, '%' alone is grabserial's "
              f"date-time name. Default: {DEFAULT_OUTPUT}.")
@click.option("-d", "--port", "--device", "port", metavar="URL", help="A serial device or pyserial URL: "
              "/dev/ttyUSB0, socket://host:port, rfc2217://host:port. Without a port or a command, standard "
              "input is read.")
@click.option("-b", "--baud", "-B", "--baudrate", "baud", default=115200, show_default=True,
              type=click.IntRange(50, 20_000_000), metavar="RATE",
              help="Line rate; recorded so that line times can be corrected for time on the wire.")
@click.option("-w", "--bytesize", "--width", "bytesize", default="8", show_default=True,
              type=click.Choice(["5", "6", "7", "8"]), help="Data bits.")
@click.option("-p", "--parity", default="N", show_default=True, type=click.Choice(["N", "E", "O", "M", "S"]))
@click.option("-s", "--stopbits", default="1", show_default=True, type=click.Choice(["1", "1.5", "2"]))
@click.option("-r", "--rtscts", is_flag=True, help="Hardware flow control.")
@click.option("-x", "--xonxoff", is_flag=True, help="Software flow control.")
@click.option("--quit", "--quitpat", "quit_pattern", metavar="REGEX", help="Stop after a line matching REGEX, e.g. "
              "'APP READY' (grabserial -q; bootlens's -q is --quiet).")
@click.option("-m", "--start", "--match", "start_pattern", metavar="REGEX", help="Restart the echoed times at each "
              "line matching REGEX; the recording keeps absolute times and notes each restart.")
@click.option("-i", "--instant", "--instantpat", "--inlinepat", "instants", multiple=True, metavar="REGEX",
              help="Report when REGEX is first seen, even mid-line such as a login prompt; repeatable.")
@click.option("-e", "--end", "--endtime", "end_s", type=click.FloatRange(0, min_open=True), metavar="SECONDS",
              help="Stop after this many seconds.")
@click.option("-q", "-Q", "--quiet", is_flag=True, help="Do not echo the console while capturing.")
@click.option("-t", "--time", "show_time", is_flag=True, help="Stamp echoed lines as grabserial -t does: "
              "[elapsed delta], seconds from the first byte (without -t: [seconds] from the start).")
@click.option("-T", "--systime", "show_systime", is_flag=True, help="Stamp echoed lines with the local time "
              "(grabserial -T: [HH:MM:SS.ffffff delta]; with -t: [time elapsed delta]).")
@click.option("-F", "--timeformat", default="%H:%M:%S.%f", show_default=True, metavar="FORMAT",
              help="strftime format of -T's time.")
@click.option("-n", "--nodelta", is_flag=True, help="No delta in -t/-T stamps.")
@click.option("-l", "--launchtime", is_flag=True, help="-t counts from the start, not from the first byte.")
@click.option("-a", "--again", is_flag=True, help="When -e has passed, the quit pattern was seen or the device "
              "went away (it is waited for), start over in a new recording; until Ctrl-C.")
@click.option("-R", "--rotate", metavar="PERIOD", help="A new recording every PERIOD seconds; with s, m or h "
              "(30m), on the clock's multiples of it.")
@click.option("-v", "--verbose", is_flag=True, help="Say the settings on standard error before starting.")
@click.option("-S", "--skip", is_flag=True, hidden=True)  # grabserial's "skip the device check": none is made
@click.option("-N", "--noinput", is_flag=True, hidden=True)  # grabserial's "do not send stdin": never sent
@click.option("--no-low-latency", "no_low_latency", is_flag=True, help="Do not ask the kernel to keep idle CPUs "
              "awake while capturing (a PM QoS request on /dev/cpu_dma_latency, as cyclictest makes; it "
              "cuts wake-up delays, and so timestamp errors, from milliseconds to about 0.1 ms).")
@click.option("--force", is_flag=True, help="Replace a recording already at -o (once the first byte arrives: "
              "a capture that receives nothing keeps the old one). Without it, a taken -o is refused.")
@click.option("--raw", is_flag=True, help="Echo the console's bytes as they come, terminal control sequences "
              "included (the device can then set the title, clear the screen...). Without it they are shown "
              "escaped (\\x1b[2J), colours excepted; the recording keeps every byte either way.")
@click.option("--reconnect", is_flag=True, help="When the port vanishes (a USB adapter losing power with the "
              "board), wait for it, reopen it and mark the gap in the recording.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- COMMAND...]")
def capture(output: str | None, port: str | None, baud: int, bytesize: str, parity: str, stopbits: str,
            rtscts: bool, xonxoff: bool, quit_pattern: str | None, start_pattern: str | None,
            instants: tuple[str, ...], end_s: float | None, quiet: bool, show_time: bool, show_systime: bool,
            timeformat: str, nodelta: bool, launchtime: bool, again: bool, rotate: str | None, verbose: bool,
            skip: bool, noinput: bool, no_low_latency: bool, force: bool, raw: bool, reconnect: bool,
            command: tuple[str, ...]) -> None:
    """Capture a console with host timestamps into a recording (docs/recording.md).

    Every read is written to the recording as it returns, so Ctrl-C, SIGTERM or even SIGKILL
    leave everything received. Reads a serial port (-d/--port), a command's output
    (`bootlens capture -o boot.rec -- qemu-system-aarch64 ...`: the command goes after --) or
    standard input. grabserial's options mean what they mean there (-d -b -e -m -i -t -T -F
    -n -l -a -R -Q -v), except -q, which is --quiet (grabserial's -q is --quitpat), and -o,
    which names the recording.
    """
    import re

    from ..capture.loop import Echo, Stamper, capture_files
    from ..capture.recording import RecordingExists
    from ..capture.sources import CommandSource, SerialSource, Source, stdin_source

    if port and command:
        _fail(UsageError("give a port (-d/--port) or a command after --, not both"))
    for opt, pat in [("--quit", quit_pattern), ("--start", start_pattern), *(("--instant", i) for i in instants)]:
        if pat is None:
            continue
        try:
            re.compile(pat)
        except re.error as e:
            _fail(UsageError(f"{opt} {pat!r}: bad regular expression: {e}"))
    try:
        rotate_s, rotate_round = _rotation(rotate) if rotate else (None, False)
        if (again or rotate) and not port:
            raise UsageError("-a/--again and -R/--rotate need a serial port (-d/--port)")
        if reconnect and not port:
            raise UsageError("--reconnect needs a serial port (-d/--port)")
        try:
            from datetime import datetime

            datetime.now().strftime(output or DEFAULT_OUTPUT)
        except ValueError as e:
            raise UsageError(f"-o {output!r}: {e}") from None
    except BootlensError as e:
        _fail(e)
    source: Source
    if port:
        source = SerialSource(port, baud, int(bytesize), parity, float(stopbits), rtscts, xonxoff)
    elif command:
        source = CommandSource(command)
    else:
        source = stdin_source()
    if verbose:
        click.echo(f"bootlens: reading {port or (command[0] if command else 'standard input')}"
                   + (f" at {baud} {bytesize}{parity}{stopbits} xonxoff={int(xonxoff)} rtscts={int(rtscts)}"
                      if port else "")
                   + (f"; ending after {end_s:g} s" if end_s else "")
                   + (f"; quitting at {quit_pattern!r}" if quit_pattern else "")
                   + (f"; times from each line matching {start_pattern!r}" if start_pattern else "")
                   + (f"; a new recording every {rotate}" if rotate else "")
                   + ("; starting over when done" if again else ""), err=True)

    def stamper() -> Stamper:
        return Stamper(show_time, show_systime, timeformat, not nodelta, launchtime)

    def report(result: Any) -> None:
        if result.reason == "output closed":
            _release_closed_outputs()  # Python's final flush of the echo must not fail
        for pat, t_ns in result.instants:
            click.echo(f"bootlens: {pat!r} " + ("not seen" if t_ns is None else f"first seen at {t_ns / 1e9:.6f} s"),
                       err=True)
        click.echo(f"bootlens: {result.bytes} bytes in {result.chunks} reads, {result.seconds:.3f} s "
                   f"({result.reason}) -> {result.path}"
                   + (" (nothing received: the recording there is kept as it was)" if result.kept_old else ""),
                   err=True)

    echo: Echo | None = None
    if not quiet:
        echo = sys.stdout if raw else HarmlessEcho(sys.stdout)

    try:
        capture_files(source, output or DEFAULT_OUTPUT, end_s=end_s, again=again, rotate_s=rotate_s,
                      rotate_round=rotate_round, stamper=stamper, on_result=report, quit_pattern=quit_pattern,
                      echo=echo, reconnect=reconnect, start_pattern=start_pattern,
                      instant_patterns=instants, low_latency=not no_low_latency, force=force)
    except RecordingExists as e:
        _fail(e if e.busy else UsageError(f"{printable(e.path)}: exists; give another -o, or --force to replace it"))
    except BootlensError as e:
        _fail(e)
    except KeyboardInterrupt:  # Ctrl-C while -a waits for the device to come back
        sys.exit(130)
