"""The keyword grep's one search of a TextColumn's buffer (native/src/read/grep.rs ``candidates``:
Teddy over the whole buffer, then the lines a match touches) finds the lines ``needle in text``
finds, on every corpus and golden log."""

from __future__ import annotations

from pathlib import Path
import random
import re

import pytest
from conftest import CORPUS, GOLDEN, WILD_LOGS

from bootlens.read import reader as L
from bootlens.core import lines as LC
from bootlens.advise.rules import _kernel as K
from bootlens.timeline.analyze import analyze_paths

INPUTS = sorted(CORPUS.glob("*.log")) + sorted(GOLDEN.glob("*/*.log")) + WILD_LOGS


def _needles(texts: list[str]) -> list[str]:
    """The advisor's needles, frequent and one-byte ones, ones across a line's end, and more than
    one Teddy pass holds (64)."""
    from bootlens.advise.console import NEEDLES as CONSOLE

    words = sorted({w for t in texts[:3000] for w in re.findall(r"[A-Za-z_:]{4,}", t)})
    rng = random.Random(3)
    return [*CONSOLE, *K.NEEDLES, "call", "usecs", ": ", "e", "0", "] ", "\n", "[", "initcall ", "alg: ",
            *rng.sample(words, min(80, len(words)))]


@pytest.mark.parametrize("log", INPUTS, ids=lambda p: p.name)
def test_grep_of_the_buffer_is_the_line_by_line_grep(log: Path) -> None:
    ba = analyze_paths([str(log)]).boots[0]
    col = ba.boot.lines.text  # a TextColumn, but for a framing the native pass does not know
    assert type(col).__name__ == "TextColumn" or CORPUS not in log.parents
    texts = list(col)
    needles = _needles(texts)
    want = [[i for i, t in enumerate(texts) if n in t] for n in needles]
    assert [list(h) for h in LC.grep(col, needles)] == want
    assert [list(h) for h in LC.grep(col[5:len(col) - 5], needles[:20])] == [
        [i - 5 for i in w if 5 <= i < len(col) - 5] for w in want[:20]]


def test_grep_reads_rewritten_lines() -> None:
    """A line rewritten in place (quirks.settle) is searched in its new text, not the buffer's."""
    ba = analyze_paths([str(CORPUS / "qemu-x86_64-initcall.console.log")]).boots[0]
    col = ba.boot.lines.text[:]
    col[3] = "now alg: self-tests disabled here"
    col[4] = "nothing"
    texts = list(col)
    needles = ["alg: ", "call", "nothing", "usecs", ""]
    assert [list(h) for h in LC.grep(col, needles)] == [[i for i, t in enumerate(texts) if n in t] for n in needles]
