#!/usr/bin/env python3
"""Behaviour unchanged, checked: every output of bootlens over every log we have, byte for byte.

A refactor (moving code between modules, merging twins) must not change what a user sees. This
runs the installed ``bootlens`` over every input in tests/golden, tests/data, ../shared/corpus and
../shared/corpus/wild (and wild/more), and keeps, for each, what ``analyze --json``, ``advise
--json``, ``report`` (HTML, SVG, Perfetto) and ``compare`` (terminal and JSON) print or write,
with their standard error and exit code:

    python3 tools/snapshot.py record /tmp/snap-before     # before the change
    python3 tools/snapshot.py check  /tmp/snap-before     # after it: exit 1 on any difference

``check`` records into a temporary folder and names every output that differs (with the first
differing line). Inputs are named relative to the repository, and bootlens runs from its top,
so a snapshot recorded in one clone checks in another. Commands run two at a time (``--jobs``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
SHARED = TOP.parent / "shared" / "corpus"
SKIP_NAMES = {"README.md", "init.sh"}


def bootlens() -> str:
    for cand in (TOP / ".venv" / "bin" / "bootlens", shutil.which("bootlens")):
        if cand and Path(cand).exists():
            return str(cand)
    sys.exit("snapshot: no bootlens to run (make install first)")


def rel(p: Path) -> str:
    return os.path.relpath(p, TOP)


def inputs() -> list[str]:
    """Every single input: files, and folders that are one input (a run folder, a bootchart)."""
    found: list[Path] = []
    for root in (TOP / "tests" / "golden", TOP / "tests" / "data"):
        for p in sorted(root.rglob("*")):
            if p.name in SKIP_NAMES or p.name.endswith(".expected.json"):
                continue
            if p.is_dir() and (p / "run.json").exists():
                found.append(p)
            elif p.is_file() and p.parent.name != "ubuntu-8.10" and not (p.parent / "run.json").exists():
                found.append(p)
            elif p.is_dir() and p.name == "ubuntu-8.10":
                found.append(p)
    for folder in (SHARED, SHARED / "wild", SHARED / "wild" / "more"):
        found += sorted(p for p in folder.glob("*") if p.is_file() and p.name not in SKIP_NAMES)
    return [rel(p) for p in found]


def groups() -> list[list[str]]:
    """Inputs read together: a console log with its supplements, and compare's pairs."""
    g = TOP / "tests" / "golden"
    sa = sorted(rel(p) for p in (g / "systemd_analyze").glob("debian12-qemu.*") if not p.name.endswith(".expected.json"))
    ref = rel(TOP / "tests" / "data" / "supplements" / "reference-debian12-kernel.log")
    return [[ref, *sa], [rel(g / "bootchart" / "ubuntu-8.10"), ref]]


def pairs() -> list[list[str]]:
    r = TOP / "tests" / "data" / "rerun"
    c = SHARED
    return [
        [rel(r / "bootdelay-2"), rel(r / "bootdelay-0")],
        [rel(r / "quiet" / "bootdelay-2"), rel(r / "quiet" / "bootdelay-0")],
        [rel(c / "qemu-arm64-uboot.console.log"), rel(c / "qemu-arm64-uboot-initcall.grabserial-t.log")],
        [rel(c / "qemu-x86_64-initcall.console.log"), rel(c / "qemu-x86_64-tp_printk.console.log")],
        [rel(TOP / "tests" / "data" / "advise" / "qemu-arm64-run"), rel(r / "bootdelay-0")],
    ]


def jobs() -> list[tuple[str, list[str], str | None]]:
    """(key, argv after 'bootlens', output file suffix or None for stdout only)."""
    out: list[tuple[str, list[str], str | None]] = []
    for inp in inputs():
        key = inp.replace("/", "__")
        out.append((f"{key}.analyze.json", ["analyze", "--json", inp], None))
        out.append((f"{key}.advise.json", ["advise", "--json", inp], None))
        for fmt in ("html", "svg", "perfetto"):
            out.append((f"{key}.report.{fmt}", ["report", "--format", fmt, inp], fmt))
    for grp in groups():
        key = "+".join(p.replace("/", "__") for p in grp)
        out.append((f"{key}.analyze.json", ["analyze", "--json", *grp], None))
        out.append((f"{key}.advise.json", ["advise", "--json", *grp], None))
        out.append((f"{key}.report.html", ["report", "--format", "html", *grp], "html"))
    for pair in pairs():
        key = "+".join(p.replace("/", "__") for p in pair)
        out.append((f"{key}.compare.txt", ["compare", *pair], None))
        out.append((f"{key}.compare.json", ["compare", "--json", *pair], None))
    return out


def run_one(exe: str, dest: Path, key: str, argv: list[str], fmt: str | None) -> None:
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1", TERM="dumb")
    env.pop("BOOTLENS_CONFIG", None)
    with tempfile.TemporaryDirectory() as tmp:
        out_file = Path(tmp) / f"report.{fmt}"
        full = [exe, "--no-config", *argv] + (["-o", str(out_file)] if fmt else [])
        p = subprocess.run(full, cwd=TOP, env=env, capture_output=True, timeout=600)
        body = out_file.read_bytes() if fmt and out_file.exists() else b""
    text = b"$ bootlens " + " ".join(argv).encode() + b"\nrc=%d\n--- stderr\n" % p.returncode
    text += p.stderr.replace(str(out_file).encode(), b"<OUT>") + b"--- stdout\n" + p.stdout
    if fmt:
        text += b"--- " + fmt.encode() + b"\n" + body
    (dest / file_name(key)).write_bytes(text)


def file_name(key: str) -> str:
    """The output's file name: its key, or for a key past a file name's 255 bytes (a group of
    five inputs) its start and a hash of the whole."""
    if len(key.encode()) <= 200:
        return key
    return key[:150] + "~" + hashlib.sha256(key.encode()).hexdigest()[:16] + key[key.rindex("."):]


def record(dest: Path, workers: int, only: str | None) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    exe = bootlens()
    todo = [j for j in jobs() if only is None or only in j[0]]
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futs = [pool.submit(run_one, exe, dest, *j) for j in todo]
        for i, f in enumerate(concurrent.futures.as_completed(futs), 1):
            f.result()
            if i % 100 == 0:
                print(f"  {i}/{len(todo)}", file=sys.stderr)
    print(f"recorded {len(todo)} outputs in {dest}")


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def check(base: Path, workers: int, only: str | None) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        now = Path(tmp)
        record(now, workers, only)
        names = sorted({p.name for p in now.iterdir()} | ({p.name for p in base.iterdir()} if only is None else set()))
        bad = 0
        for name in names:
            a, b = base / name, now / name
            if not a.exists() or not b.exists():
                print(f"{'new' if b.exists() else 'gone'}: {name}")
                bad += 1
            elif digest(a) != digest(b):
                bad += 1
                la = a.read_bytes().decode("utf-8", "replace").splitlines()
                lb = b.read_bytes().decode("utf-8", "replace").splitlines()
                diff = list(difflib.unified_diff(la, lb, lineterm="", n=0))[2:6]
                print(f"differs: {name}\n    " + "\n    ".join(s[:300] for s in diff))
        print(f"{len(names) - bad} identical, {bad} different")
        return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["record", "check"])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", help="only the outputs whose name holds this text")
    a = ap.parse_args()
    if a.what == "record":
        record(a.folder, a.jobs, a.only)
        return 0
    return check(a.folder, a.jobs, a.only)


if __name__ == "__main__":
    sys.exit(main())
