"""The systemd rules (advise/rules/systemd_*.py) on real boots.

- The reference target's boot (qemu-x86_64-systemd, Debian 12, systemd 252): the console
  recording and the guest's own systemd-analyze/journal outputs (conftest.systemd_boot: one
  boot made per session, or $BOOTLENS_SYSTEMD_BOOT, as `bootlens target boot
  qemu-x86_64-systemd --collect` writes them); the tests skip where the target can neither be
  booted nor built, and assert what holds of every boot (a loaded host changes which target
  the app waited for last, and which status lines the console got). The slow tests boot the
  advisor's change, checking it with the guest's systemd-analyze.
- Wild corpus log 14 (Orange Pi Zero3, Arch Linux, systemd >= 250 console without unit names in
  most status lines), read in place. Facts by `grep -n`: "Starting Flush Journal to Persistent
  Storage..." at line 554, "Finished Flush Journal to Persistent Storage." at 563, "Starting
  Load/Save OS Random S" at 556 (the line cut by a kernel message), "Finished Load/Save OS
  Random Seed." at 562, "random: crng init done" at 559; "end0: configuring for phy/rgmii link
  mode" at 677 (the test's ready marker).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bootlens.advise import ChangeKind, Confidence, Context, Finding, RuleRegistry, advise, default_registry
from bootlens.advise.rules.systemd_app_order import SystemdAppOrder, rewrite_unit
from bootlens.advise.rules.systemd_getty import GettyBeforeApp
from bootlens.advise.rules.systemd_journal_flush import JournalFlush
from bootlens.advise.rules.systemd_maintenance import Maintenance
from bootlens.advise.rules.systemd_off_path import OffPath
from bootlens.advise.rules.systemd_random_seed import RandomSeed
from bootlens.advise.rules.systemd_ready_output import ReadyViaJournald
from bootlens.advise.rules.systemd_wait_online import WaitOnline
from bootlens.advise.systemd import (ASSUMED, after_map, app_needs, context_unit_files, model, parse_unit, unit_files,
                                     unit_runs)
from bootlens.capture.recording import RecordingWriter, line_times, read_recording
from bootlens.timeline.analyze import BootAnalysis, analyze_paths
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.targets.qemu import READY_MARKER, rootfs_files

from conftest import boot_systemd_target, needs_wild, wild_log
from test_systemd_target import CAN_BUILD

NAME = "qemu-x86_64-systemd"
RULES = (SystemdAppOrder, WaitOnline, Maintenance, GettyBeforeApp, JournalFlush, RandomSeed, OffPath,
         ReadyViaJournald)
READY = ParseOptions((MarkerSpec.parse(f"ready={READY_MARKER}"),))
# the target's unit files: filled by _target_files (below) once the target is set up, so that a
# fresh machine that can build it (CI) runs these tests instead of skipping them
FILES = rootfs_files(NAME)
needs_target = pytest.mark.skipif(not FILES and not CAN_BUILD,
                                  reason=f"{NAME} is not set up and cannot be built here")
needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None or (not FILES and not CAN_BUILD),
                                reason=f"qemu-system-x86_64 and a set-up (or buildable) {NAME} needed")


@pytest.fixture(scope="module", autouse=True)
def _target_files() -> None:
    """Set the target up when it is not and can be (a few minutes the first time: mmdebstrap
    builds its image), and fill FILES, which the tests marked needs_target read."""
    if not FILES and CAN_BUILD:
        r = subprocess.run([sys.executable, "-m", "bootlens.cli", "target", "setup", NAME], capture_output=True,
                           timeout=3600)
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        FILES.update(rootfs_files(NAME))
        assert FILES


def registry() -> RuleRegistry:
    reg = RuleRegistry()
    for r in RULES:
        reg.register(r)
    return reg


def ctx() -> Context:
    return Context(target=NAME, rootfs_files=FILES)


def boot_of(path: Path, opts: ParseOptions = READY) -> BootAnalysis:
    return analyze_paths([str(path)], opts).boots[0]


def by_rule(found: list[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in found:
        out.setdefault(f.rule, []).append(f)
    return out


def guest_chain(folder: Path) -> list[str]:
    """The units of the guest's `systemd-analyze critical-chain app.service`, top down."""
    text = (folder / "guest" / "analyze-critical-chain-app.txt").read_text()
    return [m[1] for ln in text.splitlines() if (m := re.match(r"^[\s└─│├]*([\w@.\\-]+\.\w+) @", ln))]


