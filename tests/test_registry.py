"""The parser registry: filled by a decorator, duplicates refused, tests build their own."""

from __future__ import annotations

import pytest
from conftest import CORPUS

from bootlens.timeline.boots import boots_from_lines
from bootlens.read.reader import read_path
from bootlens.core.model import Kind
from bootlens.parsers import ParseOptions, Registry, default_registry
from bootlens.parsers.initcall import InitcallParser
from bootlens.parsers.kernel import KernelParser


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
