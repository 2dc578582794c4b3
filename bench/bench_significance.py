#!/usr/bin/env python3
"""False positives and power of ``bootlens compare``'s significance rule, on real boots.

What it measures
    The data are tests/data/rerun: 12 boots of the reference target with U-Boot's bootdelay=2
    and 12 with bootdelay=0, booted interleaved by ``bootlens experiment`` on the shared 2-core
    machine (tests/data/rerun/README.md). Every per-boot figure (total, stages, marker) is read
    once; then the rule itself (bootlens.stats.compare.judge, on bootlens.stats.figures.stat of the figures)
    decides each comparison:

    1. False positives: one configuration against itself. Every way of splitting one
       configuration's 12 boots into two disjoint sets of N boots (N = 3, 4, 5; each split once,
       not also mirrored), for both configurations. A row is a false positive when it says
       "significant"; a comparison is one when any of its rows does. "Over 10 reruns" is
       1 - (1 - rate)^10.
    2. Power: the 2 s change. Every pair of 3 boots of bootdelay=2 against 3 of bootdelay=0
       (220 x 220 = 48,400): how often each row is significant, not significant, or asks for
       more boots.
    3. optimize's verdict (bootlens.experiment.measurement.decide: the stage a change targets,
       the total not worse, else the total): how often one configuration against itself is
       "kept" (for each stage a change could target), and how often the 2 s change, judged on
       the bootloader stage, is kept, undecided or not kept.

Run from the repository root (bootlens installed); --sizes and --limit trim the work (the full
run takes a few minutes on 2 cores):

    python bench/bench_significance.py
    python bench/bench_significance.py --sizes 3 --limit 5000
    python bench/bench_significance.py --data tests/data/rerun/quiet    # the quiet host's boots
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
from collections import Counter
from pathlib import Path

from bootlens.experiment.measurement import Measured, decide
from bootlens.stats import compare
from bootlens.stats.compare import Significance, judge
from bootlens.timeline.inputs import analyze_folder
from bootlens.stats.figures import Stat, boot_figures, stat

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "rerun"


def figures(folder: Path) -> tuple[list[str], list[list[int]]]:
    """Per-boot figures of a run folder: the names, then one row of values per boot."""
    boots = [boot_figures(b) for b in analyze_folder(folder).boots]
    names = [n for n in boots[0] if all(n in b for b in boots)]
    return names, [[b[n] for n in names] for b in boots]


def verdicts(a: list[list[int]], b: list[list[int]], rows: int) -> list[Significance]:
    out = []
    for r in range(rows):
        sa, sb = stat("a", [x[r] for x in a]), stat("b", [x[r] for x in b])
        assert isinstance(sa, Stat) and isinstance(sb, Stat)
        out.append(judge(sa, sb, sb.median - sa.median, alpha_need=compare.ALPHA).significance)
    return out


def measured(names: list[str], boots: list[list[int]]) -> Measured:
    """What decide() reads of a configuration's boots: their statistics, every boot at ready."""
    stats = {}
    for r, name in enumerate(names):
        st = stat(name, [b[r] for b in boots])
        assert isinstance(st, Stat)
        stats[name] = st
    return Measured(None, Path("."), None, stats, len(boots), len(boots))  # type: ignore[arg-type]


