"""Side format: strace and ltrace outputs of an application's start, and their place on a boot.

This module is the format's light part: its declaration (``FORMAT``) and whether a text may be
strace or ltrace output, without importing the reader. Every input of ``bootlens analyze`` is
sniffed, and :func:`bootlens.sources.strace.reader.sniff` needs the reader's whole line grammar
(a dozen patterns, ~5 ms to import on a slow 2-core machine). :func:`sniff_strace` first asks
what that sniff cannot do without: it says yes only with a finished call (its result follows the
closing parenthesis, ``) = 3``) or a resumed one (``<... read resumed>``). A console log without
either is answered here; anything else goes to the reader's sniff, so the answer is always the
reader's.
"""

from __future__ import annotations

import re

from ..base import REGISTRY, Head, SideFormat

# what _result (") = ..." from the right) or _RESUMED needs somewhere in the text; \s and
# str.strip() agree on what a blank is (both Py_UNICODE_ISSPACE)
_MAY_BE = re.compile(r"\)\s*=|<\.\.\. ")


def sniff_strace(head: str) -> bool:
    """True when the text's first lines are strace or ltrace output (:func:`bootlens.sources.strace.reader.sniff`)."""
    if _MAY_BE.search(head) is None:
        return False
    from .reader import sniff

    return sniff(head)


def _sniff(path: str, head: Head) -> str | None:
    return "strace" if sniff_strace(head.text) else None


# strace -ff writes one file per process: the files given are read as one trace
FORMAT = REGISTRY.register(SideFormat("strace", sniff_order=40, attach_order=40, sniff=_sniff, together=True))
