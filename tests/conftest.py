"""Shared test helpers. Golden files are regenerated with ``pytest --update-golden``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bootlens.advise import RuleRegistry, advise
from bootlens.advise.base import Context, Finding, Rule
from bootlens.timeline.analyze import analyze_paths
from bootlens.core.model import Event, ParseResult, Stamp
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.read.reader import keywords
from bootlens.timeline.boots import index_keywords

ROOT = Path(__file__).parent
CORPUS = ROOT / "data" / "corpus"
GOLDEN = ROOT / "golden"
# Real logs of real boards (../shared beside the checkout: corpus/*.log, corpus/wild/ and its more/;
# CI has it there). They are read in place, never copied into the project. Without it the tests
# that read it skip, each with the one reason below, except in CI, where a missing corpus must
# fail: need_shared() is that rule, and every test that reads ../shared goes through it (or through
# needs_wild, its mark, or wild_log()).
SHARED = ROOT.resolve().parents[1] / "shared"
SHARED_CORPUS = SHARED / "corpus"
WILD = SHARED_CORPUS / "wild"
WILD_LOGS = sorted(WILD.glob("*.log")) if WILD.is_dir() else []
SHARED_MISSING = f"the shared corpus is not at {WILD}"
IN_CI = bool(os.environ.get("CI"))
needs_wild = pytest.mark.skipif(not WILD_LOGS and not IN_CI, reason=SHARED_MISSING)


def need_shared(path: Path) -> Path:
    """``path`` (a file or folder under ../shared) when it is there. Without the shared corpus the
    test skips with SHARED_MISSING (and fails in CI); with the corpus but not this file it fails:
    a test names a log the corpus does not have."""
    if path.exists():
        return path
    if not WILD_LOGS:
        if IN_CI:
            pytest.fail(f"{SHARED_MISSING} (CI must have it)")
        pytest.skip(SHARED_MISSING)
    pytest.fail(f"{path} is not in the shared corpus at {SHARED}")

# Every keyword `analyze` indexes while framing: the built-in parsers' and the boot splitter's
# (timeline.boots.index_keywords), then the reader's own (read.reader.OWN_PREFIXES).
INDEX_NEEDLES, INDEX_PREFIXES = keywords(*index_keywords(ParseOptions()))


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``bootlens ARGS...`` through the real entry point in a subprocess, output as text."""
    return subprocess.run([sys.executable, "-m", "bootlens.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def wild_log(num: str) -> Path:
    """The corpus log whose file name starts with ``num-`` (e.g. "14"), in the corpus or its
    second batch (``more/``)."""
    found = [*need_shared(WILD).glob(f"{num}-*.log"), *WILD.glob(f"more/{num}-*.log")]
    if len(found) != 1:
        pytest.fail(f"{len(found)} logs named {num}-*.log in {WILD} and {WILD / 'more'}, not one")
    return found[0]


# Real logs found for issue 28 that are not (yet) in the shared corpus: third-party files are
# never committed, so they live in a folder outside the project, with a MANIFEST.md of their
# sources and hand-measured facts; $BOOTLENS_EXTRA_LOGS names it (its subfolders are searched).
# Tests that read them skip without it.
EXTRA = Path(os.environ["BOOTLENS_EXTRA_LOGS"]) if os.environ.get("BOOTLENS_EXTRA_LOGS") else None


def extra_log(num: str) -> Path:
    """The extra log whose file name starts with ``num-``; skips the test without the folder."""
    if EXTRA is None or not EXTRA.is_dir():
        pytest.skip("BOOTLENS_EXTRA_LOGS does not name the folder of extra real logs")
    found = [p for p in EXTRA.rglob(f"{num}-*") if p.is_file()]
    if len(found) != 1:
        pytest.skip(f"extra log {num} not in {EXTRA}")
    return found[0]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite golden .expected.json files")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def stamp_dict(st: Stamp | None) -> Any:
    if st is None:
        return None
    d: dict[str, Any] = {"clock": st.clock.value, "ns": st.ns}
    if st.estimated:
        d["estimated"] = True
        d["error_ns"] = st.error_ns
    return d


def event_dict(e: Event) -> dict[str, Any]:
    d: dict[str, Any] = {
        "kind": e.kind.value,
        "name": e.name,
        "start": stamp_dict(e.start),
        "duration_ns": e.duration_ns,
        "line": e.line_no,
    }
    if e.end_line_no is not None:
        d["end_line"] = e.end_line_no
    if e.detail is not None:
        det = e.detail._asdict()
        if det.get("duration_bound") == "exact" and det.get("duration_error_ns") == 0:
            # UnitDetail's later fields at their defaults: the goldens written before them stay true
            del det["duration_bound"], det["duration_error_ns"]
        d["detail"] = det
    return d


def result_dict(r: ParseResult) -> dict[str, Any]:
    return {
        "events": [event_dict(e) for e in r.events],
        "facts": [{"key": f.key, "value": f.value, "line": f.line_no} for f in r.facts],
        "warnings": list(r.warnings),
    }


# --- shared by the reference-target and advisor tests ----------------------------------------

needs_qemu = pytest.mark.skipif(
    shutil.which("qemu-system-aarch64") is None or not Path("/usr/lib/u-boot/qemu_arm64/u-boot.bin").exists()
    or shutil.which("apt-get") is None,
    reason="qemu-system-arm and u-boot-qemu not installed (make test installs them)",
)

READY_OPTS = ParseOptions((MarkerSpec.parse("ready=APP READY"),))


def run_rule(rule: type[Rule], path: Path, ctx: Context | None = None,
             opts: ParseOptions = READY_OPTS) -> list[Finding]:
    """The findings of one rule alone (its own registry) over every boot of an input."""
    reg = RuleRegistry()
    reg.register(rule)
    return [f for b in analyze_paths([str(path)], opts).boots for f in advise(b, ctx, reg)]


def one(rule: type[Rule], path: Path, ctx: Context | None = None) -> Finding:
    """The one finding a rule makes on an input."""
    found = run_rule(rule, path, ctx)
    assert len(found) == 1, found
    return found[0]


# --- the systemd reference target's boot, shared by the tests that read one -------------------

SYSTEMD_TARGET = "qemu-x86_64-systemd"
# the target can be built and booted here (CI installs both; the build runs as root)
CAN_BUILD_SYSTEMD = shutil.which("qemu-system-x86_64") is not None and shutil.which("mmdebstrap") is not None \
    and os.geteuid() == 0


def boot_systemd_target(out: Path, *args: str) -> Path:
    """One real boot of the systemd reference target into ``out`` (boot.rec, and guest/ with the
    guest's own systemd-analyze and journal outputs), ``args`` given to ``bootlens target boot``."""
    out.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "target", "boot", SYSTEMD_TARGET, "-o",
                        str(out / "boot.rec"), "--collect", str(out / "guest"), "--timeout", "600", *args],
                       capture_output=True, timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return out


def systemd_first_line_ns(rec: Path) -> int:
    """The printk time of systemd's first kernel-log line in a recording of the systemd target (its
    initramfs is initramfs-tools, so this is the root's systemd), found as a person greps for it:
    the first ``[ T] systemd[1]:`` line. Without a "Startup finished" line the console's kernel
    figure ends there, after systemd's own clock started by systemd's early set-up (loading its
    libraries under TCG: longer the busier the host), so that figure is compared with this line,
    and systemd-analyze's only as a lower bound."""
    from bootlens.capture.recording import read_recording

    m = re.search(rb"\[\s*(\d+)\.(\d{6})\] systemd\[1\]: ", read_recording(str(rec)).data)
    assert m is not None, f"{rec}: no systemd[1] line"
    return int(m[1]) * 1_000_000_000 + int(m[2]) * 1_000


@pytest.fixture(scope="session")
def systemd_boot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A boot of the systemd reference target with the guest's views collected: the folder
    $BOOTLENS_SYSTEMD_BOOT names (one made earlier, to iterate), else one boot made here once per
    session (about a minute; the target is set up first when it is not). Tests that read it
    assert what holds of every boot of the target, never one boot's figures; they skip where the
    target can neither be booted nor built."""
    given = os.environ.get("BOOTLENS_SYSTEMD_BOOT")
    if given:
        if not (Path(given) / "boot.rec").is_file() or not (Path(given) / "guest").is_dir():
            pytest.fail(f"BOOTLENS_SYSTEMD_BOOT={given} holds no boot.rec and guest/ "
                        f"(`bootlens target boot {SYSTEMD_TARGET} -o DIR/boot.rec --collect DIR/guest`)")
        return Path(given)
    from bootlens.targets.qemu import rootfs_files

    if shutil.which("qemu-system-x86_64") is None or (not rootfs_files(SYSTEMD_TARGET) and not CAN_BUILD_SYSTEMD):
        pytest.skip(f"qemu-system-x86_64 and a set-up (or buildable) {SYSTEMD_TARGET} needed")
    if not rootfs_files(SYSTEMD_TARGET):
        r = subprocess.run([sys.executable, "-m", "bootlens.cli", "target", "setup", SYSTEMD_TARGET],
                           capture_output=True, timeout=3600)
        assert r.returncode == 0, r.stderr.decode()[-2000:]
    return boot_systemd_target(tmp_path_factory.mktemp("systemd-boot"))
