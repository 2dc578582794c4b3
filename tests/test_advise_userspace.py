"""The user-space rules on real boots of the qemu-arm64 reference target.

userspace-base.rec: the reference initramfs booted with the process trace events
(`--append "trace_event=sched:... tp_printk" --uboot-env bootdelay=2`); userspace-applied.rec: the
same with every overlay these rules wrote for that boot laid over the initramfs.

userspace-icount-*.log: the same kernel and initramfs booted straight from QEMU (no U-Boot) with
``-icount shift=4,sleep=off``: guest time counts instructions, so printk times do not depend on
the load of the (shared) host and two boots differ by a few ms. ``base`` is the reference
initramfs; the others carry the overlay of one rule's finding on ``base``; ``nosyslog`` has
S20syslog made non-executable, ``nosyslog-nosleep`` also the needless_sleep overlay. They hold
the issue's criterion: each estimate within 30% of the saving measured between two boots.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from bootlens.advise import Change, ChangeKind, Confidence, Context, Finding, RuleRegistry, advise
from bootlens.advise.rules.userspace_app_order import AppOrder, needs
from bootlens.advise.rules.userspace_coldplug import Coldplug
from bootlens.advise.rules.userspace_dynamic_linking import DynamicLinking
from bootlens.advise.rules.userspace_forks import ForkHeavyScript, rewrite
from bootlens.advise.rules.userspace_sleep import SLEEP_CMD, NeedlessSleep
from bootlens.advise.userspace import (ProcTree, elf_interpreter, has_process_events, replace_commands,
                                       union_ns)
from bootlens.timeline.analyze import BootAnalysis, analyze_paths
from bootlens.core.model import Kind, ProcessDetail
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.targets.qemu import READY_MARKER, rootfs_files

DATA = Path(__file__).parent / "data"
BASE = DATA / "advise" / "userspace-base.rec"
APPLIED = DATA / "advise" / "userspace-applied.rec"
X86_TRACE = DATA / "corpus" / "qemu-x86_64-tp_printk.console.log"
NO_EVENTS = DATA / "corpus" / "qemu-arm64-uboot.console.log"
RULES = (NeedlessSleep, Coldplug, ForkHeavyScript, AppOrder, DynamicLinking)
READY = ParseOptions((MarkerSpec.parse(f"ready={READY_MARKER}"),))


def registry() -> RuleRegistry:
    reg = RuleRegistry()
    for r in RULES:
        reg.register(r)
    return reg


def boot_of(path: Path) -> BootAnalysis:
    return analyze_paths([str(path)], READY).boots[0]


def findings(path: Path, ctx: Context | None = None) -> dict[str, Finding]:
    found = advise(boot_of(path), ctx or Context(), registry())
    out = {f.rule: f for f in found}
    assert len(out) == len(found), "one finding per rule on these boots"
    return out


def reference() -> Context:
    return Context("qemu-arm64", rootfs_files())


def overlay_ctx(files: dict[str, bytes]) -> Context:
    merged = dict(rootfs_files())
    merged.update(files)
    return Context("qemu-arm64", merged)


def the_file(change: Change, path: str) -> tuple[bytes, int]:
    got = {p: (data, mode) for p, data, mode in change.files}
    assert path in got, f"{path} not in {sorted(got)}"
    return got[path]


def sh_check(text: bytes) -> None:
    """The shell parses the script (sh -n)."""
    subprocess.run(["sh", "-n", "/dev/stdin"], input=text, check=True)


@pytest.fixture(scope="module")
def base() -> dict[str, Finding]:
    return findings(BASE, reference())


def test_recordings_are_small_and_real() -> None:
    for p in (BASE, APPLIED):
        assert p.stat().st_size < 200_000
        assert p.read_bytes().startswith(b'{"format":"bootlens-recording"')


def test_busybox_applets_are_named_after_the_applet() -> None:
    tree = ProcTree(boot_of(BASE))
    names = {p.name for p in tree.procs}
    assert {"sleep", "mdev", "grep", "expr", "S50checks", "rcS", "app"} <= names
    # applets re-exec'd through /proc/self/exe carry their comm once they exit (poweroff never does)
    assert [p.pid for p in tree.procs if p.name == "exe"] == [max(p.pid for p in tree.procs)]
    sleep = next(p for p in tree.procs if p.name == "sleep")
    assert sleep.exe == "/proc/self/exe"
    script = tree.script_of(sleep)
    assert script is not None and script.script_path == "/etc/init.d/S40settle"
    assert tree.waited_for(sleep)


def test_sleep(base: dict[str, Finding]) -> None:
    f = base["userspace.needless_sleep"]
    assert f.stage == "userspace"
    # syslogd and klogd ran during the sleep on this one-CPU machine: part of it was their time
    assert f.confidence is Confidence.MEDIUM and "single-CPU" in f.arithmetic and "klogd forwards the" in f.arithmetic
    tree = ProcTree(boot_of(BASE))
    sleep = next(p for p in tree.procs if p.name == "sleep")
    assert f.saving_ns == sleep.duration_ns
    assert f.saving_ns is not None and f.saving_ns >= 1_000_000_000  # `sleep 1` sleeps at least 1 s
    assert f"line {sleep.line_no}" in f.arithmetic and "S40settle" in f.title
    assert f.change.kind is ChangeKind.OVERLAY and f.change.automatic
    data, mode = the_file(f.change, "etc/init.d/S40settle")
    assert mode == 0o100755 and b"sleep 1\n" not in data and data.startswith(b"#!/bin/sh\n")
    sh_check(data)
    assert {e.line_no for e in f.evidence} >= {sleep.line_no, sleep.end_line_no}


def test_sleep_edit_keeps_the_shell_valid() -> None:
    text = ("#!/bin/sh\n# sleep 5 here is a comment\nif true; then sleep 2; fi\nfoo && sleep 0.5 && bar\n"
            "  sleep 1\nsleep $T\n")
    new, removed = replace_commands(text, SLEEP_CMD, "t")
    assert removed == ["sleep 2", "sleep 0.5", "sleep 1"]
    assert "# sleep 5 here is a comment" in new and "sleep $T" in new
    assert "if true; then :; fi" in new and "foo && : && bar" in new
    assert '  : # bootlens (t): removed "sleep 1"' in new
    sh_check(new.encode())
    # an edited script holds no sleep: the note bootlens leaves is a comment (optimize's second round
    # read it as a sleep and tried the same edit again)
    assert replace_commands(new, SLEEP_CMD, "t") == (new, [])
    kept, removed = replace_commands("sleep 2 && echo ok # sleep 3 was here\n", SLEEP_CMD, "t")
    assert removed == ["sleep 2"] and kept == ": && echo ok # sleep 3 was here\n"


def test_coldplug(base: dict[str, Finding]) -> None:
    f = base["userspace.coldplug"]
    tree = ProcTree(boot_of(BASE))
    mdev = next(p for p in tree.procs if p.name == "mdev")
    script = tree.script_of(mdev)
    assert script is not None and script.script_path == "/etc/init.d/S10mdev"
    # rcS skips a script that is not executable: the whole script's span goes, not only mdev's
    assert f.saving_ns == script.duration_ns and mdev.duration_ns is not None and f.saving_ns > mdev.duration_ns
    data, mode = the_file(f.change, "etc/init.d/S10mdev")
    assert mode == 0o100644 and data == rootfs_files()["etc/init.d/S10mdev"]
    assert "S01mount mounts devtmpfs" in f.title and "no /etc/mdev.conf" in f.tradeoff


def test_coldplug_edits_the_line_when_the_script_does_more() -> None:
    files = dict(rootfs_files())
    files["etc/init.d/S10mdev"] = b"#!/bin/sh\necho /sbin/mdev > /proc/sys/kernel/hotplug\nmdev -s\n"
    f = findings(BASE, Context("qemu-arm64", files))["userspace.coldplug"]
    data, mode = the_file(f.change, "etc/init.d/S10mdev")
    assert mode == 0o100755 and b"hotplug" in data and b"\nmdev -s" not in data
    mdev = next(p for p in ProcTree(boot_of(BASE)).procs if p.name == "mdev")
    assert f.saving_ns == mdev.duration_ns


def test_hotplug_mdev_from_a_kernel_thread_is_not_coldplug() -> None:
    log = DATA / "advise" / "userspace-hotplug.log"
    boot = analyze_paths([str(log)]).boots[0]
    assert any(p.name == "mdev" for p in ProcTree(boot).procs)
    assert not list(Coldplug().check(boot, Context()))


def run_sh(shell: list[str], text: str) -> str:
    return subprocess.run([*shell, "/dev/stdin"], input=text.encode(), capture_output=True, check=True).stdout.decode()


def shells() -> list[list[str]]:
    out = [["sh"]]
    if shutil.which("busybox"):
        out.append(["busybox", "sh"])
    return out


def test_fork_heavy(base: dict[str, Finding]) -> None:
    f = base["userspace.fork_heavy"]
    assert f.confidence is Confidence.MEDIUM and "S50checks" in f.title
    assert "grep x8" in f.title and "expr x7" in f.title
    tree = ProcTree(boot_of(BASE))
    script = next(p for p in tree.procs if p.script_path == "/etc/init.d/S50checks")
    kids = tree.children(script)
    assert script.duration_ns is not None and f.saving_ns is not None
    # the window of the forks: more than the children's own time (the parent's fork and wait
    # overhead goes too), less than the whole script (its start-up stays)
    assert union_ns((k.start_ns, k.end_ns or 0) for k in kids) <= f.saving_ns < script.duration_ns
    data, _ = the_file(f.change, "etc/init.d/S50checks")
    new = data.decode()
    assert not rewrite(new).left and "expr" not in new and "grep" not in new and "|" not in new.replace("||", "")
    old = rootfs_files()["etc/init.d/S50checks"].decode()
    for sh in shells():  # the rewrite prints what the original prints
        assert run_sh(sh, new) == run_sh(sh, old)


@pytest.mark.parametrize("word,expect", [("Linux", "yes\n"), ("Windows", "")])
def test_fork_idioms_mean_the_same(word: str, expect: str) -> None:
    script = (f"#!/bin/sh\nif cat /proc/sys/kernel/ostype | grep -q {word}; then echo yes; fi\n"
              f"v=/x/{word}/y\necho \"$v\" | grep -q {word} && echo yes\n"
              "r=$(uname -r | cut -d. -f1)\necho \"$r\"\nn=3\nn=$(expr $n - 1)\necho $n\n")
    rw = rewrite(script)
    assert not rw.left and len(rw.used) == 4, rw
    for sh in shells():
        out = run_sh(sh, rw.text)
        assert out == run_sh(sh, script)
        assert out.startswith(expect + expect)


def test_fork_rewrite_leaves_what_it_does_not_know() -> None:
    rw = rewrite("#!/bin/sh\nx=$(cat /proc/cpuinfo | grep -c processor)\ngrep -q 'a.b' /proc/cmdline\n")
    assert len(rw.left) == 2  # a multi-line file; a regex pattern


def test_app_order(base: dict[str, Finding]) -> None:
    f = base["userspace.app_order"]
    tree = ProcTree(boot_of(BASE))
    app = next(p for p in tree.procs if p.exe == "/usr/bin/app")
    mount = next(p for p in tree.procs if p.script_path == "/etc/init.d/S01mount")
    assert mount.end_ns is not None
    assert f.saving_ns == app.start_ns - mount.end_ns
    assert "S01mount for /proc/uptime" in f.arithmetic
    rcs, mode = the_file(f.change, "etc/init.d/rcS")
    assert mode == 0o100755 and b'if [ "$s" = /etc/init.d/S01mount ]; then /usr/bin/app & fi' in rcs
    sh_check(rcs)
    tab, mode = the_file(f.change, "etc/inittab")
    assert mode == 0o100644 and b"\n::once:/usr/bin/app" not in b"\n" + tab and b"::sysinit:/etc/init.d/rcS" in tab


def test_app_needs() -> None:
    files = rootfs_files()
    scripts = [(f"/{k}", files[k].decode()) for k in sorted(files) if k.startswith("etc/init.d/S")]
    nd = needs(files["usr/bin/app"].decode(), scripts)
    assert nd.needed == {"/etc/init.d/S01mount"}
    nd = needs("#!/bin/sh\nwget http://x/ && logger up\n", scripts)
    assert nd.needed == {"/etc/init.d/S20syslog", "/etc/init.d/S30network"}
    assert not needs(None, scripts).known


def test_app_order_binary_app_gives_no_figure() -> None:
    files = dict(rootfs_files())
    files["usr/bin/app"] = elf(dynamic=False)
    f = findings(BASE, Context("qemu-arm64", files))["userspace.app_order"]
    assert f.saving_ns is None and f.change.kind is ChangeKind.MANUAL and f.confidence is Confidence.LOW


def elf(dynamic: bool) -> bytes:
    """A minimal 64-bit little-endian ELF executable: one PT_LOAD, and a PT_INTERP if dynamic."""
    interp = b"/lib/ld-linux-aarch64.so.1\0"
    phnum = 2 if dynamic else 1
    header = (b"\x7fELF\x02\x01\x01" + b"\0" * 9
              + struct.pack("<HHIQQQIHHHHHH", 2, 183, 1, 0x400000, 64, 0, 0, 64, 56, phnum, 0, 0, 0))
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, 0x400000, 0x400000, 0, 0, 0x1000)
    phdrs = load
    if dynamic:
        off = 64 + 56 * phnum
        phdrs = struct.pack("<IIQQQQQQ", 3, 4, off, off, off, len(interp), len(interp), 1) + load
    return header + phdrs + (interp if dynamic else b"")


def test_elf_interpreter() -> None:
    assert elf_interpreter(elf(dynamic=True)) == "/lib/ld-linux-aarch64.so.1"
    assert elf_interpreter(elf(dynamic=False)) == ""
    assert elf_interpreter(b"#!/bin/sh\n") is None and elf_interpreter(b"\x7fELF") is None


def test_dynamic_linking_not_on_busybox_static(base: dict[str, Finding]) -> None:
    assert "userspace.dynamic_linking" not in base
    files = dict(rootfs_files())
    busybox = Path.home() / ".cache" / "bootlens" / "targets" / "qemu-arm64" / "busybox"
    files["bin/sh"] = busybox.read_bytes() if busybox.exists() else elf(dynamic=False)
    assert "userspace.dynamic_linking" not in findings(BASE, Context("qemu-arm64", files))


def test_dynamic_linking_fires_for_a_dynamic_app() -> None:
    files = dict(rootfs_files())
    files["usr/bin/app"] = elf(dynamic=True)
    f = findings(BASE, Context("qemu-arm64", files))["userspace.dynamic_linking"]
    assert f.saving_ns is None and f.confidence is Confidence.MEDIUM
    assert "ld-linux-aarch64" in f.title and f.change.kind is ChangeKind.MANUAL
    files["usr/bin/app"] = b"#!/bin/sh\n"
    files["bin/sh"] = elf(dynamic=True)  # a script judged by its interpreter
    assert "/bin/sh" in findings(BASE, Context("qemu-arm64", files))["userspace.dynamic_linking"].title


def test_applied_overlays_leave_nothing_to_find(base: dict[str, Finding]) -> None:
    """The boot with every overlay of the base findings: the rules find nothing more."""
    files: dict[str, bytes] = {}
    for f in base.values():
        files.update({p: data for p, data, _ in f.change.files})
    boot = boot_of(APPLIED)
    assert has_process_events(boot)
    assert not advise(boot, overlay_ctx(files), registry())
    names = [p.name for p in ProcTree(boot).procs]
    assert "sleep" not in names and "mdev" not in names and "expr" not in names


def test_x86_trace_corpus() -> None:
    """A plain /init script that forks three busybox commands and prints the ready line."""
    boot = boot_of(X86_TRACE)
    tree = ProcTree(boot)
    assert [p.name for p in tree.procs if p.detail.ppid == 1] == ["busybox", "busybox", "busybox", "busybox"]
    assert not advise(boot, Context(), registry())


def test_without_process_events() -> None:
    boot = boot_of(NO_EVENTS)
    assert not any(e.kind is Kind.PROCESS for e in boot.boot.events)
    assert not advise(boot, Context(), registry())  # a plain log: nothing suggests anything
    found = advise(boot, reference(), registry())  # the scripts are known: at most one per rule
    assert sorted(f.rule for f in found) == ["userspace.app_order", "userspace.coldplug", "userspace.fork_heavy",
                                             "userspace.needless_sleep"]
    for f in found:
        assert f.saving_ns is None and "trace_event=sched:sched_process_fork" in f.arithmetic
        assert f.change.kind is ChangeKind.OVERLAY


def test_process_detail_of_init() -> None:
    tree = ProcTree(boot_of(BASE))
    init = next(p for p in tree.procs if p.pid == 1)
    assert isinstance(init.detail, ProcessDetail) and init.exe == "/init" and init.end_ns is None


def userspace_ns(path: Path) -> int:
    boot = boot_of(path)
    stage = next(s for s in boot.stages if s.name == "userspace")
    assert stage.duration_ns is not None
    return stage.duration_ns


@pytest.mark.parametrize("rule,base,applied", [
    ("needless_sleep", "base", "needless_sleep"),
    ("needless_sleep", "nosyslog", "nosyslog-nosleep"),
    ("coldplug", "base", "coldplug"),
    ("fork_heavy", "base", "fork_heavy"),
    ("app_order", "base", "app_order"),
])
def test_estimate_matches_the_measured_saving(rule: str, base: str, applied: str) -> None:
    before = DATA / "advise" / f"userspace-icount-{base}.log"
    after = DATA / "advise" / f"userspace-icount-{applied}.log"
    estimate = findings(before, reference())[f"userspace.{rule}"].saving_ns
    measured = userspace_ns(before) - userspace_ns(after)
    assert estimate is not None and measured > 0
    assert abs(estimate - measured) <= 0.3 * measured, (estimate, measured)
    assert f"userspace.{rule}" not in findings(after, reference())


def test_a_sleep_alone_is_high_confidence() -> None:
    f = findings(DATA / "advise" / "userspace-icount-nosyslog.log", reference())["userspace.needless_sleep"]
    assert f.confidence is Confidence.HIGH and "alongside" not in f.arithmetic
