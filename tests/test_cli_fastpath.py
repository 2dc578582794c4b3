"""``bootlens analyze`` without click (bootlens.cli.fastpath): the table of analyze's options is
the one the click command declares, the fast parser gives the click command's own arguments for
every command line it takes, and everything else goes to click (help, errors, other commands, a
bootlens.toml). No timing here: bench/startup_stages.py and bench/bench_anchors.py measure it."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from bootlens.cli import analysis, main
from bootlens.cli.analyzecmd import run_analyze
from bootlens.cli.fastpath import analyze_kwargs
from bootlens.cli.optable import kind_of, table_source

ROOT = Path(__file__).resolve().parent.parent
ENV = {k: v for k, v in os.environ.items() if k not in ("BOOTLENS_CONFIG", "PYTHONPROFILEIMPORTTIME")}
LOG = ("[    0.000000] Linux version 6.1.0 (x@y) #1 SMP\n"
       "[    0.100000] calling  foo_init+0x0/0x10 @ 1\n"
       "[    0.100500] initcall foo_init+0x0/0x10 returned 0 after 500 usecs\n"
       "[    0.200000] Run /init as init process\n")


def test_the_table_is_what_the_click_command_declares() -> None:
    """analyze_options.py is generated: regenerated from the click command now, it is the same
    text (an option added, renamed or given another default fails here until regenerated)."""
    committed = (ROOT / "src" / "bootlens" / "cli" / "analyze_options.py").read_text()
    assert committed == table_source(), "run: python3 -m bootlens.cli.optable > src/bootlens/cli/analyze_options.py"


def test_the_generator_refuses_what_the_fast_path_cannot_parse() -> None:
    """An option the fast parser would read differently from click stops the generator."""
    for opt in (click.Option(["--fmt"], type=click.Choice(["a", "b"])), click.Option(["--x/--no-x"]),
                click.Option(["--db"], envvar="BOOTLENS_DB"), click.Option(["--n"], type=click.IntRange(1, clamp=True)),
                click.Option(["--v"], count=True), click.Option(["--p"], nargs=2)):
        with pytest.raises(ValueError, match="fast path"):
            kind_of(opt)
    assert kind_of(click.Option(["--t"], type=click.FloatRange(0))) == ("float", 0, None)


@pytest.fixture
def clicks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """click's arguments for a command line: the click group run in-process on it (from a folder
    that holds no bootlens.toml, nor do its parents: a .git stops the search), the analysis
    recorded instead of run; a UsageError when click refuses the command line."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BOOTLENS_CONFIG", raising=False)
    seen: list[dict[str, Any]] = []

    def record(*args: Any, **kwargs: Any) -> None:
        bound = inspect.signature(run_analyze).bind(*args, **kwargs)
        bound.apply_defaults()
        args = dict(bound.arguments)
        args.update(args.pop("side", {}))  # the side formats' options (run_analyze's **side)
        seen.append(args)

    monkeypatch.setattr(analysis, "run_analyze", record)

    def run(argv: list[str]) -> dict[str, Any]:
        seen.clear()
        main.main(list(argv), prog_name="bootlens", standalone_mode=False)
        assert len(seen) == 1
        return seen[0]

    return run


# every option, each spelling, repeated, interleaved with files, after --, a value like an option
TAKEN = [
    ["analyze", "boot.log"],
    ["analyze", "--json", "boot.log"],
    ["analyze", "boot.log", "--json"],
    ["--no-config", "analyze", "--json", "a.log", "b.log"],
    ["analyze", "-"],
    ["analyze", "--summary", "--top", "3", "x"],
    ["analyze", "--top=10000", "x", "--top", "7"],
    ["analyze", "--top", "007", "x"],
    ["analyze", "--marker", "ready=APP READY", "x", "--marker=boot=Starting"],
    ["analyze", "--marker", "--json", "x"],
    ["analyze", "--critical-chain", "--systemd-dump", "dump.txt", "x"],
    ["analyze", "--systemd-analyze", "d1", "--systemd-analyze=d2", "x"],
    ["analyze", "--channel", "D0=power", "--channel", "D1=ready", "--align", "D2:rise=READY", "x"],
    ["analyze", "--align-bound", "2.5", "x"],
    ["analyze", "--align-bound=0", "x"],
    ["analyze", "--align-bound", "3.", "x"],
    ["analyze", "--align-bound", ".5", "x"],
    ["analyze", "--db", "h.sqlite", "--label", "board=rpi4", "--label", "commit=abc", "x"],
    ["analyze", "--db=", "x"],
    ["analyze", "--json", "--json", "x"],
    ["analyze", "x", "--", "--json", "-", "--top"],
    ["analyze", "--", "-x"],
    ["analyze", "analyze", "y"],
    ["analyze", "ünïcode.log", "--marker", "ready=é"],
]


