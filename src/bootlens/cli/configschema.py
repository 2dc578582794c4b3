"""``bootlens.toml`` checked against the commands' options: the schema of the file is the click
declarations themselves (each key is an option's long name, its type and range the option's
``type``), so no second list of keys or types exists to fall out of step with the options.

A value the option would refuse is a one-line error naming the file, the table and the key, what
was expected and what was given (``[run] repeat: expected a whole number from 1 to 1000 or
'auto', got a date (1979-05-27)``), whichever command runs: the file is wrong for every one. A
key no command has is not an error: one warning line lists them all (a file written for a newer
bootlens, or a typo, with the nearest key).
"""

from __future__ import annotations

import datetime
from difflib import get_close_matches
from typing import Any

import click

from ..core.config import Config, ConfigError


def given(v: Any) -> str:
    """A TOML value as a message names it: ``a date (1979-05-27)``, ``text ('ten')``, ``-3``."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):  # before date: a datetime is a date too
        return f"a date and time ({v.isoformat()})"
    if isinstance(v, datetime.date):
        return f"a date ({v.isoformat()})"
    if isinstance(v, datetime.time):
        return f"a time ({v.isoformat()})"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return f"text ({v!r})"
    if isinstance(v, list):
        return f"a list of {len(v)}" if v else "an empty list"
    if isinstance(v, dict):
        return "a table"
    return type(v).__name__


def _num(x: float) -> str:
    """A bound as written: 20000000, 0.5 (not 2e+07)."""
    return str(int(x)) if x == int(x) else repr(x)


def _bounds(t: click.IntRange | click.FloatRange) -> str:
    lo = f"{'>' if t.min_open else '>='} {_num(t.min)}" if t.min is not None else ""
    hi = f"{'<' if t.max_open else '<='} {_num(t.max)}" if t.max is not None else ""
    if t.min is not None and t.max is not None and not (t.min_open or t.max_open):
        return f" from {_num(t.min)} to {_num(t.max)}"
    return " " + " and ".join(x for x in (lo, hi) if x) if lo or hi else ""


def expected(p: click.Option) -> str:
    """What an option takes, in words: ``a whole number from 1 to 10000``, ``true or false``.
    A type of bootlens's own says it in its ``expected`` attribute."""
    if p.is_flag:
        return "true or false"
    t = p.type
    own = getattr(t, "expected", None)
    if isinstance(own, str):
        what = own
    elif isinstance(t, click.IntRange):
        what = "a whole number" + _bounds(t)
    elif isinstance(t, click.FloatRange):
        what = "a number" + _bounds(t)
    elif isinstance(t, click.types.IntParamType):
        what = "a whole number"
    elif isinstance(t, click.types.FloatParamType):
        what = "a number"
    elif isinstance(t, click.Choice):
        what = "one of " + ", ".join(map(str, t.choices))
    elif isinstance(t, click.Path):
        what = "a path"
    else:
        what = "text"
    return f"{what}, or a list of them" if p.multiple else what


def _plain(v: Any) -> bool:
    """A value an option can take at all: text, a number or a boolean (not a date, a list, a
    table, nor TOML's nan, which every range check lets through: it compares false)."""
    return isinstance(v, (str, int, float)) and not isinstance(v, (datetime.date, datetime.time)) and v == v


def checked(path: Any, where: str, p: click.Option, cmd: click.Command, value: Any) -> Any:
    """``value`` as the option would take it from the command line, or a ConfigError naming
    ``where`` (``[run] repeat``), what the option expects and what was given."""

    def wrong(v: Any) -> ConfigError:
        return ConfigError(path, f"{where}: expected {expected(p)}, got {given(v)}")

    if isinstance(value, list) and not p.multiple:
        raise wrong(value)
    items = value if isinstance(value, list) else [value]
    for x in items:
        if not _plain(x) or (isinstance(x, bool) != p.is_flag):  # true for a number, 1 for a flag
            raise wrong(x)
    if not p.is_flag:  # as typed on a command line: a TOML number for a choice of "8", "1.5"
        items = [str(x) if isinstance(x, (int, float)) else x for x in items]
    for raw, x in zip(value if isinstance(value, list) else [value], items):
        try:
            p.type_cast_value(click.Context(cmd), [x] if p.multiple else x)
        except click.BadParameter:
            raise wrong(raw) from None
    return items if p.multiple else items[0]


def _commands(root: click.Group) -> dict[str, click.Command]:
    """Every command under ``root`` by its dotted name (``target.setup``)."""
    out: dict[str, click.Command] = {}

    def walk(g: click.Group, prefix: str) -> None:
        for n, c in g.commands.items():
            if isinstance(c, click.Group):
                walk(c, f"{prefix}{n}.")
            else:
                out[f"{prefix}{n}"] = c

    walk(root, "")
    return out


def options(c: click.Command) -> dict[str, click.Option]:
    """A command's options by every long name: its keys in bootlens.toml."""
    return {o.lstrip("-"): p for p in c.params if isinstance(p, click.Option) for o in p.opts if o[:2] == "--"}


def _near(name: str, among: Any, fmt: str = "{}") -> str:
    near = get_close_matches(name, sorted(among), 1)
    return f" (did you mean {fmt.format(near[0])}?)" if near else ""


def config_default_map(root: click.Group, cfg: Config) -> tuple[dict[str, Any], list[str]]:
    """click's ``default_map`` for every command from a read ``bootlens.toml``, and the keys no
    command has (each as the warning names it, with the nearest key); a value an option would
    refuse is a :class:`ConfigError`."""
    commands = _commands(root)
    everywhere: dict[str, click.Option] = {}  # every key, as the first command that has it declares it
    for c in commands.values():
        for k, o in options(c).items():
            everywhere.setdefault(k, o)
    unknown: list[str] = []
    for name, table in cfg.commands.items():
        if name in commands:
            continue
        # a table that is a key's value (top = {a = 1}, or [analyze] top = {...}): a wrong value
        parent, _, key = name.rpartition(".")
        p = options(commands[parent]).get(key) if parent in commands else None if parent else everywhere.get(key)
        if p is not None:
            raise ConfigError(cfg.path, f"{f'[{parent}] ' if parent else ''}{key}: expected {expected(p)}, "
                              f"got {given(table)}")
        unknown.append(f"[{name}]" + _near(name, commands, "[{}]"))
    for key in cfg.shared:
        if key not in everywhere:
            unknown.append(key + _near(key, everywhere))
    out: dict[str, Any] = {}
    for name, cmd in commands.items():
        opts = options(cmd)
        values: dict[str, Any] = {}
        own = cfg.commands.get(name, {})
        for key in own:
            if key not in opts:
                unknown.append(f"[{name}] {key}" + _near(key, opts))
        for where, src in (("", cfg.shared), (f"[{name}] ", own)):
            for key, v in src.items():
                if key in opts:
                    values[opts[key].name or key] = checked(cfg.path, f"{where}{key}", opts[key], cmd, v)
        # the shared ready pattern is the ready marker of the commands that take --marker
        ready = cfg.shared.get("ready")
        if ready is not None and "marker" in opts and "ready" not in opts and "marker" not in own:
            key = opts["marker"].name or "marker"
            markers = list(values.get(key, ()))
            if not any(str(m).startswith("ready=") for m in markers):
                values[key] = checked(cfg.path, "ready", opts["marker"], cmd, [*markers, f"ready={ready}"])
        if values:
            node = out
            *groups, leaf = name.split(".")
            for g in groups:
                node = node.setdefault(g, {})
            node[leaf] = values
    return out, unknown