def blame(folder: Path) -> dict[str, float]:
    out = {}
    for ln in (folder / "guest" / "analyze-blame.txt").read_text().splitlines():
        m = re.match(r"\s*(?:(\d+)min )?([\d.]+)(ms|s) (\S+)", ln)
        if m:
            out[m[4]] = int(m[1] or 0) * 60 + float(m[2]) / (1000 if m[3] == "ms" else 1)
    return out


# --- the rules are registered and quiet where they do not apply ------------------------------


def test_rules_are_registered_once() -> None:
    ids = default_registry().ids()
    for r in RULES:
        assert ids.count(r.id) == 1


def test_no_systemd_no_findings() -> None:
    """The busybox reference target's boot (no units): none of the systemd rules speaks."""
    busybox = Path(__file__).parent / "data" / "advise" / "userspace-base.rec"
    assert not advise(boot_of(busybox), ctx(), registry())


# --- unit files ------------------------------------------------------------------------------


def test_unit_file_syntax_continuations_resets_and_dropins() -> None:
    f = parse_unit("[Unit]\nAfter=a.target \\\n  b.service\n# c\nWants=x.service\nWants=\nWants=y.service\n")
    assert f["Unit"]["After"][0].split() == ["a.target", "b.service"] and f["Unit"]["Wants"] == ["y.service"]
    uf = unit_files({"usr/lib/systemd/system/a.service": b"[Unit]\nAfter=x.target\n",
                     "etc/systemd/system/a.service.d/10-more.conf": b"[Unit]\nAfter=y.target\n",
                     "usr/lib/systemd/system/t@.service": b"[Unit]\nDescription=Thing on %I\n"})
    assert uf.values("a.service", "Unit", "After") == ["x.target", "y.target"]
    assert uf.resolve("Thing on ttyS0") == "t@ttyS0.service"
    assert uf.resolve("a.serv…") == "a.service"  # one unit fits the cut
    assert uf.resolve("t…on ttyS0") == "t…on ttyS0"  # the template and nothing else: kept as given


@needs_target
def test_the_targets_unit_files_and_links() -> None:
    uf = context_unit_files(ctx())
    assert "usr/local/sbin/bootlens-collect" not in FILES  # bootlens's own tool is not advised on
    assert "getty.target" in uf.wants["multi-user.target"]  # a /usr/lib .wants symlink
    assert {"apt-daily.timer", "apt-daily.service"} <= uf.masked  # the image masks them
    after = after_map(uf, ["app.service", "multi-user.target", "getty.target", "serial-getty@ttyS0.service"])
    assert {"multi-user.target", "network-online.target", "basic.target", "systemd-journald.socket"} <= set(
        after["app.service"])
    assert "getty.target" in after["multi-user.target"]  # a target after what it wants
    assert "systemd-user-sessions.service" in after["serial-getty@ttyS0.service"]  # the template's After=
    needs = app_needs(uf, FILES, "app.service")
    assert needs.known and needs.units == () and not needs.network  # `echo` and `sleep`: the root only


@needs_target
def test_rewrite_keeps_the_service_and_drops_the_late_order() -> None:
    uf = context_unit_files(ctx())
    text = FILES["etc/systemd/system/app.service"].decode()
    out = rewrite_unit(text, app_needs(uf, FILES, "app.service"), "systemd.app_order")
    unit = parse_unit(out)
    assert unit["Unit"]["DefaultDependencies"] == ["no"]
    assert "After" not in unit["Unit"] and "Wants" not in unit["Unit"]  # nothing it needs is late
    assert unit["Unit"]["Conflicts"] == ["shutdown.target"] and unit["Unit"]["Before"] == ["shutdown.target"]
    assert unit["Service"] == parse_unit(text)["Service"] and unit["Install"] == parse_unit(text)["Install"]


# --- the reference target's real boot --------------------------------------------------------


@needs_qemu
def test_the_after_map_holds_the_guests_own_chain(collected: Path) -> None:
    """Every link of the guest's `systemd-analyze critical-chain app.service` is, in the map built
    from the unit files, ordered after the link below it."""
    chain = guest_chain(collected)
    assert chain[0] == "app.service" and len(chain) >= 8
    uf = context_unit_files(ctx())
    after = after_map(uf, chain)
    for up, down in zip(chain, chain[1:]):
        if down.endswith((".mount", ".slice")) or up.endswith(".mount"):
            # mounts and slices: systemd's implicit dependencies, not in the unit files (a unit is
            # After= its slice, system.slice shows up in some boots' chains; local-fs.target is
            # After= every local mount, a mount After= local-fs-pre.target: the root's, and on a
            # slow boot the transient run-credentials-*.mount of systemd-tmpfiles-setup)
            continue
        assert down in after[up], (up, down)


