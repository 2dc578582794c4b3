"""A progress bar over boots, for run, experiment and optimize.

It goes to standard error, so that standard output holds the result alone (``bootlens run ... >
result.txt`` shows the bar and keeps it out of the file), and it fits 80 columns: the target,
a short bar, boots done, the configuration booting (experiment, optimize), time left, time spent.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.progress import Progress

from .fit import mid_clip


def _left(seconds: float) -> str:
    if seconds <= 0:
        return "all done"
    if seconds >= 90:
        return f"about {seconds / 60:.0f} min left"
    return f"about {seconds:.0f} s left"


def boot_bar(console: Console, name: str, total: int | None = None
             ) -> tuple[Progress, Callable[[int, int, str, float], None]]:
    """A progress bar over boots on standard error: done, what is booting (empty for plain
    repeats) and time left; one line per boot instead when standard error is not a terminal.
    ``console`` is the command's own (standard output, or standard error with --json); the bar
    keeps off it and writes through a console of its own on standard error."""
    import time as _time

    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    err = Console(stderr=True, highlight=False)
    started = _time.monotonic()
    bar = Progress(TextColumn("{task.description}"), BarColumn(bar_width=16), MofNCompleteColumn(),
                   TextColumn("boots{task.fields[what]} ·"), TextColumn("{task.fields[left]} ·"), TimeElapsedColumn(),
                   console=err, disable=not err.is_terminal)
    task = bar.add_task(mid_clip(name, 16), total=total, what="", left="no estimate yet")

    def progress(done: int, total: int, what: str, seconds: float) -> None:
        left = (_time.monotonic() - started) / done * (total - done)
        shown = f" · {mid_clip(what, 16)}" if what else ""
        bar.update(task, completed=done, total=total, what=shown, left=_left(left))
        if not err.is_terminal:
            err.print(f"boot {done}/{total}{f' ({what})' if what else ''} done in {seconds:.1f} s; {_left(left)}",
                      soft_wrap=True)

    return bar, progress
