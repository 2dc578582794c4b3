"""Tim Bird's boot-data files, written by ``grab-boot-data.sh`` (github.com/tbird20d/
boot-time-wizard; elinux.org "Boot-time data"): a machine's facts and its boot in one text file.

The file is a run of sections, each headed by a line ``== NAME ==`` (the first line is
``=== Machine Info ====...``): UPTIME, GRAB-BOOT-DATA INFO (``GBD_VERSION="1.5"``), Kernel Info
(``KERNEL_VERSION="..."``, ``KERNEL_CMDLINE="..."``), OS, MEMORY, DISK USAGE, MOUNTS, PROCESSES,
CORES (/proc/cpuinfo), CONFIG (the kernel's .config), SYSTEMD INFO (from version 1.4:
``systemd-analyze`` time, a line ``-----``, then ``systemd-analyze blame``) and KERNEL MESSAGES
(``dmesg``, normally booted with ``quiet initcall_debug``).

:func:`read_bootdata` reads it whole: the kernel log (to be analysed as a boot by the normal
pipeline, :meth:`BootData.kernel_lines`), the systemd part (read with
:mod:`bootlens.sources.systemd_analyze.reader`), the kernel config as name -> value (``n`` for
"# CONFIG_X is not set", as boot_data_parser.py does) for the advisor, and the facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...read.reader import frame_bytes
from ...core.lines import Lines
from ...core.model import Fact, InputStats
# the sniff lives apart: sniffing a log must not import this reader (start-up)
from . import sniff_bootdata as sniff_bootdata
from ..systemd_analyze.reader import Blame, StartupTimes, read_blame, read_time

_SECTION = re.compile(r"^==+ (.*?) ==+\s*$")
_CONFIG = re.compile(r"^(CONFIG_\w+)=(.*)$")
_NOT_SET = re.compile(r"^# (CONFIG_\w+) is not set$")
# "KEY=value" lines of the sections that hold them, and the fact each becomes
_KEYS = {"KERNEL_VERSION": "kernel_version", "KERNEL_CMDLINE": "cmdline", "GBD_VERSION": "gbd_version",
         "GBD_ARGS": "gbd_args", "GBD_TIMESTAMP": "gbd_timestamp", "GBD_LAB": "lab", "GBD_MACHINE": "machine"}


@dataclass(frozen=True, slots=True)
class Section:
    """One ``== NAME ==`` block: its name, the file line of its first content line, its text."""

    name: str
    line_no: int
    text: str


@dataclass(frozen=True, slots=True)
class BootData:
    """A boot-data file, read."""

    source: str
    sections: tuple[Section, ...]
    facts: tuple[Fact, ...]  # kernel_version, cmdline, gbd_version, lab, machine, cpu_count, ...
    config: tuple[tuple[str, str], ...]  # ("CONFIG_PRINTK_TIME", "y"), in file order
    startup: StartupTimes | None  # SYSTEMD INFO's systemd-analyze time, when the file has one
    blame: Blame | None
    warnings: tuple[str, ...] = ()

    def section(self, name: str) -> Section | None:
        """The first section of this name (case-insensitive: versions differ, "Kernel Info")."""
        for s in self.sections:
            if s.name.lower() == name.lower():
                return s
        return None

    def fact(self, key: str) -> str | None:
        """A fact's value, or None."""
        for f in self.facts:
            if f.key == key:
                return f.value
        return None

    def config_value(self, name: str) -> str | None:
        """``CONFIG_X``'s value ("y", "m", "n", a number or a quoted string), None if absent."""
        for k, v in self.config:
            if k == name:
                return v
        return None

    @property
    def kernel_log(self) -> str:
        """The KERNEL MESSAGES section (the dmesg), "" when the file has none."""
        s = self.section("KERNEL MESSAGES")
        return s.text if s else ""

    def kernel_lines(self) -> tuple[Lines, InputStats, int]:
        """The kernel log framed as any log is, and the file line number of its first line (add
        it minus 1 to a line number to point back into the boot-data file)."""
        s = self.section("KERNEL MESSAGES")
        data = (s.text if s else "").encode()
        lines, stats = frame_bytes(f"{self.source}:KERNEL MESSAGES", data)
        return lines, stats, s.line_no if s else 0