@needs_qemu
def test_replay_without_changes_is_the_measured_boot(collected: Path) -> None:
    m = model(boot_of(collected / "boot.rec"), ctx())
    assert m is not None and m.app is not None and m.app.name == "app.service" and m.ready is not None
    assert m.saving() == 0  # nothing dropped, nothing reordered: the measured ready time
    assert not m.chain.estimated  # walked over the unit files' After= map
    names = {r.name for r in m.runs}
    assert {"systemd-user-sessions.service", "serial-getty@ttyS0.service",
            "systemd-networkd-wait-online.service"} <= names  # description-only and cut names resolved


@needs_qemu
def test_rules_on_the_reference_boot(collected: Path) -> None:
    b = boot_of(collected / "boot.rec")
    found = by_rule(advise(b, ctx(), registry()))
    m = model(b, ctx())
    assert m is not None and m.ready is not None and m.app is not None
    (order,) = found["systemd.app_order"]
    journald = m.by["systemd-journald.service"]
    # systemd starts the app once every unit it is After= is active: each of them the console
    # showed came first. Which came last is the boot's (multi-user.target, or network-online.target
    # up 1.7 s later), and a loaded host's console shows only some: systemd writes its status
    # lines without blocking and drops those the console cannot take (a boot of the target on a
    # fifth of a CPU lost "Reached target multi-user.target" and "Started app.service")
    up = {d: m.by[d].active_ns for d in m.after[m.app.name] if d in m.by}
    assert up and all(t <= m.app.start_ns for t in up.values()), (up, m.app)
    if m.app.result == ASSUMED:
        # no line of the app's start before its ready line: taken as started there, and replayed
        # right after journald (its console line), as test_a_capture_that_ends_at_the_ready_line
        expect = m.ready[0] - journald.active_ns
    else:
        # the replay: the app after journald, keeping the gap systemd took before it (its start -
        # the last of its After= units to become active) and the line's offset from its start
        gap = m.app.start_ns - max(up.values())
        expect = m.ready[0] - max(journald.active_ns + gap + (m.ready[0] - m.app.start_ns), journald.active_ns)
    assert order.saving_ns == expect and order.saving_ns > 0
    assert order.confidence is Confidence.MEDIUM and order.change.kind is ChangeKind.OVERLAY
    assert order.change.files[0][0] == "etc/systemd/system/app.service"
    assert b"DefaultDependencies=no" in order.change.files[0][1]
    assert {e.line_no for e in order.evidence} >= {m.app.line_no, m.ready[1]}
    # wait-online: behind multi-user.target in this boot, so no figure, but its time is blame's
    (wait,) = found["systemd.wait_online"]
    assert wait.change.value == "systemd.mask=systemd-networkd-wait-online.service"
    unit = m.by["systemd-networkd-wait-online.service"]
    guest = blame(collected)["systemd-networkd-wait-online.service"]
    assert abs(unit.duration_ns / 1e9 - guest) <= max(0.05, 0.1 * guest)
    assert (wait.saving_ns is None) == (m.saving(drop=[unit.name]) == 0)
    maint = {f.change.value: f for f in found["systemd.maintenance"]}
    assert {"systemd.mask=e2scrub_reap.service", "fsck.mode=skip"} <= set(maint)
    for f in maint.values():
        assert f.saving_ns is None or f.saving_ns > 0
    (flush,) = found["systemd.journal_flush"]
    assert flush.change.files[0][0] == "etc/systemd/journald.conf.d/50-bootlens-volatile.conf"
    assert b"Storage=volatile" in flush.change.files[0][1]
    (seed,) = found["systemd.random_seed"]
    assert not seed.change.automatic
    (getty,) = found["systemd.getty_before_app"]
    assert "systemd.mask=serial-getty@ttyS0.service" in getty.change.value.split()
    (off,) = found["systemd.off_path"]
    assert off.saving_ns is None and off.arithmetic.startswith("no estimate")
    assert "systemd.mask=sys-kernel-debug.mount" in off.change.value.split()
    for fs in found.values():
        for f in fs:
            assert f.evidence and f.arithmetic and f.tradeoff


