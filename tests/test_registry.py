"""The registries (core/registry.py, one class for parsers, rules and tables of specs): filled
by a decorator, duplicates refused, ordered by name, the built-ins found by module, third-party
entries through entry points, tests build their own; and the parsers' index keywords."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import CORPUS

from bootlens.advise import RuleRegistry, default_registry as default_rules, listed_ids
from bootlens.advise.base import Rule
from bootlens.core.lines import Lines
from bootlens.core.model import Kind, ParseResult
from bootlens.core.registry import Registry as CoreRegistry, modules_of
from bootlens.parsers import ParseOptions, Parser, ParserRegistry, Registry, default_registry
from bootlens.parsers.base import Registry as BaseRegistry
from bootlens.parsers.initcall import InitcallParser
from bootlens.parsers.kernel import KernelParser
from bootlens.read.reader import OWN_PREFIXES, read_path
from bootlens.timeline.analyze import analyze_paths
from bootlens.timeline.boots import KERNEL_STARTS, boots_from_lines


def test_duplicate_registration_is_an_error() -> None:
    reg = Registry()
    reg.register(InitcallParser)
    with pytest.raises(ValueError, match="already registered"):
        reg.register(InitcallParser)


def test_default_registry_has_the_builtin_parsers() -> None:
    assert set(default_registry().names()) >= {"uboot", "kernel", "initcall", "process", "markers"}


def test_own_registry_runs_only_its_parsers() -> None:
    reg = Registry()
    reg.register(InitcallParser)
    reg.register(KernelParser)
    path = str(CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log")
    lines, stats = read_path(path)
    boots = boots_from_lines(path, lines, stats, ParseOptions(), reg)
    kinds = {e.kind for e in boots[0].events}
    assert Kind.INITCALL in kinds and Kind.MILESTONE in kinds
    assert Kind.BOOTLOADER not in kinds  # the U-Boot parser is not in this registry
    assert "uboot" not in boots[0].formats


def test_sniff_confidence() -> None:
    path = str(CORPUS / "qemu-x86_64-tp_printk.console.log")
    lines, _ = read_path(path)
    by_name = {cls.name: cls() for cls in default_registry()}
    opts = ParseOptions()
    assert by_name["process"].sniff(lines, opts) == 1.0
    assert by_name["initcall"].sniff(lines, opts) == 0.0
    assert by_name["kernel"].sniff(lines, opts) == 1.0


# --- the one registry class (core/registry.py) behind parsers, rules, and tables of specs -----


@dataclass(frozen=True, slots=True)
class Spec:
    """A named spec, as a table of targets holds them."""

    name: str
    arch: str


def test_entries_come_by_name_not_by_registration() -> None:
    reg: CoreRegistry[Spec] = CoreRegistry("target")
    for name in ("qemu-x86_64", "board-b", "qemu-arm64", "board-a"):
        assert reg.register(Spec(name, "x")) == Spec(name, "x")  # a plain call returns what it registered
    assert reg.names() == ["board-a", "board-b", "qemu-arm64", "qemu-x86_64"]
    assert [s.name for s in reg] == reg.names() and len(reg) == 4
    reg.register(Spec("a-first", "y"))
    assert [s.name for s in reg][0] == "a-first"  # a later registration takes its place by name


def test_a_table_of_specs_is_looked_up_by_name() -> None:
    reg: CoreRegistry[Spec] = CoreRegistry("target")
    reg.register(Spec("qemu-arm64", "arm64"))
    assert "qemu-arm64" in reg and "qemu-mips" not in reg
    assert reg["qemu-arm64"].arch == "arm64" and reg.get("qemu-mips") is None
    with pytest.raises(KeyError):
        reg["qemu-mips"]
    with pytest.raises(ValueError, match="target 'qemu-arm64' is already registered"):
        reg.register(Spec("qemu-arm64", "other"))
    with pytest.raises(TypeError, match="has no name"):
        reg.register(object())  # type: ignore[arg-type]


def test_the_public_registries_are_the_one_class() -> None:
    """Plugins' paths keep working: parsers.base.Registry, parsers.Registry, advise.RuleRegistry;
    parsers, rules, side formats and targets are all kept in the one registry class."""
    assert BaseRegistry is ParserRegistry is Registry and issubclass(RuleRegistry, CoreRegistry)
    assert issubclass(ParserRegistry, CoreRegistry)
    assert isinstance(default_registry(), CoreRegistry) and isinstance(default_rules(), CoreRegistry)
    from bootlens.lab.catalogue import targets
    from bootlens.sources.base import REGISTRY as SIDE_FORMATS

    assert isinstance(targets(), CoreRegistry) and isinstance(SIDE_FORMATS, CoreRegistry)  # and targets, formats


class NeverParser(Parser):
    """Finds nothing; declares a keyword no log holds."""

    name = "never"
    description = "test"
    needles = ("zz-only-in-a-test",)
    prefixes = ("zz-head",)

    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        return 0.0

    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        return ParseResult((), (), ())


def test_the_framing_indexes_what_the_parsers_declare() -> None:
    """What analyze indexes while it frames: every parser's own keywords (none kept by hand in
    the reader), the boot splitter's, the reader's own. A parser of a registry of one's own gets
    its keywords indexed though it never asks for them."""
    path = str(CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log")
    lines = analyze_paths([path]).boots[0].boot.lines
    for cls in default_registry():
        assert set(cls.needles) <= set(lines._hits) and set(cls.prefixes) <= set(lines._starts), cls.name
    assert {*KERNEL_STARTS, *OWN_PREFIXES} <= set(lines._starts)
    needles, prefixes = default_registry().keywords()
    assert "call" in needles and "sched_process_" in prefixes and len(set(needles)) == len(needles)
    reg = ParserRegistry()
    reg.register(InitcallParser)
    reg.register(NeverParser)
    assert reg.keywords() == (("call", "usecs", "zz-only-in-a-test"), ("zz-head",))
    lines = analyze_paths([path], registry=reg).boots[0].boot.lines
    assert "zz-only-in-a-test" in lines._hits and "zz-head" in lines._starts


def _plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group: str, entries: dict[str, str], code: str) -> None:
    """A distribution on sys.path declaring ``entries`` under ``group``, its module ``fake_plugin``."""
    dist = tmp_path / "bootlens_fake_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: bootlens-fake-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))
    (tmp_path / "fake_plugin.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "fake_plugin", raising=False)


PLUGIN = '''
from bootlens.parsers.base import Parser, ParseOptions
from bootlens.core.model import ParseResult


class FakeParser(Parser):
    name = "aaa-fake"
    description = "a third-party parser"
    needles = ("fake needle",)

    def sniff(self, lines, options):
        return 0.0

    def parse(self, lines, options):
        return ParseResult((), (), ())


class Other(FakeParser):
    name = "zzz-other"


def register_more(registry):
    registry.register(Other)


NOT_A_PARSER = 42
'''


def test_third_party_parsers_come_through_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry point names a parser class, or a function that registers into the registry it is
    given; anything else is left alone. They take their place by name among the others."""
    _plugin(tmp_path, monkeypatch, "bootlens.parsers", {"fake": "fake_plugin:FakeParser",
                                                         "more": "fake_plugin:register_more",
                                                         "odd": "fake_plugin:NOT_A_PARSER"}, PLUGIN)
    reg = ParserRegistry()
    reg.register(InitcallParser)
    reg.load_entry_points()
    assert reg.names() == ["aaa-fake", "initcall", "zzz-other"]
    assert [type(p).__name__ for p in reg.instances()] == ["FakeParser", "InitcallParser", "Other"]
    assert reg.keywords()[0] == ("fake needle", "call", "usecs")
    with pytest.raises(ValueError, match="already registered"):
        reg.load_entry_points()


