"""Start-up stays lean: what ``bootlens`` imports before it does anything (issue 14, part 4).

No timing here (bench/bench_anchors.py measures it): these tests fail when a command's module,
a heavy dependency or importlib.metadata comes back onto the path of ``import bootlens.cli``,
``bootlens --help`` or ``bootlens analyze LOG --json``; and they keep the two things start-up
now takes as constants honest: the version string and the table of commands with their help.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import click
import pytest

import bootlens
from bootlens.core import plugins
from bootlens.cli import COMMANDS, load_all, main
from bootlens.core.lazyre import LazyPattern
from conftest import WILD, need_shared, needs_wild

ROOT = Path(__file__).resolve().parent.parent
ENV = {k: v for k, v in os.environ.items() if k not in ("BOOTLENS_CONFIG", "PYTHONPROFILEIMPORTTIME")}

# never on the start-up path of any command (each belongs to a command or an option that needs it)
HEAVY = ("sqlalchemy", "psycopg", "labgrid", "playwright", "scipy", "numpy", "rich", "serial", "pexpect",
         "importlib.metadata", "email", "tomllib", "zipfile", "csv",
         "bootlens.history", "bootlens.render.html", "bootlens.render.html_data", "bootlens.render.html_columns",
         "bootlens.render.svg", "bootlens.render.perfetto",
         "bootlens.stats.figures", "bootlens.stats.compare", "bootlens.advise", "bootlens.lab", "bootlens.targets.qemu",
         "bootlens.capture.loop", "bootlens.capture.sources", "bootlens.timeline.chain")
CLI_MODULES = tuple(f"bootlens.cli.{m}" for m in ("analysis", "boot", "capturecmd", "check", "history", "labgridcmd"))
# what `analyze LOG` of a plain console log never needs: the readers of the inputs a log is sniffed
# against (each sniff lives in its format's light sources/<format>/__init__.py), the renderers of sections the
# log has not got, and stdlib modules only a rarer path uses (a .dat, a tar, writing a recording)
NOT_FOR_A_LOG = ("bootlens.sources.systemd_analyze.reader", "bootlens.sources.ftrace.reader", "bootlens.sources.bootchart.reader",
                 "bootlens.sources.bootdata.reader", "bootlens.sources.logic.reader", "bootlens.sources.strace.reader",
                 "bootlens.sources.strace.summary", "bootlens.sources.logic.align", "bootlens.sources.ftrace.kft", "bootlens.timeline.chain",
                 "bootlens.render.side.ftrace", "bootlens.render.side.strace", "bootlens.render.side.logic", "bootlens.render.side.systemd_analyze", "bootlens.render.chain_text",
                 "bootlens.render.html", "bootlens.render.html_data", "bootlens.render.html_columns", "bootlens.render.svg",
                 "bootlens.sources.supplements", "bootlens.capture.recording", "bootlens.targets.tracerun",
                 "tarfile", "subprocess", "tempfile", "shutil", "ctypes", "statistics", "decimal", "fractions",
                 # the history commands (analyze takes only --db/--label, from cli.storeopts) and, with
                 # --no-config, the bootlens.toml reader
                 "bootlens.cli.history", "bootlens.core.config")


def imported(code: str, *args: str) -> set[str]:
    """The modules a fresh interpreter has imported after running ``code`` (which may exit)."""
    wrapper = ("import atexit, os, sys\n"
               "def _dump():\n"
               "    with open(os.environ['BL_MODULES'], 'w') as f: f.write('\\n'.join(sorted(sys.modules)))\n"
               "atexit.register(_dump)\n"
               "_exit = os._exit\n"
               "os._exit = lambda code: (_dump(), _exit(code))\n"  # bootlens ends big analyses with os._exit
               + code)
    fd, name = tempfile.mkstemp(prefix="bootlens-modules-", suffix=".txt")
    os.close(fd)
    out = Path(name)
    env = {**ENV, "BL_MODULES": str(out)}
    p = subprocess.run([sys.executable, "-c", wrapper, *args], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    mods = set(out.read_text().split())
    out.unlink()
    return mods


def heavy_in(mods: set[str], also: tuple[str, ...] = ()) -> list[str]:
    """The heavy modules among ``mods`` that a bare interpreter does not import already (a .pth
    file of the environment may import zipfile or email: not bootlens's doing)."""
    return sorted(m for m in mods - bare() if any(m == h or m.startswith(h + ".") for h in HEAVY + also))


@functools.cache
def bare() -> frozenset[str]:
    return frozenset(imported("pass"))


def test_version_is_the_distributions() -> None:
    """The constant (no importlib.metadata at start-up) is pyproject's version and the installed one."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert bootlens.__version__ == project == version("bootlens")


def test_command_table_is_what_the_modules_register() -> None:
    """--help lists COMMANDS without importing the modules: the table must name every command,
    its module and its short help exactly as click derives them from the docstrings."""
    load_all()
    assert isinstance(main.commands, dict)
    registered: dict[str, click.Command] = dict(dict.items(main.commands))
    assert sorted(registered) == sorted(COMMANDS)
    for name, cmd in registered.items():
        module, short = COMMANDS[name]
        assert cmd.callback is not None and cmd.callback.__module__ == f"bootlens.cli.{module}", name
        assert cmd.get_short_help_str(10_000) == short, name


def test_import_cli_loads_no_command() -> None:
    mods = imported("import bootlens.cli")
    assert heavy_in(mods, CLI_MODULES + ("click",)) == []  # the group (and click) on first use of cli.main
    mods = imported("import bootlens.cli\nbootlens.cli.main")
    assert heavy_in(mods, CLI_MODULES) == []
    assert "click" in mods and "bootlens.cli.group" in mods  # the check sees what was imported


def test_help_imports_no_command_module() -> None:
    mods = imported("from bootlens.cli import main\n"
                    "try:\n    main(['--help'], prog_name='bootlens')\nexcept SystemExit:\n    pass\n")
    assert heavy_in(mods, CLI_MODULES) == []


LOG = ("[    0.000000] Linux version 6.1.0 (x@y) #1 SMP\n"
       "[    0.100000] calling  foo_init+0x0/0x10 @ 1\n"
       "[    0.100500] initcall foo_init+0x0/0x10 returned 0 after 500 usecs\n"
       "[    0.200000] Run /init as init process\n")
ANALYZE = ("import sys\nfrom bootlens.cli import main\n"
           "try:\n    main(sys.argv[1:], prog_name='bootlens')\nexcept SystemExit:\n    pass\n")


def test_analyze_json_imports_only_its_own(tmp_path: Path) -> None:
    log = tmp_path / "boot.log"
    log.write_text(LOG)
    mods = imported(ANALYZE, "--no-config", "analyze", str(log), "--json")
    assert "bootlens.cli.analysis" in mods and "bootlens.timeline.analyze" in mods  # it did run
    assert "bootlens.render.jsonout" in mods and "bootlens.sources.kinds" in mods  # sniffed, written
    assert heavy_in(mods, ("bootlens.cli.boot", "bootlens.cli.capturecmd", "bootlens.cli.check", "rich",
                           "bootlens.render.terminal", "orjson") + NOT_FOR_A_LOG) == []


@needs_wild
@pytest.mark.parametrize("name", ["01-zynq7020-petalinux-uboot2022.log", "07-rk3566-rg353v-dmesg-6.6.log"])
def test_analyze_terminal_of_a_real_log_imports_no_reader_of_another_format(name: str) -> None:
    """A real console log (U-Boot and kernel; a dmesg) through the terminal renderer: sniffed
    against every supplement format without importing their readers."""
    log = need_shared(WILD / name)
    mods = imported(ANALYZE, "--no-config", "analyze", str(log))
    assert "bootlens.render.terminal" in mods and "rich.table" in mods  # it did render
    assert {"bootlens.sources.ftrace", "bootlens.sources.strace"} <= mods  # and did sniff
    # rich is the terminal's (and rich.table imports fractions and decimal): not HEAVY here
    unwanted = ("bootlens.cli.boot", "bootlens.cli.capturecmd", "bootlens.render.jsonout") + tuple(
        m for m in NOT_FOR_A_LOG if m not in ("decimal", "fractions"))
    assert sorted(m for m in mods - bare() if any(m == u or m.startswith(u + ".") for u in unwanted)) == []


def golden_and_wild_files() -> list[Path]:
    """Every golden input and wild log: the formats the sniffs must keep telling apart."""
    files = [p for p in sorted((ROOT / "tests" / "golden").rglob("*")) if p.is_file() and p.suffix != ".json"
             and p.name != "README.md"]
    return files + sorted(WILD.glob("*.log"))


def test_strace_precheck_answers_as_the_readers_sniff() -> None:
    """strace_sniff.sniff_strace says no without the reader only where the reader's sniff says no."""
    from bootlens.sources.strace.reader import sniff
    from bootlens.sources.strace import sniff_strace

    files = golden_and_wild_files()
    heads = [p.read_bytes()[:8192].decode("utf-8", "replace") for p in files]
    said = [sniff(h) for h in heads]
    assert sum(said) >= 10  # the strace goldens are among them
    assert [sniff_strace(h) for h in heads] == said
    for text in ("read(3, \"x\", 1)\t\t= 1\n" * 3, "<... read resumed>) = 1\n" * 3):
        assert sniff_strace(text) == sniff(text)


def test_ftrace_and_logic_prechecks_answer_as_the_patterns_alone() -> None:
    """sniff_ftrace's and sniff_logic's looks at the whole head (what a pattern cannot match
    without) change no answer: on every golden and wild file, and on lines made to sit at each
    edge of them (a cpu column after a printk time or a CPU id, a graph call, a tracer header)."""
    import bootlens.sources.ftrace as fs
    import bootlens.sources.logic as ls

    def ftrace_alone(head: str) -> bool:  # sniff_ftrace without its pre-checks, as it was
        if head.startswith(fs._DAT_MAGIC):
            return True
        events = graphs = 0
        for line in head.splitlines()[:200]:
            if fs._TRACER.match(line):
                return True
            if (m := fs._EVENT.match(line)) and fs._NAME.match(m[7]):
                events += 1
            elif fs._GRAPH_SNIFF.match(line):
                graphs += 1
            if events >= 3 or graphs >= 5:
                return True
        return False

    heads = [p.read_bytes()[:8192].decode("utf-8", "replace") for p in golden_and_wild_files()]
    event = "  kworker/0:1-12    [000] d..1.   0.100000: initcall_start: func=foo_init+0x0/0x10\n"
    heads += [event * 3, "[    0.000049] x [0x411fd070]\n" + event * 3, "# tracer: nop\n",
              "  0)               |  start_kernel() {\n" * 5, "  0)   1.000 us    |  }\n" * 5,
              "[    0.000000] Booting Linux on physical CPU 0x0 [0x411fd070]\n" * 3, "x[12]y\n" * 3]
    said = [ftrace_alone(h) for h in heads]
    assert sum(said) >= 8  # the ftrace goldens and the made lines
    assert [fs.sniff_ftrace(h) for h in heads] == said
    for h in heads + ["; CSV generated by libsigrok 0.5.2\n", "x\n; CSV generated by libsigrok\n"]:
        assert (" CSV generated by libsigrok" in h and ls._SIGROK_HEAD.search(h) is not None) == \
            (re.search(r"^\S CSV generated by libsigrok", h, re.M) is not None), h[:80]


def test_tar_precheck_answers_as_tarfile(tmp_path: Path) -> None:
    """bootchart_sniff's look at the first 512 bytes is False only where tarfile.is_tarfile is:
    on every golden and wild file, and on real tar archives of each kind tarfile opens."""
    import tarfile

    from bootlens.sources.bootchart import _may_be_tar

    files = golden_and_wild_files()
    member = ROOT / "tests" / "golden" / "strace" / "README.md"
    for mode, fmt in (("w", tarfile.USTAR_FORMAT), ("w", tarfile.GNU_FORMAT), ("w", tarfile.PAX_FORMAT),
                      ("w:gz", tarfile.GNU_FORMAT), ("w:bz2", tarfile.GNU_FORMAT), ("w:xz", tarfile.GNU_FORMAT)):
        archive = tmp_path / f"a{len(files)}.tar"
        with tarfile.open(archive, mode, format=fmt) as tar:  # type: ignore[call-overload]  # mode: a str
            tar.add(member, "bootchart/proc_ps.log")
        files.append(archive)
    for p in files:
        with open(p, "rb") as f:
            head = f.read(512)
        assert _may_be_tar(head) or not tarfile.is_tarfile(p), p
    assert sum(tarfile.is_tarfile(p) for p in files) >= 6  # the archives made here
    # and it spares most text its import (padded text, columns of numbers there, may pass it)
    assert sum(_may_be_tar(p.read_bytes()[:512]) for p in files) < len(files) // 4


def test_plugins_found_only_where_declared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cheap look-up in entry_points.txt files finds a declared group and nothing else."""
    assert list(plugins.entry_points("bootlens.no-such-group")) == []
    dist = tmp_path / "bootlens_fake_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: bootlens-fake-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[bootlens.parsers]\nfake = fake_plugin:FakeParser\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert [ep.value for ep in plugins.entry_points("bootlens.parsers")] == ["fake_plugin:FakeParser"]
    assert list(plugins.entry_points("bootlens.rules")) == []
    # a group some installed distribution declares: the same answer as importlib.metadata's
    from importlib.metadata import entry_points

    assert sorted(ep.name for ep in plugins.entry_points("console_scripts")) == \
        sorted(ep.name for ep in entry_points(group="console_scripts"))


def lazy_patterns() -> list[tuple[str, str, LazyPattern]]:
    """(module, name, pattern) of every module-level :class:`LazyPattern` in the console parsers,
    the framings and the quirks (and the banner table's, one per banner)."""
    import importlib

    from bootlens.parsers import default_registry
    from bootlens.parsers.banners import BANNERS

    default_registry()
    out = [("bootlens.parsers.banners", f"BANNERS[{i}]", b.pattern) for i, b in enumerate(BANNERS)]
    for name in ("parsers.banners", "parsers.firmware", "parsers.kernel", "parsers.markers", "parsers.systemd",
                 "sources.systemd_analyze", "sources.ftrace", "parsers.uboot", "parsers.userspace",
                 "read.framings", "read.quirks"):
        mod = importlib.import_module(f"bootlens.{name}")
        for attr, value in vars(mod).items():
            if isinstance(value, LazyPattern):
                out.append((mod.__name__, attr, value))
            elif isinstance(value, tuple):  # userspace's (needle, pattern, init system) table
                out.extend((mod.__name__, f"{attr}[{i}]", x) for i, v in enumerate(value) if isinstance(v, tuple)
                           for x in v if isinstance(x, LazyPattern))
    return out


def test_lazy_patterns_compile_and_then_are_the_compiled_ones() -> None:
    """Every pattern compiled on first use is a valid one (a typo would otherwise surface only on
    the rare log that reaches it), and once compiled its methods are re.Pattern's own."""
    found = lazy_patterns()
    assert len(found) >= 100
    for mod, name, p in found:
        rx = p.compiled  # raises re.error on a bad pattern
        assert (rx.pattern, rx.flags & ~re.UNICODE) == (p.pattern, p.flags & ~re.UNICODE), (mod, name)
        assert p.match.__self__ is rx and p.search.__self__ is rx, (mod, name)  # type: ignore[attr-defined]
    fresh = LazyPattern(r"(\d+)-(\d+)")
    assert "_rx" not in vars(fresh)
    assert fresh.match("12-34") is not None and fresh.match("x") is None
    assert fresh.sub(r"\2-\1", "12-34") == "34-12" and fresh.findall("1-2 3-4") == [("1", "2"), ("3", "4")]
    assert [m[0] for m in fresh.finditer("1-2 3-4")] == ["1-2", "3-4"] and fresh.fullmatch("1-2x") is None
    assert fresh.search("ab 5-6")[0] == "5-6" and fresh.split("a1-2b") == ["a", "1", "2", "b"]  # type: ignore[index]
    assert fresh.subn("x", "1-2 3-4") == ("x x", 2)


def test_classifying_a_file_needs_no_pathlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every input is classified: for a file, kinds.classify and the bootchart sniff use os.path,
    and kinds, inputs and the sniff import no pathlib (with urllib.parse and ipaddress ~8 ms to
    import; lines.py still does); only a folder input brings it in."""
    import pathlib

    from bootlens.timeline import inputs
    from bootlens.sources import kinds
    import bootlens.sources.bootchart as bootchart_sniff

    assert not {"Path", "pathlib"} & (set(vars(kinds)) | set(vars(inputs)) | set(vars(bootchart_sniff)))
    log = tmp_path / "boot.log"
    log.write_text(LOG)
    bootdata = ROOT / "tests" / "golden" / "bootdata" / "h3host-firecracker.txt"

    def no_path(*args: object) -> None:
        raise AssertionError(f"pathlib.Path{args}")

    monkeypatch.setattr(pathlib, "Path", no_path)
    assert [kinds.classify(str(p)) for p in (log, bootdata, tmp_path / "missing.log")] == [None, "bootdata", None]
    assert not bootchart_sniff.sniff_bootchart(str(log)) and not bootchart_sniff.sniff_bootchart(str(tmp_path))
    monkeypatch.undo()
    (tmp_path / "proc_ps.log").write_text("")
    assert kinds.classify(str(tmp_path)) == "bootchart"  # a folder: pathlib is imported then


BUILTIN = ("firmware", "initcall", "kernel", "markers", "process", "systemd", "uboot", "userspace")


def test_registry_order_is_by_name_whatever_was_imported_first() -> None:
    """The built-in parsers run in the order of their names (it orders a boot's "formats",
    warnings and same-line events), even when a caller imported parser modules, in another
    order, before default_registry() (their decorators register them on import); and the
    registry finds every module of the package, with no list of them to keep."""
    code = ("import sys\n"
            "for m in sys.argv[1:]: __import__('bootlens.parsers.' + m)\n"
            "from bootlens.parsers import default_registry\n"
            "reg = default_registry()\n"  # the built-ins (an installed plugin would sort among them)
            "print(','.join(c.name for c in reg if c.__module__.startswith('bootlens.parsers.')),\n"
            "      ','.join(p.name for p in reg.instances() if type(p).__module__.startswith('bootlens.parsers.')))\n")
    for first in ((), ("userspace", "uboot", "process"), ("systemd", "kernel", "firmware")):
        p = subprocess.run([sys.executable, "-c", code, *first], capture_output=True, text=True, env=ENV)
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == [",".join(BUILTIN)] * 2, first
    from bootlens.parsers import default_registry

    assert tuple(c.name for c in default_registry() if c.__module__.startswith("bootlens.parsers.")) == BUILTIN


def test_a_printk_log_compiles_no_bootloader_pattern(tmp_path: Path) -> None:
    """A log whose every line has a printk time never reaches the firmware and bootloader
    parsers' patterns (nor the banner table's): they stay uncompiled."""
    log = tmp_path / "boot.log"
    log.write_text(LOG)
    code = ("import gc, os, sys\nfrom bootlens.core.lazyre import LazyPattern\n"
            "def _dump():\n"
            "    mods = {'bootlens.parsers.' + m for m in ('banners', 'uboot', 'firmware', 'systemd')}\n"
            "    done = [p.pattern for p in gc.get_objects() if isinstance(p, LazyPattern) and '_rx' in vars(p)]\n"
            "    with open(os.environ['BL_MODULES'], 'w') as f:\n"
            "        f.write('\\n'.join([str(len(mods & set(sys.modules)))] + done))\n"
            "_exit = os._exit\nos._exit = lambda code: (_dump(), _exit(code))\n" + ANALYZE)
    fd, name = tempfile.mkstemp(prefix="bootlens-lazy-", suffix=".txt")
    os.close(fd)
    out = Path(name)
    p = subprocess.run([sys.executable, "-c", code, "--no-config", "analyze", str(log), "--json"],
                       capture_output=True, text=True, env={**ENV, "BL_MODULES": str(out)})
    assert p.returncode == 0, p.stderr
    loaded, *compiled = out.read_text().split("\n")
    out.unlink()
    assert loaded == "4"  # the parsers were imported (and ran: the JSON has the initcall)
    assert '"foo_init"' in p.stdout
    bootloader = {q.pattern for mod, _, q in lazy_patterns()
                  if mod.rsplit(".", 1)[1] in ("banners", "uboot", "firmware")}
    assert len(bootloader) > 50 and not bootloader & set(compiled), compiled
    # nor the trace and capture sniffs' patterns: the log holds nothing they could match
    import bootlens.sources.ftrace as ftrace_sniff
    import bootlens.sources.logic as logic_sniff

    sniffs = {ftrace_sniff._EVENT.pattern, ftrace_sniff._TRACER.pattern, ftrace_sniff._GRAPH_SNIFF.pattern,
              logic_sniff._SIGROK_HEAD.pattern}
    assert not sniffs & set(compiled), compiled


def test_userspace_evidence_needles_are_in_every_match() -> None:
    """The user-space parser tries an evidence pattern only on lines holding its needle: on every
    golden input and wild log, no line the pattern matches lacks the needle."""
    from bootlens.parsers.userspace import _EVIDENCE

    texts = [ln for p in golden_and_wild_files() for ln in p.read_bytes().decode("utf-8", "replace").splitlines()]
    matched = 0
    for needle, rx, _ in _EVIDENCE:
        for t in texts:
            for start in (0, t.find("] ") + 2 if t.startswith("[") else 0):  # as is, and after a printk time
                if rx.match(t, start) is not None:
                    matched += 1
                    assert needle in t[start:], (needle, t)
    assert matched > 100  # the check saw matches


GC_STATE = ("import gc, sys\nsys.argv[0] = sys.argv[1]\nfrom bootlens import cli\n"
            "print(gc.isenabled())\n"
            "for command in sys.argv[2:]:\n"
            "    try:\n        cli.main(['--no-config', command, '--bad-option'], prog_name='bootlens')\n"
            "    except SystemExit:\n        pass\n"
            "    print(command, gc.isenabled())\n")


def gc_states(program: str, *commands: str) -> list[str]:
    p = subprocess.run([sys.executable, "-c", GC_STATE, program, *commands], capture_output=True, text=True,
                       env=ENV)
    assert p.returncode == 0, p.stderr
    return p.stdout.split("\n")[:-1]


def test_the_command_pauses_the_collector_over_its_imports_and_only_it() -> None:
    """The ``bootlens`` process imports with the cyclic collector off (start-up); a test or a
    program that imports the CLI keeps its collector on."""
    assert gc_states("/usr/bin/bootlens") == ["False"]
    assert gc_states("/usr/bin/python3") == ["True"]


def test_every_command_but_analyze_runs_with_the_collector() -> None:
    """The pause lasts until the group's callback: the long commands (run, experiment, report)
    get the collector back; analyze (which ends in os._exit) keeps it off."""
    assert gc_states("bootlens", "analyze", "report") == ["False", "analyze False", "report True"]


def test_looking_for_bootlens_toml_needs_no_pathlib(tmp_path: Path) -> None:
    """Every command looks for bootlens.toml at start-up and most find none: the search is on
    os.path (pathlib brings urllib.parse and ipaddress); a found file is still read."""
    (tmp_path / ".git").mkdir()
    log = tmp_path / "boot.log"
    log.write_text(LOG)
    # pathlib unusable (this sandbox's site imports it before any test: a check of sys.modules
    # could not fail here)
    here = f"import os, sys\nos.chdir({str(tmp_path)!r})\nsys.modules['pathlib'] = None\n"
    mods = imported(here + ANALYZE, "analyze", str(log), "--json")
    assert "bootlens.core.config" in mods and "bootlens.render.jsonout" in mods  # it looked, it ran
    (tmp_path / "bootlens.toml").write_text("top = 3\n")
    p = subprocess.run([sys.executable, "-c", ANALYZE, "analyze", str(log)], capture_output=True, text=True,
                       env=ENV, cwd=tmp_path)
    assert "--top from" in p.stderr and "bootlens.toml" in p.stderr


def test_boot_and_input_stats_are_immutable_records_without_dataclasses() -> None:
    """Boot and InputStats (model._Record: building two dataclasses was ~3.5 ms of importing the
    model; orjson imports the dataclasses module itself) keep what the frozen dataclasses gave:
    keyword and positional construction with defaults, equality and hashing by fields, the
    dataclass repr, copies with replace(), no assignment, pickling."""
    import pickle

    from bootlens.core.lines import Lines
    from bootlens.core.model import Boot, InputStats

    st = InputStats("a.log", 10, 2, "plain")
    assert (st.invalid_utf8, st.warnings, st.host_origin) == (0, (), "first_byte")
    assert st == InputStats(source="a.log", bytes=10, lines=2, framing="plain") and st != st.replace(bytes=11)
    assert hash(st) == hash(InputStats("a.log", 10, 2, "plain")) and st.__eq__(("a.log",)) is NotImplemented
    assert repr(st).startswith("InputStats(source='a.log', bytes=10, lines=2, framing='plain', invalid_utf8=0, ")
    moved = st.replace(host_origin="power_on", warnings=("w",))
    assert (moved.host_origin, moved.warnings, moved.source, st.host_origin) == ("power_on", ("w",), "a.log",
                                                                                  "first_byte")
    with pytest.raises(TypeError):
        st.replace(nope=1)
    with pytest.raises(AttributeError):
        st.bytes = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        st.other = 5  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(st)) == st
    b = Boot("a.log", 0, Lines([], [], []))
    assert (b.events, b.formats, b.split_reason, b.first_line) == ((), (), "start of input", 0)
    assert b.replace(formats=("kernel",)).formats == ("kernel",) and b.replace().index == 0
    assert not hasattr(st, "__dataclass_fields__") and not hasattr(st, "__dict__")
    assert Boot.__slots__ == ("source", "index", "lines", "events", "facts", "warnings", "formats", "split_reason")


def test_model_namedtuple_builds_what_typing_namedtuple_builds() -> None:
    """bootlens.core.model.NamedTuple (typing.NamedTuple's class syntax without typing's per-annotation
    ForwardRef compile) gives the same class: fields, defaults, docstring, module, qualname,
    methods, properties and class constants; a field without a default after one with a default
    is refused as typing refuses it. Every typed tuple of the analyze path is built by it."""
    import importlib
    import typing

    from bootlens.core import model

    def make(base: Any) -> Any:
        class P(base):  # type: ignore[misc,valid-type]
            """A point."""

            x: int
            y: int | None = None
            LIMIT = 3

            @property
            def total(self) -> int:
                return int(self.x) + (self.y or 0)

            def moved(self, d: int) -> Any:
                return self._replace(x=self.x + d)

        return P

    want, got = make(typing.NamedTuple), make(model.NamedTuple)
    for attr in ("_fields", "_field_defaults", "__doc__", "__module__", "__qualname__", "LIMIT"):
        assert getattr(got, attr) == getattr(want, attr), attr
    assert list(got.__annotations__) == list(want.__annotations__) == ["x", "y"]
    p = got(1)
    assert repr(p) == repr(want(1)) == "P(x=1, y=None)" and p.total == 1 and p == (1, None)
    assert type(p.moved(2)) is got and p.moved(2) == (3, None) and got._make([4, 5]).total == 9
    for base in (typing.NamedTuple, model.NamedTuple):
        with pytest.raises(TypeError):
            class Bad(base):  # type: ignore[misc,valid-type]
                x: int = 0
                y: int
    for name in ("core.model", "timeline.align", "timeline.analyze", "timeline.stages", "timeline.inputs",
                 "timeline.prekernel", "core.options", "parsers.banners", "core.config"):
        mod = importlib.import_module(f"bootlens.{name}")
        tuples = [c for c in vars(mod).values() if isinstance(c, type) and issubclass(c, tuple)
                  and hasattr(c, "_fields") and c.__module__ == mod.__name__]
        assert tuples, name
        for c in tuples:  # typing's would hold ForwardRef objects
            assert all(isinstance(a, str) for a in c.__annotations__.values()), (name, c)


def test_framing_tests_answer_as_their_bare_patterns() -> None:
    """framings.detect's tests look at the first characters before a pattern (a console log then
    compiles none): on every golden and wild line, and on lines of each framing and edge cases,
    each answers as its bare pattern does."""
    from bootlens.read import framings as fr

    def short(s: str) -> bool:
        m = fr._J_SHORT.compiled.match(s)
        return (m is not None and fr.month_of(m[1]) is not None) or fr._J_ISO.compiled.match(s) is not None \
            or s.startswith("\u2591\u2591") \
            or fr._J_META.compiled.match(s) is not None

    def dmesg_x(s: str) -> bool:
        m = fr._DMESG_X.compiled.match(s)
        return m is not None and m[2] in fr._DMESG_X_LEVELS

    bare = {"lava": lambda s: re.match(r'- \{"dt": "', s) is not None, "dmesg-x": dmesg_x,
            "dmesg-T": lambda s: fr._DMESG_T.compiled.match(s) is not None, "journalctl-short": short,
            "logcat": lambda s: fr._LOGCAT.compiled.match(s) is not None or s.startswith(fr._LOGCAT_HEAD)}
    texts = [ln for p in golden_and_wild_files() for ln in p.read_bytes().decode("utf-8", "replace").splitlines()]
    texts += ['- {"dt": "2024-01-30T09:37:23.1", "lvl": "target", "msg": "x"}', "kern  :info  : [    0.1] Linux",
              "user  :notice: hello", "[Tue Jan 20 10:17:44 2026] Linux version", "Jan 30 09:37:23 host kernel: x",
              "Foo 30 09:37:23 host kernel: x", "2024-01-30T09:37:23.123456+01:00 host kernel: x",
              "-- Boot 0123abcd --", "-- No entries --", "", "a", "[", "[T", "-- ", "- {", "1", "K",
              "févr. 05 17:36:57 NAS kernel: x", "4月 11 21:54:22 host systemd[1]: x", "Okt 3 01:02:03 h kernel: x",
              "janv 05 17:36:57 h x: y", "é", "月", "02-19 13:54:36.583     0     0 I         : Linux version",
              "--------- beginning of main", "02-19 13:54:36 x"]
    tests = dict(fr._TESTS)
    for name, want in bare.items():
        said = [tests[name](t) for t in texts]
        assert said == [want(t) for t in texts], name
        assert any(said) and not all(said), name


@pytest.mark.parametrize(("side", "not_needed"), [
    ("strace/qemu-arm64-app.strace", ("rich", "bootlens.sources.ftrace.kft", "bootlens.sources.ftrace.reader")),
    ("ftrace/rostedt-initcall.txt", ("bootlens.sources.strace.reader", "bootlens.sources.strace.summary")),
])
def test_analyze_json_with_one_side_file_imports_no_other_formats_reader(side: str, not_needed: tuple[str, ...]) -> None:
    """Every side renderer (render/side/) is imported for a boot given with side files: they keep
    their heavy imports (the format's readers, rich) inside the hooks that need them."""
    log = ROOT / "tests" / "golden" / "strace" / "qemu-arm64-console.txt"
    mods = imported(ANALYZE, "--no-config", "analyze", "--json", str(log), str(ROOT / "tests" / "golden" / side))
    assert "bootlens.render.side.systemd_analyze" in mods  # it did render the side files
    assert not set(not_needed) & mods, set(not_needed) & mods
