"""Text from a log made safe to show to a person: every renderer that shows text (terminal,
HTML report, SVG) passes it through :func:`visible`.

A console line can carry characters that are drawn as nothing but change what is drawn
around them: bidi controls (U+202E RIGHT-TO-LEFT OVERRIDE makes ``evil_init`` read as
``tini_live``, U+2066-U+2069 isolates, U+200E/U+200F/U+061C marks), zero-width characters
(U+200B, U+2060, U+FEFF), tag characters, C1 controls (U+0080-U+009F; U+0085 is a line break
to some readers) and line or paragraph separators (U+2028, U+2029). They are shown as escapes
instead (``\\u202e``, ``\\x85``), so the reader sees that the text holds them and what it says.

What is kept: tab and newline (tooltips are several lines), and every printable character.
C0 controls and ANSI escapes are already removed from log text when it is read
(:mod:`bootlens.read.reader`); they are escaped here too, for text that came another way (a file name,
a recording's notes). Lone surrogates (undecodable file-name bytes) are left to the output's own
encoding (the SVG writes U+FFFD, :func:`bootlens.core.errors.printable` too).

Machine-readable outputs (``--json``, Perfetto) keep the text as it was: JSON escapes are
unambiguous, and a tool reading them wants the log's own characters.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

# Unicode general categories drawn as nothing: controls, format characters, line and paragraph
# separators.
_HIDDEN = frozenset(("Cc", "Cf", "Zl", "Zp"))
_KEEP = frozenset("\t\n")


def _escape(c: str) -> str:
    o = ord(c)
    return f"\\x{o:02x}" if o <= 0xFF else f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}"


def visible(s: str) -> str:
    """``s`` with every invisible control or formatting character shown as an escape
    (U+202E as ``\\u202e``); idempotent, and ``s`` itself when it has none."""
    # the common cases, in C: no control, format or separator character but tabs and newlines
    # (a tooltip's lines)
    if s.isprintable() or s.replace("\n", " ").replace("\t", " ").isprintable():
        return s
    return "".join(_escape(c) if c not in _KEEP and not c.isprintable() and unicodedata.category(c) in _HIDDEN
                   else c for c in s)


# SGR ("select graphic rendition": colours, bold) is the one terminal sequence a console line may
# keep on its way to the user's terminal: it changes how text looks, never where it goes or what
# the terminal is (a title, a cleared screen, the alternate screen, a keyboard mode).
_SGR = re.compile(r"\x1b\[[0-9;:]*m")


def visible_terminal(s: str) -> str:
    """``s`` as :func:`visible` shows it, for a terminal that draws it live (``capture``'s echo of
    a device's console): every control character shown as an escape (ESC as ``\\x1b``, so
    ``ESC]0;title BEL`` prints as ``\\x1b]0;title\\x07`` and sets no title), except colour
    sequences (SGR, ``ESC[...m``), carriage returns (a progress line redrawn) and what
    :func:`visible` keeps (tab, newline)."""
    if s.isprintable() or s.replace("\n", " ").replace("\t", " ").isprintable():
        return s
    out: list[str] = []
    at = 0
    for m in _SGR.finditer(s):
        out.append(_visible_cr(s[at:m.start()]))
        out.append(m.group())
        at = m.end()
    out.append(_visible_cr(s[at:]))
    return "".join(out)


def _visible_cr(s: str) -> str:
    return "\r".join(visible(p) for p in s.split("\r")) if "\r" in s else visible(s)


def visible_data(obj: Any) -> Any:
    """Every string in a JSON-like value (dicts, lists, strings, numbers) through :func:`visible`;
    dict keys are the renderer's own and stay as they are. A list with nothing to escape is
    returned itself, not copied."""
    t = type(obj)
    if t is str:
        return visible(obj)
    if t is dict:
        return {k: visible_data(v) for k, v in obj.items()}
    if t is list or t is tuple:
        # the report's columns are long (a million numbers, two million log lines): a list of
        # numbers, or of strings that need no escape, comes back as it is, checked in C (the
        # types by map/set, the strings joined a block at a time); the rest a call per string
        types = set(map(type, obj))
        if types <= _PLAIN or (types <= _PLAIN_STR and _printable(
                [v for v in obj if type(v) is str] if len(types) > 1 else obj)):
            return obj if t is list else list(obj)
        return [v if type(v) in _PLAIN else visible(v) if type(v) is str else visible_data(v) for v in obj]
    return obj


def _printable(strs: list[str] | tuple[str, ...]) -> bool:
    """True when :func:`visible` leaves every one of ``strs`` as it is."""
    for j in range(0, len(strs), _BLOCK):
        s = "".join(strs[j:j + _BLOCK])
        if not (s.isprintable() or s.replace("\n", " ").replace("\t", " ").isprintable()):
            return False
    return True


_BLOCK = 4096  # strings joined at a time: a few hundred kB, not a copy of the whole log
_PLAIN = frozenset((int, float, bool, type(None)))
_PLAIN_STR = _PLAIN | {str}