def splits(n_boots: int, n: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Disjoint (first, second) sets of n boots, each unordered pair once."""
    out = []
    for s1 in itertools.combinations(range(n_boots), n):
        rest = [i for i in range(n_boots) if i not in s1]
        out.extend((s1, s2) for s2 in itertools.combinations(rest, n) if s1 < s2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="3,4,5", help="boots a side for the false-positive part")
    ap.add_argument("--limit", type=int, default=0, help="at most this many comparisons per part (random, seed 1)")
    ap.add_argument("--data", type=Path, default=DATA, help="a folder with bootdelay-2/ and bootdelay-0/ "
                    "(default tests/data/rerun, booted on a loaded host; tests/data/rerun/quiet: a quiet one)")
    ap.add_argument("--alpha", type=float, default=compare.ALPHA, help="try another level than the rule's")
    args = ap.parse_args()
    compare.ALPHA = args.alpha
    rng = random.Random(1)
    names, slow = figures(args.data / "bootdelay-2")
    names0, fast = figures(args.data / "bootdelay-0")
    assert names == names0, (names, names0)
    rows = len(names)
    print(f"rows: {', '.join(names)}")
    t0 = time.perf_counter()
    for n in (int(x) for x in args.sizes.split(",")):
        row_fp: Counter[str] = Counter()
        comps = any_fp = 0
        for pool in (slow, fast):
            sp = splits(len(pool), n)
            if args.limit and len(sp) > args.limit // 2:
                sp = rng.sample(sp, args.limit // 2)
            for s1, s2 in sp:
                v = verdicts([pool[i] for i in s1], [pool[i] for i in s2], rows)
                comps += 1
                hit = [names[r] for r in range(rows) if v[r] is Significance.SIGNIFICANT]
                row_fp.update(hit)
                any_fp += bool(hit)
        rate = any_fp / comps
        print(f"same configuration, {n} boots a side: {comps} comparisons; any row significant in "
              f"{any_fp} ({100 * rate:.3f}%; over 10 reruns {100 * (1 - (1 - rate) ** 10):.1f}%); per row: "
              + ", ".join(f"{k.strip()} {100 * row_fp[k] / comps:.3f}%" for k in names))
    pairs = [(a, b) for a in itertools.combinations(range(len(slow)), 3)
             for b in itertools.combinations(range(len(fast)), 3)]
    if args.limit and len(pairs) > args.limit:
        pairs = rng.sample(pairs, args.limit)
    tally = [Counter[Significance]() for _ in names]
    for a, b in pairs:
        for r, v in enumerate(verdicts([slow[i] for i in a], [fast[i] for i in b], rows)):
            tally[r][v] += 1
    print(f"bootdelay=2 against bootdelay=0, 3 boots a side: {len(pairs)} comparisons")
    for r, k in enumerate(names):
        t = tally[r]
        print(f"  {k.strip():26s} significant {100 * t[Significance.SIGNIFICANT] / len(pairs):6.2f}%  "
              f"need more boots {100 * t[Significance.UNKNOWN] / len(pairs):6.2f}%  "
              f"not significant {100 * t[Significance.NOT_SIGNIFICANT] / len(pairs):6.2f}%")
    stages = [n for n in names if not n.startswith(("total ", "marker "))]
    for n in (int(x) for x in args.sizes.split(",")):
        kept: Counter[str] = Counter()
        comps = 0
        for pool in (slow, fast):
            sp = splits(len(pool), n)
            if args.limit and len(sp) > args.limit // 2:
                sp = rng.sample(sp, args.limit // 2)
            for s1, s2 in sp:
                a, b = measured(names, [pool[i] for i in s1]), measured(names, [pool[i] for i in s2])
                comps += 1
                for st in stages:
                    kept[st] += bool(decide(a, b, st).keep)
        print(f"optimize's verdict, same configuration, {n} boots a side: {comps} comparisons; kept when judged on "
              + ", ".join(f"{st} {100 * kept[st] / comps:.3f}%" for st in stages))
    verdict: Counter[str] = Counter()
    for a, b in pairs:
        d = decide(measured(names, [slow[i] for i in a]), measured(names, [fast[i] for i in b]), "bootloader")
        verdict["kept" if d.keep else "undecided" if d.keep is None else "not kept"] += 1
    print(f"optimize's verdict, bootdelay=0 judged on the bootloader stage, 3 boots a side: "
          + ", ".join(f"{k} {100 * verdict[k] / len(pairs):.2f}%" for k in ("kept", "undecided", "not kept")))
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