def test_load_imports_every_module_of_the_package_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A default registry is filled by importing every module of its package (each registers its
    own: a new entry is one new file), once; helper modules and subpackages are imported too."""
    pkg = tmp_path / "fake_specs"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__pycache__").mkdir()
    (pkg / "__init__.py").write_text("from bootlens.core.registry import Registry\n"
                                     "REGISTRY = Registry('spec', package=__name__)\n"
                                     "class Spec:\n    def __init__(self, name): self.name = name\n")
    for mod in ("zeta", "alpha", "_helper"):
        (pkg / f"{mod}.py").write_text(f"from . import REGISTRY, Spec\nREGISTRY.register(Spec({mod!r}))\n")
    (pkg / "sub" / "__init__.py").write_text("from .. import REGISTRY, Spec\nREGISTRY.register(Spec('sub'))\n")
    (pkg / "notes.txt").write_text("not a module\n")
    (pkg / "bad-name.py").write_text("raise AssertionError('not importable, not imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        fake = importlib.import_module("fake_specs")
        assert modules_of("fake_specs") == ["_helper", "alpha", "sub", "zeta"]
        reg = fake.REGISTRY
        assert reg.load() is reg and reg.load() is reg  # the second does nothing (no duplicate)
        assert reg.names() == ["_helper", "alpha", "sub", "zeta"]
    finally:
        for name in [m for m in sys.modules if m == "fake_specs" or m.startswith("fake_specs.")]:
            del sys.modules[name]


def test_rules_run_by_id_and_the_json_keeps_its_order() -> None:
    """Rules are ordered by id whatever the order of their modules' imports; a duplicate id is
    an error; advise --json lists them as it always has (advise.listed_ids)."""
    rules = default_rules()
    assert rules.ids() == sorted(rules.ids()) == [cls.id for cls in rules]
    listed = listed_ids(rules)
    assert sorted(listed) == rules.ids()
    assert listed.index("kernel.serial_console") + 1 == listed.index("kernel.crypto_selftests")
    assert listed.index("systemd.wait_online") + 1 == listed.index("systemd.off_path")
    reg = RuleRegistry()

    class B(Rule):
        id = "b.rule"
        title = "b"

        def check(self, boot, ctx):  # type: ignore[no-untyped-def]
            return ()

    class A(B):
        id = "a.rule"

    assert reg.register(B) is B and reg.register(A) is A
    assert reg.ids() == ["a.rule", "b.rule"] and list(reg) == [A, B] and listed_ids(reg) == ["a.rule", "b.rule"]
    with pytest.raises(ValueError, match="rule 'a.rule' is already registered"):
        reg.register(A)


def test_parser_and_rule_order_does_not_depend_on_import_order() -> None:
    """Issue 28 (class 12c): the built-in parsers' modules imported in reverse, and the rules'
    ones, in a fresh interpreter, give the order a plain load gives (by name), parser and rule."""
    code = (
        "import importlib, json\n"
        "from bootlens.core.registry import modules_of\n"
        "for pkg in ('bootlens.parsers', 'bootlens.advise.rules'):\n"
        "    for m in reversed(modules_of(pkg)):\n"
        "        importlib.import_module(f'{pkg}.{m}')\n"
        "from bootlens.parsers import default_registry\n"
        "from bootlens.advise import default_registry as rules\n"
        "print(json.dumps([[p.name for p in default_registry()], rules().ids()]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    parsers, rule_ids = json.loads(out.stdout)
    assert parsers == [p.name for p in default_registry()] == sorted(parsers)
    assert len(parsers) >= 8 and parsers.index("firmware") < parsers.index("uboot")
    assert rule_ids == default_rules().ids() == sorted(rule_ids)