@pytest.mark.parametrize("argv", TAKEN, ids=[" ".join(a) for a in TAKEN])
def test_the_fast_parser_gives_clicks_arguments(argv: list[str], clicks: Any) -> None:
    fast = analyze_kwargs(argv)
    assert fast is not None, argv
    slow = clicks(argv)
    assert fast == slow
    assert {k: type(v) for k, v in fast.items()} == {k: type(v) for k, v in slow.items()}  # 10.0, not 10


# click's to answer: help, other commands, errors (each a UsageError from click)
REFUSED_BY_CLICK = [
    ["analyze"], ["analyze", "--json"], ["analyze", "--top", "0", "x"], ["analyze", "--top", "10001", "x"],
    ["analyze", "--top", "x", "y"], ["analyze", "x", "--top"], ["analyze", "--json=1", "x"],
    ["analyze", "--bogus", "x"], ["analyze", "-j", "x"], ["analyze", "--align-bound", "-1", "x"],
    ["analyze", "x", "--no-config"], ["analyse", "x"], [], ["--bogus", "analyze", "x"],
]
# click's too, though click takes them: the fast parser does not try every spelling click's int()
# and float() take, nor help, nor another command, nor a group option but --no-config
NOT_TRIED = [
    ["analyze", "--top", " 5", "x"], ["analyze", "--top", "+5", "x"], ["analyze", "--top", "1_0", "x"],
    ["analyze", "--align-bound", "1e3", "x"], ["analyze", "--align-bound", "inf", "x"],
    ["analyze", "--top", "٣", "x"], ["--no-config", "--no-config", "analyze", "x"],
]
HELP_AND_OTHERS = [["--help"], ["-h"], ["analyze", "--help"], ["analyze", "x", "-h"], ["--version"],
                   ["report", "x"], ["--config", "f.toml", "analyze", "x"]]


@pytest.mark.parametrize("argv", REFUSED_BY_CLICK, ids=[" ".join(a) or "(none)" for a in REFUSED_BY_CLICK])
def test_what_click_refuses_goes_to_click(argv: list[str], clicks: Any) -> None:
    assert analyze_kwargs(argv) is None
    with pytest.raises(click.UsageError):
        clicks(argv)


@pytest.mark.parametrize("argv", NOT_TRIED + HELP_AND_OTHERS, ids=[" ".join(a) for a in NOT_TRIED + HELP_AND_OTHERS])
def test_help_other_commands_and_rare_spellings_go_to_click(argv: list[str]) -> None:
    assert analyze_kwargs(argv) is None


