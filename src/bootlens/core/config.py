"""``bootlens.toml``: a project's defaults for command-line options, so that a board's port,
baud rate, power-cycle command and ready pattern are written once.

The file is looked for in the working directory, then in each parent, stopping after the first
folder that holds ``.git`` (the top of a repository: a checkout never picks up a file from
outside it) or at the filesystem root; ``BOOTLENS_CONFIG`` or ``bootlens --config FILE`` name one
explicitly. Keys are long option names without their dashes (``power-cycle``; ``power_cycle``
is the same key). Keys before any table are shared: every command that has the option takes
them. A table per command (``[run]``, ``[capture]``, ``[target.setup]``) holds that command's
own, which win over the shared ones; options on the command line win over both. Which keys
exist is the command line's business (:mod:`bootlens.cli`); this module finds and reads.
"""

from __future__ import annotations

import os

from .errors import BootlensError, printable
from .model import NamedTuple  # typing's class syntax without its annotation checks (start-up)

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import Any

    from pathlib import Path

CONFIG_NAME = "bootlens.toml"
REPO_MARKERS = (".git", ".hg")  # a folder holding one of these is the top of a project


class ConfigError(BootlensError):
    """A configuration file that cannot be used: bad TOML, an unknown key, a bad value."""

    exit_code = 2

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{printable(str(path))}: {reason}")
        self.path = path
        self.reason = reason


# a NamedTuple, not a frozen dataclass, and the search on os.path, not pathlib: every command
# looks for the file at start-up, and most find none (dataclasses and pathlib with urllib.parse
# and ipaddress were ~5 ms of a small ``bootlens analyze``); model's NamedTuple, as typing's
# would build the process's first ForwardRef (~2 ms: the only one on analyze's path)
class Config(NamedTuple):
    """A read ``bootlens.toml``: the shared keys and each command's table (a subcommand's
    under its dotted name, ``target.setup``); keys normalised to the options' spelling."""

    path: Path
    shared: dict[str, Any]
    commands: dict[str, dict[str, Any]]


def find_config(start: str | os.PathLike[str]) -> Path | None:
    """``bootlens.toml`` in ``start`` or its nearest parent; the search stops after a folder
    holding ``.git`` or ``.hg`` (a repository's top), or at the filesystem root."""
    d = os.path.realpath(start)
    while True:
        f = os.path.join(d, CONFIG_NAME)
        if os.path.isfile(f):
            from pathlib import Path  # only once a file is found (start-up)

            return Path(f)
        parent = os.path.dirname(d)
        if any(os.path.exists(os.path.join(d, m)) for m in REPO_MARKERS) or parent == d:
            return None
        d = parent


def key_name(key: str) -> str:
    """A key as the option is spelt (``power_cycle`` and ``power-cycle`` are one key)."""
    return key.replace("_", "-")


def read_config(path: Path) -> Config:
    """Read and shape-check a configuration file; one-line errors naming the file and key."""
    import tomllib  # here, not at the top: most runs find no bootlens.toml, and tomllib costs start-up

    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise ConfigError(path, f"cannot read: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(path, f"not valid TOML: {e}") from None
    shared: dict[str, Any] = {}
    commands: dict[str, dict[str, Any]] = {}

    def table(name: str, t: dict[str, Any]) -> None:
        mine: dict[str, Any] = {}
        for k, v in t.items():
            if isinstance(v, dict):  # [target.setup]: a subcommand's table
                table(f"{name}.{k}", v)
            else:
                _put(path, mine, k, v, f"[{name}] ")
        if mine or not any(isinstance(v, dict) for v in t.values()):  # [target] holding only [target.setup]: none
            commands[name] = mine

    for k, v in doc.items():
        if isinstance(v, dict):
            table(k, v)
        else:
            _put(path, shared, k, v, "")
    return Config(path, shared, commands)


def _put(path: Path, into: dict[str, Any], key: str, value: Any, where: str) -> None:
    name = key_name(key)
    if name in into:
        raise ConfigError(path, f"{where}{key}: given twice ({name} and {key} are the same option)")
    into[name] = value
