"""The colours and marks of the timeline, once for every renderer.

The HTML report (its CSS custom properties, the canvas, the legend) and the SVG boot graph read
their colours from here, so a stage or an event kind has the same colour in both and the two
legends cannot drift apart. Colours are Tableau's 10/20 palettes (tell-apart hues, readable on
white) and a few shades of them; each comes with the ink (white or dark) that reads on it.

A :class:`Swatch` is one entry of a legend: a key (what the renderers ask for), the colours it
draws with and the shape it is drawn as:

- ``bar``: a filled bar; ``pair``: bars of one row alternate between two shades, so that
  neighbours stay apart; ``split``: a process, forked (first colour) then exec'd (second);
- ``diamond``: an event without a duration; ``line`` / ``dash``: a vertical line across the
  timeline (markers solid, milestones dashed).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Swatch:
    """One legend entry: what it stands for, its colours and how it is drawn."""

    key: str
    label: str
    colours: tuple[str, ...]
    shape: str = "bar"

    @property
    def colour(self) -> str:
        """The first (main) colour."""
        return self.colours[0]


# Neutral colours of the page and graph (not in the legend: they carry no meaning).
TEXT = "#1d2430"
MUTED = "#68707d"
SURFACE = "#ffffff"
ROW_ALT = "#fafbfc"  # every other timeline row
GRID = "#eef0f3"
LINE = "#e3e6ea"

# Stages: the top-level ones follow each other; kernel init's parts are shades of its blue.
STAGES: tuple[Swatch, ...] = (
    Swatch("stage-firmware", "firmware / ROM", ("#9d7660",)),
    Swatch("stage-tpl", "TPL", ("#d7b5a6",)),
    Swatch("stage-vpl", "VPL", ("#d9aeb8",)),
    Swatch("stage-spl", "SPL", ("#d4a6c8",)),
    Swatch("stage-bootloader", "bootloader", ("#b07aa1",)),
    Swatch("stage-from_reset", "power-on to a later point (not split)", ("#79706e",)),
    Swatch("stage-kernel_load", "kernel load", ("#e15759",)),
    Swatch("stage-pre_kernel", "before the kernel (no output to split it)", ("#bab0ac",)),
    Swatch("stage-kernel_init", "kernel init", ("#4e79a7",)),
    Swatch("stage-kernel_early", "early init", ("#86a9d1",)),
    Swatch("stage-initcalls", "initcalls", ("#2c5a8c",)),
    Swatch("stage-kernel_late", "root mount", ("#a0cbe8",)),
    Swatch("stage-userspace", "user space", ("#59a14f",)),
    Swatch("stage-initramfs", "initramfs", ("#b5d99c",)),
    Swatch("stage-init_start", "init's start, no initramfs", ("#c7e3b8",)),
    Swatch("stage-systemd", "systemd start-up", ("#3d7a36",)),
    Swatch("stage-application", "application, after Startup finished", ("#8cd17d",)),
)
STAGE_FALLBACK = "#9e9e9e"

EVENTS: tuple[Swatch, ...] = (
    Swatch("bootloader", "bootloader step", ("#d37295",)),
    Swatch("bootstage", "bootstage report", ("#fabfd2",)),
    Swatch("initcall", "initcall (pid 1)", ("#4e79a7", "#7396c2"), "pair"),
    Swatch("initcall_async", "initcall (other pid)", ("#499894", "#6db3ae"), "pair"),
    Swatch("fixup", "PCI fixup", ("#b6992d",)),
    Swatch("probe", "device probe", ("#f28e2b",)),
    Swatch("process", "process: fork → exec → exit", ("#8cd17d", "#59a14f"), "split"),
    Swatch("kthread", "kernel thread", ("#8c8c8c",)),
    Swatch("unit", "systemd unit: activating → active", ("#9c755f", "#bb9a86"), "pair"),
    Swatch("unit_failed", "systemd unit that failed or timed out", ("#c0392b",)),
)
# events without a duration: the report draws a diamond, the boot graph a pale bar to the end
INSTANT = Swatch("instant", "instant, or never ended", (MUTED,), "diamond")
OPEN = Swatch("open", "never ended (drawn to the end)", (MUTED,), "open")

MARKS: tuple[Swatch, ...] = (
    Swatch("ready", "ready marker", ("#c0392b",), "line"),
    Swatch("marker", "marker", ("#e07b6e",), "line"),
    Swatch("milestone", "milestone", ("#8a929e",), "dash"),
)

# What only the interactive report draws.
STATES: tuple[Swatch, ...] = (
    Swatch("selected", "selected", ("#f1ce63",)),
    Swatch("dimmed", "no match", ("#d9dde3",)),
    Swatch("critical", "on the critical chain to ready", ("#ff7f0e",)),
)

ALL: tuple[Swatch, ...] = (*STAGES, *EVENTS, INSTANT, OPEN, *MARKS, *STATES)
BY_KEY: dict[str, Swatch] = {s.key: s for s in ALL}
# the legends: the report's (interactive) and the boot graph's
HTML_GROUPS: tuple[tuple[str, tuple[Swatch, ...]], ...] = (
    ("stages", STAGES), ("events", (*EVENTS, INSTANT)), ("lines", MARKS), ("search", STATES))
SVG_GROUPS: tuple[tuple[str, tuple[Swatch, ...]], ...] = (
    ("stages", STAGES), ("events", (*EVENTS, OPEN)), ("lines", MARKS))


def colour(key: str) -> str:
    """The main colour of a palette key (``stage-NAME`` for a stage)."""
    s = BY_KEY.get(key)
    return s.colour if s is not None else STAGE_FALLBACK


def stage_colour(name: str) -> str:
    """The colour of a stage by its name (a grey for a stage the palette does not know)."""
    return colour("stage-" + name)


def ink(fill: str) -> str:
    """The text colour that reads on ``fill`` (``#rrggbb``): white on dark colours."""
    r, g, b = (int(fill[i:i + 2], 16) for i in (1, 3, 5))
    return SURFACE if 0.299 * r + 0.587 * g + 0.114 * b < 150 else TEXT


def css_variables() -> str:
    """The palette as CSS custom properties: ``--pal-KEY`` (``--pal-KEY-2`` for a second colour),
    ``--ink-KEY`` (``--ink-KEY-2``) for text on it, and the neutral colours."""
    out = [f"--pal-text:{TEXT}", f"--pal-muted:{MUTED}", f"--pal-surface:{SURFACE}", f"--pal-row-alt:{ROW_ALT}",
           f"--pal-grid:{GRID}", f"--pal-line:{LINE}", f"--pal-fallback:{STAGE_FALLBACK}"]
    for s in ALL:
        out.append(f"--pal-{s.key}:{s.colour}")
        out.append(f"--ink-{s.key}:{ink(s.colour)}")
        if len(s.colours) > 1:
            out.append(f"--pal-{s.key}-2:{s.colours[1]}")
            out.append(f"--ink-{s.key}-2:{ink(s.colours[1])}")
    return ":root{" + ";".join(out) + "}"


def legend_items(present: Iterable[str], groups: Sequence[tuple[str, tuple[Swatch, ...]]]
                 ) -> list[tuple[str, list[Swatch]]]:
    """The legend's groups, each with the swatches among ``present`` keys, in palette order;
    groups left empty are dropped."""
    keys = set(present)
    out = [(title, [s for s in items if s.key in keys]) for title, items in groups]
    return [(t, items) for t, items in out if items]