def test_a_configuration_that_applies_goes_to_click(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bootlens.toml's defaults (and the line naming them) are click's: with a file found from
    the working directory, BOOTLENS_CONFIG or shell completion, the fast parser steps aside;
    --no-config makes a found file irrelevant."""
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    monkeypatch.delenv("BOOTLENS_CONFIG", raising=False)
    argv = ["analyze", "--json", "x"]
    assert analyze_kwargs(argv) is not None
    (tmp_path / "bootlens.toml").write_text("top = 3\n")
    assert analyze_kwargs(argv) is None
    assert analyze_kwargs(["--no-config", *argv]) is not None
    (tmp_path / "bootlens.toml").unlink()
    monkeypatch.setenv("BOOTLENS_CONFIG", str(tmp_path / "other.toml"))
    assert analyze_kwargs(argv) is None
    monkeypatch.delenv("BOOTLENS_CONFIG")
    monkeypatch.setenv("_BOOTLENS_COMPLETE", "bash_complete")
    assert analyze_kwargs(argv) is None


FAST = "import sys\nsys.argv[0] = 'bootlens'\nfrom bootlens.cli.fastpath import main\nmain()\n"
CLICK = "import sys\nsys.argv[0] = 'bootlens'\nfrom bootlens.cli import main\nmain(prog_name='bootlens')\n"


def bootlens(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, env=ENV, cwd=cwd, timeout=120)


@pytest.mark.parametrize("args", [
    ("analyze", "--json", "boot.log"), ("analyze", "boot.log"), ("analyze", "--summary", "boot.log"),
    ("analyze", "--critical-chain", "--json", "boot.log"), ("analyze", "--json", "missing.log"),
    ("analyze", "--json", "--summary", "boot.log"), ("analyze", "--systemd-dump", "d", "boot.log"),
    ("analyze", "--top", "0", "boot.log"), ("analyze", "--nope", "boot.log"), ("analyze",), ("--help",),
    ("analyze", "--help"), ("analyze", "--channel", "D0=power", "boot.log"),
    ("analyze", "--marker", "bad", "boot.log")])
def test_the_console_script_answers_as_the_click_group(args: tuple[str, ...], tmp_path: Path) -> None:
    """The console script's entry (fast path or not) and the click group: the same bytes on
    standard output and error, the same exit code."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "boot.log").write_text(LOG)
    fast, slow = bootlens(FAST, *args, cwd=tmp_path), bootlens(CLICK, *args, cwd=tmp_path)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)
    assert fast.returncode in (0, 2) and (fast.stdout or fast.stderr)


def test_the_fast_path_imports_no_click(tmp_path: Path) -> None:
    """``bootlens analyze --json LOG`` runs without importing click, typing or orjson; an error of click's own
    still comes from click."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "boot.log").write_text(LOG)
    dump = ("import atexit, os, sys\n"
            "def _dump():\n"
            "    sys.stdout.flush()\n"
            "    os.write(2, ('\\nMODULES ' + ' '.join(sorted(sys.modules))).encode())\n"
            "atexit.register(_dump)\n_exit = os._exit\nos._exit = lambda code: (_dump(), _exit(code))\n")
    p = bootlens(dump + FAST, "analyze", "--json", "boot.log", cwd=tmp_path)
    assert p.returncode == 0 and b'"foo_init"' in p.stdout, p.stderr
    mods = set(p.stderr.decode().rsplit("MODULES ", 1)[1].split())
    assert "bootlens.render.jsonout" in mods and "bootlens.cli.analyzecmd" in mods  # it ran
    assert not {"click", "bootlens.cli.group", "bootlens.cli.analysis"} & mods
    # nor typing (the modules on the path take TYPE_CHECKING as a constant of their own) nor
    # orjson (jsonbytes writes a small document): ~25 ms of start-up (docs/performance.md step 23)
    assert not {"typing", "orjson"} & mods
    # nor contextlib (analyze.paused_gc is a class) nor heapq (a block's top is native): ~1.5 ms
    assert not {"contextlib", "heapq"} & mods
    # nor the json package (jsonbytes writes through _json, journal.py reads JSON only when the
    # input is a journal): 1.7 ms with the patterns its modules compile (step 25)
    assert not {"json", "json.decoder", "json.encoder"} & mods
    p = bootlens(dump + FAST, "analyze", "--top", "0", "boot.log", cwd=tmp_path)
    assert p.returncode == 2 and "click" in p.stderr.decode().rsplit("MODULES ", 1)[1].split()


def test_a_broken_pipe_not_on_the_console_ends_as_clicks_does(tmp_path: Path) -> None:
    """A BrokenPipeError from a pipe other than standard output or error (analyze writing into a
    FIFO whose reader left) ends as click's own main does: standard streams wrapped so that the
    final flush is quiet, exit 1, no traceback, and no deprecated click name used (warnings are
    errors in that run, so a removed or deprecated wrapper fails here)."""
    log = tmp_path / "boot.log"
    log.write_text(LOG)
    code = ("import sys; import bootlens.cli.analyzecmd as a\n"
            "def broken(**kw): raise BrokenPipeError(32, 'Broken pipe')\n"
            "a.run_analyze = broken\n"
            f"sys.argv = ['bootlens', 'analyze', {str(log)!r}]\n"
            "from bootlens.cli.fastpath import main; main()\n")
    r = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, env=ENV)
    assert r.returncode == 1, r.stderr
    assert r.stderr == "" and r.stdout == ""