def ready_first(boot: Path, out: Path) -> Path:
    """``boot``'s recording as optimize captures a boot (QEMU stopped at the ready line) when the
    console is flooded (the kernel's tracing on): journald's forward of the app's line came
    before systemd's lines for the app's start and for the targets it waited for, which the
    capture then never saw. Made from the real boot: its lines up to the ready line, each at the
    host time it arrived, without systemd's lines that name app.service, multi-user.target or
    graphical.target (one chunk a line, so that every kept line keeps its time)."""
    rec = read_recording(str(boot / "boot.rec"))
    lines, times = line_times(rec)
    ready = next(i for i, ln in enumerate(lines) if READY_MARKER.encode() in ln)
    late = re.compile(rb"\b(?:app\.service|multi-user\.target|graphical\.target)\b")
    w = RecordingWriter(str(out), rec.header)
    for ln, t in zip(lines[:ready + 1], times[:ready + 1]):
        if ln is lines[ready] or not late.search(re.sub(rb"\x1b\[[\d;]*m", b"", ln)):  # colours off
            w.chunk(t, ln)
    w.end(times[ready], "stopped at the ready line")
    w.close()
    return out


@needs_qemu
def test_a_capture_that_ends_at_the_ready_line(collected: Path, tmp_path: Path) -> None:
    """A boot of the target as optimize captures it (:func:`ready_first`): the app's start is
    not in the log, nor multi-user.target; the app is taken as started at its line (ASSUMED)."""
    b = boot_of(ready_first(collected, tmp_path / "ready-first.rec"))
    m = model(b, ctx())
    assert m is not None and m.ready is not None and m.app is not None
    assert m.app.result == ASSUMED and m.app.name == "app.service" and m.app.line_no == m.ready[1]
    assert "multi-user.target" not in m.by  # reached after the app's line
    assert m.saving() == 0  # nothing changed: the measured ready time, assumed start or not
    found = by_rule(advise(b, ctx(), registry()))
    (order,) = found["systemd.app_order"]
    journald = m.by["systemd-journald.service"].active_ns
    assert order.saving_ns == m.ready[0] - journald  # reordered: right after journald, no gap kept
    assert "the capture ends there" in order.arithmetic


@needs_qemu
def test_volatile_journal_is_not_flagged_again(collected: Path) -> None:
    """The rule reads journald's Storage= from the files: with the change laid over, no finding."""
    b = boot_of(collected / "boot.rec")
    files = {**FILES, "etc/systemd/journald.conf.d/50-bootlens-volatile.conf": b"[Journal]\nStorage=volatile\n"}
    assert not list(JournalFlush().check(b, Context(target=NAME, rootfs_files=files)))


# --- a wild board's console (no unit files) --------------------------------------------------


@needs_wild
def test_wild_console_named_by_description() -> None:
    b = boot_of(wild_log("14"), ParseOptions((MarkerSpec.parse("ready=end0: configuring for phy"),)))
    runs = {r.name: r for r in unit_runs(b, unit_files({}))}
    flush, seed = runs["systemd-journal-flush.service"], runs["systemd-random-seed.service"]
    assert (flush.line_no, flush.end_line_no) == (554, 563)
    assert (seed.line_no, seed.end_line_no) == (556, 562)
    found = by_rule(advise(b, Context(), registry()))
    assert set(found) == {"systemd.journal_flush", "systemd.random_seed"}
    for (f,) in found.values():
        assert f.saving_ns is None and "the unit that printed the ready line is not known" in f.arithmetic
    assert 559 in {e.line_no for e in found["systemd.random_seed"][0].evidence}  # crng init done
    assert not advise(boot_of(wild_log("14")), Context(), registry())  # no ready marker: nothing


# --- slow: a boot of the target made here, and the advisor's change booted ------------------


_boot = boot_systemd_target


