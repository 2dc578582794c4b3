"""Fuzz bootlens with atheris (libFuzzer, coverage-guided): ``make fuzz``, or

    python3 fuzz/run.py [--target NAME] [--seconds N] [--runs N] [--workers N] [--max-len BYTES]
                        [--deep-every N] [--terminal-every N] [--no-recordings]

``--target`` picks the harness (fuzz/harness.py TARGETS): ``log`` (the default: console logs,
recordings, journals, LAVA job logs, logcat, EDK2) or a side format, read by its content alone
and attached to a real console log: ``systemd_analyze``, ``bootdata``, ``ftrace`` (and
trace-cmd's report), ``strace`` (and ltrace), ``logic`` (sigrok/Saleae CSV, VCD), ``bootchart``
(the input split into bootchartd's members, packed as its tar archive).

Every input of ``log`` goes through :func:`harness.check`: framing, every parser, the recording reader for
inputs that look like one, the JSON document; one input in ``--deep-every`` (default 4) also
through the HTML, SVG and Perfetto reports, the advisor and its JSON; one in
``--terminal-every`` of those (default 8) through the terminal listings. The seed corpus is the repository's test
inputs (tests/data, tests/golden), copied into a working corpus (fuzz/corpus/, fuzz/corpus-TARGET/, not committed)
that libFuzzer grows as it finds new coverage. A crash prints the input and its traceback, is
saved to fuzz/crashes/ (commit it: tests/test_fuzz.py replays every file there) and stops the
run with exit status 1. ``--workers N`` runs N fuzzers at once (one process each, its own libFuzzer
seed, one shared working corpus; a machine's cores are the limit) and sums their figures. At the
end the run prints one line of figures:

    fuzz: 123456 inputs in 1200 s (103/s), 0 crashes

Without atheris (``pip install atheris``) the script falls back to a seeded random mutator over
the same corpus (no coverage guidance), so the figures line is still printed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import subprocess
import shutil
import signal
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DICT = HERE / "bootlens.dict"  # the words and numbers the parsers look for
MAX_LEN = 1 << 14  # bytes: a small boot, or a window of a big one; longer inputs analyse slower
FIGURES = re.compile(r"fuzz: (\d+) inputs in \d+ s \(\d+/s\), (\d+) crashes")
COUNTS = {"inputs": 0, "crashes": 0}


def _prepare_corpus(corpus: Path, seeds: list[Path]) -> None:
    """The seeds in the working corpus (kept between runs), a longer one cut at line ends into
    windows of at most MAX_LEN bytes (its start, its end, and the bootloader-to-kernel handover)."""
    corpus.mkdir(parents=True, exist_ok=True)
    for p in seeds:
        data = p.read_bytes()
        for part in _windows(data):
            (corpus / f"seed-{hashlib.sha1(part).hexdigest()[:16]}").write_bytes(part)


def _windows(data: bytes) -> list[bytes]:
    if len(data) <= MAX_LEN:
        return [data]
    out = []
    for at in (0, data.find(b"Starting kernel"), data.find(b"Run /init"), len(data) - MAX_LEN):
        if at < 0:
            continue
        a = max(0, at - MAX_LEN // 2) if 0 < at < len(data) - MAX_LEN else at
        a = data.rfind(b"\n", 0, a) + 1 if a else 0
        part = data[a:a + MAX_LEN]
        out.append(part[: part.rfind(b"\n") + 1] or part)
    return out


def _save_crash(data: bytes, err: BaseException, target: str = "log") -> Path:
    out = HERE / "crashes"
    out.mkdir(exist_ok=True)
    kind = "" if target == "log" else f"{target}-"  # harness.target_of reads it back
    path = out / f"crash-{kind}{hashlib.sha1(data).hexdigest()[:16]}"
    path.write_bytes(data)
    return path


def _report(data: bytes, err: BaseException, target: str = "log") -> None:
    COUNTS["crashes"] += 1
    path = _save_crash(data, err, target)
    print(f"\nfuzz: CRASH on input {path} ({len(data)} bytes): {data[:300]!r}", file=sys.stderr)
    traceback.print_exception(err, file=sys.stderr)


def _figures(t0: float) -> str:
    dt = max(time.monotonic() - t0, 1e-9)
    n = COUNTS["inputs"]
    return f"fuzz: {n} inputs in {dt:.0f} s ({n / dt:.0f}/s), {COUNTS['crashes']} crashes"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="log", help="the harness: log (default), systemd_analyze, bootdata, "
                    "ftrace, strace, logic, bootchart")
    ap.add_argument("--seconds", type=int, default=1200, help="how long to run (default 1200)")
    ap.add_argument("--runs", type=int, default=0, help="stop after this many inputs (0: no limit)")
    ap.add_argument("--corpus", type=Path, default=None, help="working corpus folder (default fuzz/corpus, "
                    "fuzz/corpus-TARGET for the other targets)")
    ap.add_argument("--no-recordings", action="store_true", help="skip inputs that look like recordings")
    ap.add_argument("--deep-every", type=int, default=4, metavar="N",
                    help="reports and advisor for one input in N (default 4)")
    ap.add_argument("--terminal-every", type=int, default=8, metavar="N",
                    help="terminal listings for one in N of those (default 8; rich's layout is slow)")
    ap.add_argument("--random", action="store_true", help="the random mutator even when atheris is installed")
    ap.add_argument("--seed", type=int, default=1, help="seed of the fuzzer (libFuzzer's -seed, the random mutator's)")
    ap.add_argument("--workers", type=int, default=1, metavar="N", help="fuzzers run at once, one process each (default 1)")
    ap.add_argument("--max-len", type=int, default=MAX_LEN, metavar="BYTES",
                    help=f"longest input (default {MAX_LEN}); shorter inputs go faster")
    ap.add_argument("--corpus-ready", action="store_true", help=argparse.SUPPRESS)  # a worker of --workers
    args = ap.parse_args()
    if args.corpus is None:
        args.corpus = HERE / ("corpus" if args.target == "log" else f"corpus-{args.target}")
    if args.workers > 1:
        return _parallel(args)

    try:
        import atheris
    except ImportError:
        atheris = None
    if atheris is not None and not args.random:
        with atheris.instrument_imports(include=["bootlens"]):
            import harness
    else:
        import harness
    if args.target not in harness.TARGETS:
        ap.error(f"--target {args.target}: one of {', '.join(harness.TARGETS)}")
    target = harness.TARGETS[args.target]
    seeds = target.seeds() + harness.regressions(args.target)
    if not args.corpus_ready:
        _prepare_corpus(args.corpus, seeds)
    recordings = not args.no_recordings
    print(f"fuzz: {args.target}: {len(seeds)} seeds, corpus {args.corpus}, "
          f"{'atheris' if atheris and not args.random else 'random mutator'}",
          file=sys.stderr)
    t0 = time.monotonic()
    end = t0 + args.seconds

    def stop(status: int) -> None:
        """Print the figures and leave at once: libFuzzer exits from C, past Python's atexit."""
        print(_figures(t0))
        sys.stdout.flush()
        sys.stderr.flush()
        harness.cleanup()
        os._exit(status)

    # Interrupted (Ctrl-C, SIGTERM from --workers' parent or a CI job's timeout): the figures so
    # far, then exit 130/143. libFuzzer is told to leave both signals to Python (-handle_int=0).
    signal.signal(signal.SIGINT, lambda *_: stop(130))
    signal.signal(signal.SIGTERM, lambda *_: stop(143))

    def one(data: bytes) -> None:
        COUNTS["inputs"] += 1
        try:
            target.check(data, recordings, args.deep_every, args.terminal_every)
        except Exception as e:
            _report(data, e, args.target)
            stop(1)  # libFuzzer's own crash handling would print a second report
        if (args.runs and COUNTS["inputs"] >= args.runs) or (COUNTS["inputs"] % 64 == 0 and time.monotonic() > end):
            stop(0)

    if atheris is not None and not args.random:
        argv = [sys.argv[0], str(args.corpus), f"-max_len={args.max_len}", f"-seed={args.seed}", f"-dict={DICT}", "-print_final_stats=0", "-print_pcs=0",
                "-reload=0", "-timeout=60", "-handle_int=0", "-handle_term=0", "-rss_limit_mb=4096", "-len_control=200"]
        atheris.Setup(argv, one)
        atheris.Fuzz()
    else:
        _random_run(one, sorted(args.corpus.iterdir()), args.seconds, args.runs, args.seed, args.max_len)
    stop(0)
    return 0


