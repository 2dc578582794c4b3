"""bootlens.core.jsonbytes: the standard library's JSON with its floats mended is orjson's bytes, so
``analyze --json`` of a small log skips orjson's import and writes what orjson would.

The oracle is orjson itself, on random doubles of every magnitude and bit pattern, every string
shape, containers and keys as the documents hold them, and the whole ``analyze --json`` document
(and each event's dict) of every corpus log, wild/ included."""

from __future__ import annotations

import math
import os
import random
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import SHARED_CORPUS as CORPUS
from conftest import need_shared

from bootlens.core import jsonbytes
from bootlens.core.jsonbytes import stdlib_dumps
from bootlens.render import jsonout

ROOT = Path(__file__).resolve().parent.parent
ENV = {k: v for k, v in os.environ.items() if k not in ("BOOTLENS_CONFIG", "PYTHONPROFILEIMPORTTIME")}


def orjson_bytes(obj: Any, indent: bool = False) -> bytes:
    if indent:
        return bytes(orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    return bytes(orjson.dumps(obj))


def doubles() -> list[float]:
    r = random.Random(20261128)
    vals = [r.uniform(0.5, 10) * 10.0 ** r.randint(-330, 308) * r.choice((1, -1)) for _ in range(40000)]
    vals += [struct.unpack("<d", r.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(40000)]
    vals += [k * 10.0 ** p for k in (1, 2, 5, 9, 12, 99, 123456789) for p in range(-30, 30)]
    vals += [ns / 1e9 for ns in range(0, 200_000, 13)]  # seconds from nanoseconds, as the documents hold them
    vals += [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e-5, 9.999999999999999e-6,
             1e16, 9999999999999998.0, float("nan"), float("inf"), float("-inf")]
    return vals


def test_every_double_is_written_as_orjson_writes_it() -> None:
    vals = doubles()
    for v in vals:
        assert stdlib_dumps(v) == orjson_bytes(v), repr(v)
    # and inside containers and both layouts, where the mending must find them between other tokens
    assert stdlib_dumps(vals[:5000]) == orjson_bytes(vals[:5000])
    assert stdlib_dumps({"a": vals[5000:6000], "b": {"c": vals[-12:]}}, indent=True) == \
        orjson_bytes({"a": vals[5000:6000], "b": {"c": vals[-12:]}}, indent=True)
    assert sum(not math.isfinite(v) for v in vals) >= 3  # NaN and the infinities are null in both


def test_strings_that_look_like_numbers_are_left_alone() -> None:
    """The mending reads number tokens only: a string holding '1e-05', 'NaN' or an escaped quote
    before them is written as it is."""
    texts = ['1e-05', 'x 1.5e-07 y', 'NaN', '-Infinity', '\\"1e-05', 'a\\', '"', '\\', 'e-5"1e+16',
             'took 2e-06 s', '\\u0041 1e-9', '']
    obj = {t: [t, 1e-05, {"k": t}] for t in texts}
    assert stdlib_dumps(obj) == orjson_bytes(obj)
    assert stdlib_dumps(obj, indent=True) == orjson_bytes(obj, indent=True)


def test_every_character_is_escaped_as_orjson_does() -> None:
    chars = [chr(c) for c in range(0, 0x3000)] + ["\u2028", "\u2029", "\ufeff", "\U0001f600", "\U0010ffff"]
    s = "".join(chars)
    assert stdlib_dumps(s) == orjson_bytes(s)
    assert stdlib_dumps({s: [s]}, indent=True) == orjson_bytes({s: [s]}, indent=True)


def test_containers_and_keys() -> None:
    obj = {"a": [], "b": {}, "c": [1, {"d": None}, (2, 3)], 1: True, "e": False, "f": -(2 ** 63),
           "g": 2 ** 64 - 1, "h": [[[]]], "i": {"j": {"k": {}}}}
    assert stdlib_dumps(obj, indent=True) == orjson_bytes(obj, indent=True)
    del obj[1]  # without OPT_NON_STR_KEYS, orjson refuses an int key: the compact form has none
    assert stdlib_dumps(obj) == orjson_bytes(obj)


def test_what_the_standard_library_cannot_write_goes_to_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    """A type json does not encode, or a str that is not UTF-8, is orjson's to answer."""
    import datetime

    monkeypatch.delitem(sys.modules, "orjson")  # as in a fresh analyze: not imported yet
    when = datetime.date(2026, 11, 28)
    assert jsonbytes.dumps({"d": when}) == b'{"d":"2026-11-28"}'
    assert "orjson" in sys.modules
    monkeypatch.delitem(sys.modules, "orjson")
    with pytest.raises(orjson.JSONEncodeError):
        jsonbytes.dumps("\ud800")


def corpus_logs() -> list[Path]:
    logs = sorted(p for p in CORPUS.glob("*.log")) + sorted((CORPUS / "wild").glob("*.log"))
    return logs


def test_every_corpus_document_is_orjsons() -> None:
    """The analyze --json document of every corpus log, and each event as the writer dumps it."""
    from bootlens.timeline.analyze import analyze_paths

    need_shared(CORPUS)
    logs = corpus_logs()
    assert len(logs) >= 30
    events = 0
    for log in logs:
        a = analyze_paths([str(log)])
        doc = jsonout.to_json_obj(a)
        assert stdlib_dumps(doc, indent=True) == orjson_bytes(doc, indent=True), log.name
        for b in a.boots:
            times = b.times or tuple(b.alignment.times(b.boot.events))
            for e, t in zip(b.boot.events, times):
                if t is not None:
                    d = jsonout.event_dict(e, b.alignment, t)
                    assert stdlib_dumps(d) == orjson_bytes(d), (log.name, e)
                    events += 1
    assert events > 2000


def analyze_modules(log: Path) -> tuple[bytes, set[str]]:
    """``bootlens analyze --json LOG`` through the console script's entry: output and modules."""
    code = ("import atexit, os, sys\n"
            "def _dump():\n"
            "    sys.stdout.flush()\n"
            "    os.write(2, ('\\nMODULES ' + ' '.join(sorted(sys.modules))).encode())\n"
            "_exit = os._exit\nos._exit = lambda code: (_dump(), _exit(code))\n"
            "sys.argv = ['bootlens', '--no-config', 'analyze', '--json', sys.argv[1]]\n"
            "from bootlens.cli.fastpath import main; main()\n")
    p = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, env=ENV)
    assert p.returncode == 0, p.stderr
    return p.stdout, set(p.stderr.decode().rsplit("MODULES ", 1)[1].split())


def test_a_small_log_is_written_without_orjson_a_big_one_with_it(tmp_path: Path) -> None:
    """Below ORJSON_FROM events orjson is not imported; above, it is; both give the bytes of
    render_json in this process (orjson imported)."""
    from bootlens.timeline.analyze import analyze_paths

    def log(n: int) -> Path:
        p = tmp_path / f"boot{n}.log"
        lines = ["[    0.000000] Linux version 6.1.0 (x@y) #1 SMP"]
        for i in range(n):
            lines.append(f"[    0.{100000 + i * 7:06d}] calling  foo{i}_init+0x0/0x10 @ 1")
            lines.append(f"[    0.{100003 + i * 7:06d}] initcall foo{i}_init+0x0/0x10 returned 0 after 3 usecs")
        lines.append("[    0.900000] Run /init as init process")
        p.write_text("\n".join(lines) + "\n")
        return p

    small, big = log(50), log(jsonout.ORJSON_FROM + 10)
    out, mods = analyze_modules(small)
    assert "bootlens.render.jsonout" in mods and "orjson" not in mods
    assert out == jsonout.render_json(analyze_paths([str(small)]))
    assert b'"duration_s": 0.000003' in out or b'"duration_s":0.000003' in out  # orjson's 3e-06
    out, mods = analyze_modules(big)
    assert "orjson" in mods
    assert out == jsonout.render_json(analyze_paths([str(big)]))
