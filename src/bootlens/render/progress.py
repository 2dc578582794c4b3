"""A progress bar over boots, for run, experiment and optimize."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.progress import Progress


def boot_bar(console: Console, name: str, total: int | None = None
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