@pytest.fixture(scope="module")
def fresh_boot(systemd_boot: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A boot of the target made by this session (the changed boots are compared with it): the
    session's (conftest.systemd_boot), or one more when $BOOTLENS_SYSTEMD_BOOT gave an older one."""
    if not os.environ.get("BOOTLENS_SYSTEMD_BOOT"):
        return systemd_boot
    return _boot(tmp_path_factory.mktemp("systemd-boot"))


@pytest.fixture(scope="module")
def collected(systemd_boot: Path) -> Path:
    """The boot the reference-boot tests read (conftest.systemd_boot)."""
    return systemd_boot


def _around(b: BootAnalysis, needle: str) -> str:
    """The console lines around each that holds ``needle`` (or the last lines when none does):
    what a failed assertion shows of a boot, since its folder is gone once CI ends."""
    text = b.boot.lines.text
    hits = [i for i, t in enumerate(text) if needle in t] or [len(text) - 1]
    return "\n".join(f"{j + 1}: {text[j]!r}" for i in hits[:5] for j in range(max(0, i - 4), min(len(text), i + 3)))


def _lay(changes: list[Finding], overlay: Path) -> Path:
    for f in changes:
        for path, data, _ in f.change.files:
            (overlay / path).parent.mkdir(parents=True, exist_ok=True)
            (overlay / path).write_bytes(data)
    return overlay


@pytest.fixture(scope="module")
def app_order_boot(fresh_boot: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Finding, Path]:
    """The advisor's app_order change on the fresh boot, laid over the image and booted."""
    (f,) = [f for f in advise(boot_of(fresh_boot / "boot.rec"), ctx(), registry()) if f.rule == SystemdAppOrder.id]
    out = tmp_path_factory.mktemp("app-order")
    return f, _boot(out / "after", "--rootfs-overlay", str(_lay([f], out / "overlay")))


@pytest.mark.slow
@needs_qemu
def test_app_order_change_booted(fresh_boot: Path, app_order_boot: tuple[Finding, Path]) -> None:
    """The advisor's app_order change on a fresh boot, laid over the image and booted: the app
    still prints APP READY, and the guest's own chain no longer runs through multi-user.target."""
    # the app is ordered after both: whichever became active last is on the guest's chain
    chain = guest_chain(fresh_boot)
    assert {"multi-user.target", "network-online.target"} & set(chain[:2]), chain
    f, after = app_order_boot
    assert f.saving_ns is not None and f.saving_ns > 0
    assert "APP READY" in (after / "guest" / "journal-short-monotonic.txt").read_text()
    new_chain = guest_chain(after)
    assert new_chain[0] == "app.service" and not {"multi-user.target", "network-online.target"} & set(new_chain)
    # the guest ran the replaced unit: systemd-analyze dump shows the app without its old order
    dump = (after / "guest" / "analyze-dump.txt").read_text()
    app = dump.split("-> Unit app.service:", 1)[1].split("-> Unit ", 1)[0]
    assert "After: multi-user.target" not in app and "After: network-online.target" not in app
    # the saving is tens of seconds against a run-to-run noise of a few: earlier on one boot each
    before, now = boot_of(fresh_boot / "boot.rec").total.duration_ns, boot_of(after / "boot.rec").total.duration_ns
    assert before is not None and now is not None and now < before


@pytest.mark.slow
@needs_qemu
def test_ready_output_once_the_app_starts_early(fresh_boot: Path, app_order_boot: tuple[Finding, Path],
                                                 tmp_path: Path) -> None:
    """With the app started early, its ready line waits for journald to forward it: the
    ready_output rule (silent on the stock boot, where journald is long up) sees it in the
    console line's identifier, and its drop-in, booted, puts the line straight on the console
    with the app still running."""
    order, after = app_order_boot
    files = {**FILES, **{p: d for p, d, _ in order.change.files}}
    b = boot_of(after / "boot.rec")
    m = model(b, Context(target=NAME, rootfs_files=files))
    assert m is not None and m.ready is not None and m.app is not None
    assert re.match(r"app\[\d+\]: APP READY", b.boot.lines.text[b.boot.lines.index_of(m.ready[1])].strip())
    (f,) = ReadyViaJournald().check(b, Context(target=NAME, rootfs_files=files))
    assert f.saving_ns is not None and f.saving_ns == m.ready[0] - m.app.start_ns > 0
    assert f.change.files[0][0] == "etc/systemd/system/app.service.d/50-bootlens-console.conf"
    assert b"StandardOutput=tty" in f.change.files[0][1] and "at most" in f.arithmetic
    # on the stock boot the app starts long after journald: nothing to say
    assert not list(ReadyViaJournald().check(boot_of(fresh_boot / "boot.rec"), ctx()))
    now = _boot(tmp_path / "tty", "--rootfs-overlay", str(_lay([order, f], tmp_path / "overlay")))
    nb = boot_of(now / "boot.rec")
    rm = model(nb, Context(target=NAME, rootfs_files={**files, **{p: d for p, d, _ in f.change.files}}))
    assert rm is not None and rm.ready is not None, _around(nb, "READY")
    line = nb.boot.lines.text[nb.boot.lines.index_of(rm.ready[1])].strip()
    assert line == "APP READY", line  # the program's own write, no journald identifier
    assert not list(ReadyViaJournald().check(nb, Context(target=NAME, rootfs_files=files)))
    units = (now / "guest" / "units.txt").read_text()
    assert re.search(r"^app\.service\s+loaded\s+active\s+running", units, re.M), units
    # the line now follows the app's start ("Started app.service") closely instead of journald's
    app = rm.by["app.service"]
    assert 0 <= rm.ready[0] - app.start_ns < f.saving_ns / 2, (app, rm.ready)
