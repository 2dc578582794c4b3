"""What a traced call's arguments say, as strace and ltrace print them: the strings (C escapes
undone, strace's "..." cut marks kept apart), the first path, the file descriptor with its -y
path, and the text a libc call wrote (printf's format filled in with the arguments ltrace shows,
puts's line, fwrite's size x count bytes). Read by :mod:`.summary`; no knowledge of processes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...core.numbers import INT_MAX, INT_MIN, to_int
from .reader import Call

# ltrace: the libc calls that write text, by the argument that holds it and how to read it:
# "line" (puts adds a newline), "text", "count" (fwrite's size * count bytes of it), "format" (a
# printf format, expanded with the arguments ltrace shows). Those that name a FILE * are kept too:
# ltrace shows the stream as an address, stdout's and a file's alike, and a text written to a file
# places the trace only if the console shows the same line. ltrace.conf (0.7) gives puts, printf,
# fprintf, fputs, fwrite, fwrite_unlocked their text; the others (fputs_unlocked, _FORTIFY_SOURCE's
# __printf_chk and __fprintf_chk) show an address unless ltrace is given a prototype (-F FILE).
LIB_OUTPUTS: dict[str, tuple[int, str]] = {
    "puts": (0, "line"), "printf": (0, "format"), "__printf_chk": (1, "format"), "fputs": (0, "text"),
    "fputs_unlocked": (0, "text"), "fwrite": (0, "count"), "fwrite_unlocked": (0, "count"),
    "fprintf": (1, "format"), "__fprintf_chk": (2, "format"), "dprintf": (1, "format"),
    "__dprintf_chk": (2, "format")}
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"(\.\.\.)?')  # applied from a quote known to open a string
MAX_STRINGS = 64  # strings read from one call's arguments (an execve's argv)
_ESC = re.compile(r"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)")
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "\\": "\\", '"': '"', "'": "'"}
_FD = re.compile(r"\s*(-?\d+)(?:<((?:[^<>]|<[^<>]*>)*)>)?")


def unescape(s: str) -> str:
    """An strace string's text (``\\n``, ``\\x1b``, octal ``\\177``)."""
    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e in _SIMPLE:
            return _SIMPLE[e]
        if e[0] == "x" and len(e) == 3:
            return chr(int(e[1:], 16))
        if e.isdigit():
            return chr(int(e, 8) & 0xFF)
        return e
    return _ESC.sub(one, s)


def quoted_strings(args: str) -> list[str]:
    out: list[str] = []
    i = args.find('"')
    while i >= 0 and len(out) < MAX_STRINGS:
        # strace closes every string it opens; matching from each opening quote only (never
        # from a quote inside a string) keeps a line of escaped quotes linear
        m = _QUOTED.match(args, i)
        if m is None:
            break
        out.append(unescape(m.group(1)) + ("..." if m.group(2) else ""))
        i = args.find('"', m.end())
    return out


def first_path(args: str) -> str | None:
    i = args.find('"')
    m = _QUOTED.match(args, i) if i >= 0 else None
    return unescape(m.group(1)) if m else None


def _split_args(args: str) -> list[str]:
    """An argument list as its top-level arguments: commas inside strings, braces and brackets
    do not split."""
    out: list[str] = []
    depth, start, i, n = 0, 0, 0, len(args)
    while i < n:
        ch = args[i]
        if ch in "\"'":
            j = i + 1
            while j < n and args[j] != ch:
                j += 2 if args[j] == "\\" else 1
            i = j
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(args[start:i].strip())
            start = i + 1
        i += 1
    tail = args[start:].strip()
    if tail or out:
        out.append(tail)
    return out


def _string_arg(arg: str) -> str | None:
    """A string argument's text ("..." when ltrace cut it), None when it is not a string."""
    m = _QUOTED.fullmatch(arg)
    return None if m is None else unescape(m.group(1)) + ("..." if m.group(2) else "")


_CONVERSION = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d*))?(hh|h|ll|l|j|z|t|L)?([diouxXcs%])")


def _printf(fmt: str, args: Sequence[str]) -> str | None:
    """A printf format expanded with the arguments as ltrace shows them (numbers, "strings",
    'c'), None when it cannot be done exactly (a conversion or an argument not read, a cut
    string)."""
    out: list[str] = []
    k = pos = 0
    for m in _CONVERSION.finditer(fmt):
        if "%" in fmt[pos:m.start()]:
            return None  # a conversion the pattern does not know (%f, %p, %*d)
        out.append(fmt[pos:m.start()])
        pos = m.end()
        flags, width, prec, _, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if k >= len(args):
            return None
        a = args[k]
        k += 1
        spec = "%" + flags + width + ("" if prec is None else "." + prec)
        try:
            if conv == "s":
                text = _string_arg(a)
                if text is None or text.endswith("..."):
                    return None
                out.append((spec + "s") % text)
            elif conv == "c":
                ch = _string_arg('"' + a[1:-1] + '"') if len(a) >= 3 and a[0] == a[-1] == "'" else None
                if ch is None or len(ch) != 1:
                    return None
                out.append((spec + "c") % ch)
            else:
                out.append((spec + ("d" if conv in "iu" else conv)) % int(a, 0))
        except (ValueError, TypeError, OverflowError):
            return None
    if "%" in fmt[pos:]:
        return None
    out.append(fmt[pos:])
    return "".join(out)


def lib_output(c: Call) -> str | None:
    """The text an ltrace'd output call (:data:`LIB_OUTPUTS`) wrote: exact when ltrace shows it
    whole (a printf format expanded, and its length the call's result), else the part before what
    cannot be read, ending in "..." (a prefix, as strace's cut strings); "" when nothing of it
    can place the trace; None when ltrace shows no text (an address: the call has no prototype)."""
    at, how = LIB_OUTPUTS[c.name]
    args = _split_args(c.args)
    text = _string_arg(args[at]) if at < len(args) else None
    if text is None:
        return None
    if how == "line":
        return text if text.endswith("...") else text + "\n"
    if how == "count" and not text.endswith("...") and len(args) > at + 2:
        try:
            text = text[:int(args[at + 1], 0) * int(args[at + 2], 0)]
        except ValueError:
            pass
        return text
    if how != "format" or text.endswith("..."):
        return text if how != "format" else _literal(text)
    done = _printf(text, args[at + 1:])
    if done is not None and (c.ret_int is None or c.ret_int == len(done.encode("utf-8", "surrogateescape"))):
        return done
    return _literal(text)


def _literal(fmt: str) -> str:
    """A format's text before its first conversion: a whole line when a newline comes first, else a
    prefix ("..."), or "" when nothing is before it."""
    head = fmt.split("%", 1)[0] if "%" in fmt else fmt.removesuffix("...")
    if "\n" in head:
        return head
    return head + "..." if head.strip() else ""


def fd_arg(arg: str) -> tuple[int | None, str | None]:
    """An fd argument as (number, -y path): ``3``, ``3</dev/console>``, ``AT_FDCWD``."""
    m = _FD.match(arg)
    if m is None:
        return None, None
    # -yy adds the device after the path: "/dev/null<char 1:3>"; an fd is a C int
    fd = to_int(m.group(1), INT_MAX, INT_MIN)
    if fd is None:
        return None, None
    return fd, None if m.group(2) is None else m.group(2).split("<", 1)[0]
