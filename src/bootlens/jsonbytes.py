"""JSON bytes exactly as orjson writes them, without importing orjson for a small document.

Importing orjson costs ~20 ms on the reference machine (its init imports dataclasses with inspect,
uuid with platform, datetime and json): more than the rest of ``bootlens analyze`` of a small log
(docs/architecture.md, step 23). The standard library's C encoder, a 3 ms import, writes the same
bytes for every str, int, bool, None, list, tuple and dict (keys included: orjson is used with
OPT_NON_STR_KEYS) except floats: orjson writes repr's shortest digits positionally from 1e-5 up to
1e16 and with an unpadded exponent elsewhere (``1.5e-7``, ``1e+16``), and NaN and the infinities as
null. One pass over the encoder's number tokens (strings skipped whole) mends those (not a float
used as a dict key, which the documents never hold: the key is a string by then). A document
holding anything else (a type the standard library does not encode, a str that is not valid
UTF-8) goes to orjson, whose answer (or error) it always was. tests/test_jsonbytes.py compares
the two on random floats, every string shape and every corpus log's document.

A caller about to write many documents calls :func:`use_orjson`: orjson is then faster than the
standard library plus the mending, and the bytes are the same.
"""

from __future__ import annotations

import json
import re
import sys

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/architecture.md step 23)
if TYPE_CHECKING:
    from typing import Any

# a JSON string token (skipped whole), a float written with an exponent, or a non-finite float
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|(-?[0-9.]+e[-+][0-9]+)|(NaN|-?Infinity)')
_MAYBE = re.compile(r"[0-9]e[-+]|NaN|Infinity")  # cheap pre-check: no match, nothing to mend
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_INDENTED = json.JSONEncoder(ensure_ascii=False, indent=2)


def _orjson_float(text: str) -> str:
    """float.__repr__'s text with an exponent as orjson writes the same double."""
    mant, _, exp_text = text.partition("e")
    exp = int(exp_text)
    if not -5 <= exp < 16:
        return f"{mant}e{'+' if exp > 0 else '-'}{abs(exp)}"
    sign = "-" if mant.startswith("-") else ""
    mant = mant.lstrip("-")
    digits = mant.replace(".", "")
    point = (mant.index(".") if "." in mant else len(mant)) + exp
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    return f"{sign}{digits[:point]}.{digits[point:] or '0'}"


def _mend(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return _orjson_float(m.group(1))
    if m.group(2) is not None:
        return "null"
    return m.group(0)


def stdlib_dumps(obj: Any, indent: bool = False) -> bytes:
    """The standard library's encoding of ``obj`` with its floats mended to orjson's bytes
    (raises what the encoder raises for a type it does not know or a str it cannot encode)."""
    text = (_INDENTED if indent else _COMPACT).encode(obj)
    if _MAYBE.search(text):
        text = _TOKENS.sub(_mend, text)
    return text.encode("utf-8")


def use_orjson() -> None:
    """Import orjson now: the documents that follow are serialised by it (same bytes, faster)."""
    import orjson  # noqa: F401


def dumps(obj: Any, indent: bool = False) -> bytes:
    """``orjson.dumps(obj)`` (with ``indent``: ``option=OPT_INDENT_2 | OPT_NON_STR_KEYS``), by
    orjson when it is imported already, else by the standard library with its floats mended."""
    if "orjson" not in sys.modules:
        try:
            return stdlib_dumps(obj, indent)
        except (TypeError, ValueError, UnicodeEncodeError, RecursionError):
            pass
    import orjson

    if indent:
        return bytes(orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    return bytes(orjson.dumps(obj))