def _parallel(args: argparse.Namespace) -> int:
    """N fuzzers at once, each this script in a process of its own with its own seed, over the one
    working corpus (prepared here, before they start); their figures summed into the one line."""
    sys.path.insert(0, str(HERE))
    import harness

    _prepare_corpus(args.corpus, harness.TARGETS[args.target].seeds() + harness.regressions(args.target))
    t0 = time.monotonic()
    base = [a for a in sys.argv[1:]]
    procs = []

    def interrupted(signum: int, _frame: object) -> None:
        """Each worker prints its figures and ends (a Ctrl-C reaches them directly, too)."""
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    for i in range(args.workers):
        argv = [sys.executable, str(Path(__file__).resolve()), *base, "--workers", "1", "--seed", str(args.seed + i), "--corpus-ready"]
        if args.runs:
            argv += ["--runs", str(-(-args.runs // args.workers))]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, text=True))
    status = 0
    for i, p in enumerate(procs, 1):
        out, _ = p.communicate()
        m = FIGURES.search(out or "")
        if m is None:
            print(f"fuzz: worker {i} ended with status {p.returncode} and no figures", file=sys.stderr)
            status = 1
            continue
        for key, value in zip(("inputs", "crashes"), m.groups()):
            COUNTS[key] += int(value)
        status = status or p.returncode
    print(_figures(t0) + f" ({args.workers} workers)")
    return status or (1 if COUNTS["crashes"] else 0)


def _dictionary() -> list[bytes]:
    """The tokens of fuzz/bootlens.dict (libFuzzer's format: one quoted string a line, \\xNN escapes)."""
    out = []
    for line in DICT.read_text().splitlines():
        line = line.strip()
        if line.startswith('"') and line.endswith('"'):
            out.append(line[1:-1].encode().decode("unicode_escape").encode("latin-1"))
    return out


def _random_run(one: object, corpus: list[Path], seconds: int, runs: int, seed: int, max_len: int) -> None:
    """Byte and line mutations of the corpus: what libFuzzer does, without its coverage guidance."""
    assert callable(one)
    rnd = random.Random(seed)
    pool = [p.read_bytes() for p in corpus] or [b"\n"]
    tokens = _dictionary() + [b"9" * 4301, b"\n", b"[", b"]"]
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end and (not runs or n < runs):
        data = bytearray(rnd.choice(pool))
        for _ in range(rnd.randint(1, 8)):
            op = rnd.random()
            pos = rnd.randint(0, len(data))
            if op < 0.4:
                data[pos:pos] = rnd.choice(tokens)
            elif op < 0.6 and data:
                del data[pos:pos + rnd.randint(1, 64)]
            elif op < 0.8 and data:
                data[min(pos, len(data) - 1)] = rnd.randrange(256)
            else:
                other = rnd.choice(pool)
                a = rnd.randint(0, len(other))
                data[pos:pos] = other[a:a + rnd.randint(1, 4096)]
        one(bytes(data[:max_len]))
        n += 1


if __name__ == "__main__":
    sys.exit(main())