def read_bootdata(text: str, source: str = "boot-data") -> BootData:
    """Read a boot-data file's text; never raises."""
    sections: list[Section] = []
    name: str | None = None
    start = 0
    body: list[str] = []
    preamble = 0  # lines before the first section that are not blank
    for no, line in enumerate(text.splitlines(), 1):
        m = _SECTION.match(line)
        if m and (line.startswith("== ") or line.startswith("=== ")):
            if name is not None:
                sections.append(Section(name, start, "\n".join(body).strip("\n") + "\n" if body else ""))
            name, start, body = m.group(1).strip(), no + 1, []
            continue
        if name is None:
            preamble += bool(line.strip())
        else:
            body.append(line)
    if name is not None:
        sections.append(Section(name, start, "\n".join(body).strip("\n") + "\n" if body else ""))
    notes: list[str] = []
    if not sections:
        notes.append("no '== SECTION ==' lines: not a boot-data file")
    if preamble:
        notes.append(f"{preamble} line{'s' if preamble != 1 else ''} before the first section ignored")
    facts: list[Fact] = []
    config: list[tuple[str, str]] = []
    startup = blame = None
    for s in sections:
        key = s.name.upper()
        if key in ("KERNEL INFO", "GRAB-BOOT-DATA INFO"):
            facts.extend(_key_values(s))
        elif key == "CONFIG":
            config, bad = config_lines(s.text)
            if bad:
                notes.append(f"CONFIG: {bad} line{'s' if bad != 1 else ''} not understood")
        elif key == "CORES":
            cpus = sum(1 for ln in s.text.splitlines() if ln.startswith("processor"))
            facts.append(Fact("cpu_count", str(cpus), s.line_no))
        elif key == "SYSTEMD INFO":
            startup, blame, why = _systemd(s.text)
            if why:
                notes.append(f"SYSTEMD INFO: {why}")
    if sections and not any(s.name.upper() == "KERNEL MESSAGES" for s in sections):
        notes.append("no KERNEL MESSAGES section")
    return BootData(source, tuple(sections), tuple(facts), tuple(config), startup, blame, tuple(notes))


def _key_values(s: Section) -> list[Fact]:
    out = []
    for i, line in enumerate(s.text.splitlines()):
        key, sep, value = line.partition("=")
        if sep and key.strip() in _KEYS:
            out.append(Fact(_KEYS[key.strip()], value.strip().strip('"'), s.line_no + i))
    return out


def config_lines(text: str) -> tuple[list[tuple[str, str]], int]:
    """A kernel .config as (``CONFIG_X``, value) in file order, ``# CONFIG_X is not set`` as "n",
    and how many lines were neither (bootlens.kbuild reads the kernels it builds with it too)."""
    out: list[tuple[str, str]] = []
    bad = 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if (m := _CONFIG.match(line)) is not None:
            out.append((m.group(1), m.group(2)))
        elif (m := _NOT_SET.match(line)) is not None:
            out.append((m.group(1), "n"))
        elif not line.startswith("#") and "Can't find kernel config" not in line:
            bad += 1
    return out, bad


def _systemd(text: str) -> tuple[StartupTimes | None, Blame | None, str]:
    """SYSTEMD INFO: ``systemd-analyze``, ``-----``, ``systemd-analyze blame``; or a NOTE that it
    is absent, or the error systemd-analyze printed (no systemd as PID 1)."""
    if "NOTE: systemd-analyze is not present" in text:
        return None, None, "systemd-analyze is not present on the target"
    time_part, sep, blame_part = text.partition("\n-----\n")
    startup = read_time(time_part)
    blame = read_blame(blame_part) if sep else None
    if not startup.line_no:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        return None, blame if blame and blame.rows else None, f"no 'Startup finished' line ({first[:80]!r})"
    return startup, blame, ""
