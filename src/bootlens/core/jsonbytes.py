"""JSON bytes exactly as orjson writes them, without importing orjson for a small document.

Importing orjson costs ~20 ms on the reference machine (its init imports dataclasses with inspect,
uuid with platform, datetime and json): more than the rest of ``bootlens analyze`` of a small log
(docs/performance.md, step 23). The standard library's C encoder writes the same
bytes for every str, int, bool, None, list, tuple and dict (keys included: orjson is used with
OPT_NON_STR_KEYS) except floats: orjson writes repr's shortest digits positionally from 1e-5 up to
1e16 and with an unpadded exponent elsewhere (``1.5e-7``, ``1e+16``), and NaN and the infinities as
null. One pass over the encoder's number tokens (strings skipped whole) mends those (not a float
used as a dict key, which the documents never hold: the key is a string by then). A document
holding anything else (a type the standard library does not encode, a str that is not valid
UTF-8) goes to orjson, whose answer (or error) it always was. tests/test_jsonbytes.py compares
the two on random floats, every string shape and every corpus log's document.

The ``json`` package itself is not imported either (1.7 ms with the six patterns its modules
compile: step 25): the compact form is its C encoder, ``_json.make_encoder``, made as
``json.JSONEncoder.iterencode`` makes it and checked once against known bytes (any other answer,
as on a Python whose private signature changed, and the ``json`` package is used); the indented
form, which ``json`` writes in pure Python anyway, is :func:`_indented` below, floats written
straight in orjson's form.

A caller about to write many documents calls :func:`use_orjson`: orjson is then faster than the
standard library plus the mending, and the bytes are the same.
"""

from __future__ import annotations

import sys

from .lazyre import lazy

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    import re

_INF = float("inf")


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


def _float(f: float) -> str:
    """A float as orjson writes it: repr's digits without an exponent from 1e-5 up to 1e16,
    NaN and the infinities as null."""
    if f != f or f == _INF or f == -_INF:
        return "null"
    text = float.__repr__(f)
    return _orjson_float(text) if "e" in text else text


def _mend(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return _orjson_float(m.group(1))
    if m.group(2) is not None:
        return "null"
    return m.group(0)


def _refuse(o: Any) -> Any:
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


_compact: Callable[[Any], str] | None = None
# a JSON string token (skipped whole), a float written with an exponent, or a non-finite float
_TOKENS = lazy(r'"[^"\\]*(?:\\.[^"\\]*)*"|(-?[0-9.]+e[-+][0-9]+)|(NaN|-?Infinity)')
# the pre-check: no match, nothing to mend (and the pass above, a call per string token, not run)
_MAYBE = lazy(r"[0-9]e[-+]|NaN|Infinity")
try:
    from _json import encode_basestring as _STR
except ImportError:  # a Python without the C accelerator: the json package's own
    from json.encoder import py_encode_basestring as _STR


def _compact_encoder() -> Callable[[Any], str]:
    """The compact encoder: ``_json.make_encoder`` as json.JSONEncoder(ensure_ascii=False,
    separators=(",", ":")).encode makes it (no circular check: a cycle is a RecursionError, which
    dumps hands to orjson), when it gives the known bytes of a probe document; else that
    JSONEncoder's encode itself."""
    global _compact
    if _compact is None:
        try:
            from _json import make_encoder

            # markers, default, encoder, indent, key_separator, item_separator, sort_keys, skipkeys, allow_nan
            enc = make_encoder(None, _refuse, _STR, None, ":", ",", False, False, True)

            def fast(o: Any) -> str:
                return "".join(enc(o, 0))

            if fast({"a": [1, 2.5, None, True, "\u00e9\n"], 3: {}}) != '{"a":[1,2.5,null,true,"\u00e9\\n"],"3":{}}':
                raise TypeError("not the known bytes")
            _compact = fast
        except Exception:  # another Python's private encoder: the json package, as documented above
            import json

            _compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    return _compact


def _key(k: Any) -> str:
    """A dict key as orjson's OPT_NON_STR_KEYS (and json) write it: a str as itself, an int, a
    bool or None as its JSON text in quotes; TypeError for a float or anything else, where the
    two differ."""
    if isinstance(k, str):
        return _STR(k)
    if k is True or k is False or k is None:
        return f'"{"true" if k is True else "false" if k is False else "null"}"'
    if isinstance(k, int):
        return f'"{int.__repr__(k)}"'
    raise TypeError(f"keys must be str, int, bool or None, not {type(k).__name__}")


def _indented(o: Any, pad: str, out: list[str]) -> None:
    """``o`` as orjson's OPT_INDENT_2 | OPT_NON_STR_KEYS writes it (json.dumps(indent=2) with
    orjson's floats), appended to ``out``; raises TypeError for a type neither writes alike, and
    RecursionError for a cycle, as the json package does."""
    if isinstance(o, str):
        out.append(_STR(o))
    elif o is None:
        out.append("null")
    elif o is True:
        out.append("true")
    elif o is False:
        out.append("false")
    elif isinstance(o, int):
        out.append(int.__repr__(o))
    elif isinstance(o, float):
        out.append(_float(o))
    elif isinstance(o, (list, tuple, dict)):
        pairs = isinstance(o, dict)
        if not o:
            out.append("{}" if pairs else "[]")
            return
        inner = pad + "  "
        out.append(("{\n" if pairs else "[\n") + inner)
        for n, v in enumerate(o.items() if isinstance(o, dict) else o):
            if n:
                out.append(",\n" + inner)
            if pairs:
                k, v = v
                out.append(_key(k) + ": ")
            _indented(v, inner, out)
        out.append("\n" + pad + ("}" if pairs else "]"))
    else:
        _refuse(o)


def stdlib_dumps(obj: Any, indent: bool = False) -> bytes:
    """The standard library's encoding of ``obj`` with its floats written as orjson writes them
    (raises what the encoder raises for a type it does not know or a str it cannot encode)."""
    if indent:
        out: list[str] = []
        _indented(obj, "", out)
        return "".join(out).encode("utf-8")
    text = _compact_encoder()(obj)
    # the patterns are compiled only for a text holding what they could match ("free-running"
    # holds "e-": then the exact pre-check decides)
    if ("e-" in text or "e+" in text or "NaN" in text or "Infinity" in text) and _MAYBE.search(text):
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
