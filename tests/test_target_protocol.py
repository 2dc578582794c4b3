"""The Target protocol (targets/base.py): a target opened by name from the user's options, the
configuration it boots in, what run.json records, and the hook protocol of a target changed by
the user's script. Real scripts, real files; the boots themselves are test_target's,
test_experiment's and test_labgrid's."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from bootlens.core.errors import UsageError
from bootlens.lab.catalogue import open_target, target_kinds
from bootlens.lab.labgrid import LabgridSpec, LabgridTarget
from bootlens.targets import qemu as T
from bootlens.targets.base import BootConfig, TargetError, TargetOptions
from bootlens.targets.board import BoardTarget, Hook, HookedTarget
from bootlens.targets.runs import run_target, write_meta
from bootlens.targets.trace_plan import parse_trace


def test_every_target_by_name() -> None:
    kinds = target_kinds()
    assert list(kinds) == sorted([*T.TARGETS, "board", "labgrid"])  # the one registry class: by name
    assert kinds["qemu-arm64"] is T.QemuTarget and kinds["board"] is BoardTarget and kinds["labgrid"] is LabgridTarget
    with pytest.raises(TargetError, match="^unknown target 'pdp11'; known: board, labgrid, qemu-arm64, "
                                          "qemu-x86_64, qemu-x86_64-systemd$"):
        open_target(TargetOptions("pdp11"))


@pytest.mark.parametrize("opts, message", [
    (TargetOptions("qemu-arm64", port="/dev/ttyS0", typed=frozenset({"port"})),
     "--port is for TARGET board; qemu-arm64 is a reference target (bootlens boots it itself)"),
    (TargetOptions("qemu-arm64", hook="x", typed=frozenset({"hook"})),
     "--hook is for TARGET board or labgrid; qemu-arm64 is a reference target (bootlens boots it itself)"),
    (TargetOptions("board", env="e.yaml", typed=frozenset({"env"})), "--env is for TARGET labgrid"),
    (TargetOptions("labgrid", power_cycle="true", typed=frozenset({"power_cycle"})),
     "--power-cycle is for TARGET board; labgrid's environment file names the console and the power switch"),
    (TargetOptions("board", ready="(", port="p", power_cycle="true"), "--ready '(': bad regular expression"),
    (TargetOptions("board", port="p"), "run board needs --port (its console) and --power-cycle (a command)"),
    (TargetOptions("board", port="p", power_cycle="true", changes=True), "board needs --port (its console), "
     "--power-cycle (a command) and --hook"),
    (TargetOptions("board", port="p", power_cycle="true", hook="h", append="quiet", changes=True),
     "--append is for reference targets; on a board the hook changes the command line"),
    (TargetOptions("board", port="p", power_cycle="true", hook="'open", changes=True), "--hook \"'open\": "),
    (TargetOptions("labgrid"), "TARGET labgrid needs --env"),
    (TargetOptions("labgrid", env="e.yaml", changes=True), "labgrid needs --hook"),
    (TargetOptions("labgrid", env="e.yaml", cmdline="quiet"), "--cmdline is for reference targets"),
])
def test_options_a_target_cannot_take_are_one_line_errors(opts: TargetOptions, message: str) -> None:
    with pytest.raises(UsageError) as e:
        open_target(opts)
    assert str(e.value).startswith(message) and "\n" not in str(e.value), str(e.value)


def test_typed_options_only_are_refused() -> None:
    """From bootlens.toml (not typed) a board's port is left alone on a reference target; the
    board and labgrid open without booting anything."""
    board = open_target(TargetOptions("board", port="/dev/null", power_cycle="true --now", baud=None))
    assert isinstance(board, BoardTarget) and board.argv == ["true", "--now"] and board.baud == 115200
    assert board.hook is None and board.can_change == frozenset()
    lab = open_target(TargetOptions("labgrid", env="e.yaml", role="r", place="p", hook="h a", changes=True))
    assert isinstance(lab, LabgridTarget) and lab.spec == LabgridSpec("e.yaml", "r", "p", None)
    assert lab.hook is not None and lab.hook.argv == ["h", "a"] and lab.can_change == {"cmdline", "uboot-env", "overlay"}


def test_boot_config_says_what_it_changes_and_how_a_hook_applies_it(tmp_path: Path) -> None:
    assert BootConfig().sets() == () and BootConfig().hook_steps() == ()
    c = BootConfig("x", "quiet lpj=1", (("bootdelay", "0"), ("silent", "1")), tmp_path / "ov", parse_trace("initcall"))
    assert c.sets() == ("cmdline", "uboot-env", "overlay", "trace")
    assert c.hook_steps() == (("cmdline", "quiet lpj=1"), ("uboot-env", "bootdelay=0"), ("uboot-env", "silent=1"),
                              ("overlay", str((tmp_path / "ov").resolve())))
    # an experiment's configuration: one step per change, in the changes' order
    steps = (("uboot-env", "bootdelay=0"), ("cmdline", "quiet"), ("cmdline", "lpj=1"))
    assert BootConfig("y", "quiet lpj=1", (("bootdelay", "0"),), steps=steps).hook_steps() == steps


def _qemu(name: str = "qemu-arm64", **kw: object) -> T.QemuTarget:
    rootfs = Path("rootfs.ext4") if T.TARGETS[name].rootfs else None
    return T.QemuTarget(T.TargetFiles(T.TARGETS[name], Path("k"), Path("i"), "v", rootfs), **kw)  # type: ignore[arg-type]


def test_run_json_of_a_reference_target(tmp_path: Path) -> None:
    """What `bootlens run qemu-arm64 --append quiet --cmdline ... --uboot-env ... --trace ...`
    records: the user's kernel arguments (not the target's console= nor the trace's), U-Boot
    variables, the overlay, the trace, the console's rate, the timeout, the ready marker."""
    tf = T.TargetFiles(T.TARGETS["qemu-arm64"], Path("k"), Path("i"), "v")
    t = T.QemuTarget(tf, T.kernel_cmdline(tf, "printk.time=1", "quiet"), "ready!", 60.0, 115200)
    config = BootConfig(uboot_env=(("bootdelay", "0"),), overlay=Path("ov"), trace=parse_trace("initcall"))
    write_meta(tmp_path, t, config)
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta == {"markers": {"ready": "ready!"}, "target": "qemu-arm64", "append": "quiet",
                    "cmdline": "printk.time=1", "uboot_env": {"bootdelay": "0"}, "overlay": "ov",
                    "trace": "initcall", "trace_args": "trace_event=initcall:* trace_options=nooverwrite "
                    "trace_buf_size=8M", "baud": 115200, "timeout_s": 60.0}
    assert t.rate_limited and not _qemu().rate_limited


def test_a_configuration_a_target_cannot_boot_is_refused_before_the_folder(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="^qemu-x86_64 has no U-Boot environment to change$"):
        run_target(_qemu("qemu-x86_64"), tmp_path / "a", 1, BootConfig(uboot_env=(("bootdelay", "0"),)))
    with pytest.raises(TargetError, match="--trace is for the busybox targets .*not qemu-x86_64-systemd"):
        run_target(_qemu("qemu-x86_64-systemd"), tmp_path / "b", 1, BootConfig(trace=parse_trace("initcall")))
    with pytest.raises(UsageError, match="the kernel arguments set trace_event="):
        run_target(_qemu(), tmp_path / "c", 1, BootConfig("x", "trace_event=sched:*", trace=parse_trace("initcall")))
    board = BoardTarget("/dev/null", "true")
    with pytest.raises(UsageError, match="^--trace is for the busybox reference targets"):
        run_target(board, tmp_path / "d", 1, BootConfig(trace=parse_trace("initcall")))
    with pytest.raises(UsageError, match="^board: only a hook script changes it"):
        run_target(board, tmp_path / "e", 1, BootConfig(uboot_env=(("bootdelay", "0"),)))
    assert not any(tmp_path.iterdir())


HOOK = """\
#!/bin/sh
echo "$BOOTLENS_CONFIG $*" >> "{log}"
[ "$1" = apply ] && [ "$3" = fail ] && {{ echo "cannot apply $3" >&2; exit 5; }}
exit 0
"""


class Recorder(HookedTarget):
    """A target whose 'boot' writes the recording's name: what the hook protocol does around it."""

    name, ready, timeout_s, baud = "recorder", "READY", 10.0, None

    def __init__(self, hook: Hook | None, log: Path) -> None:
        super().__init__(hook)
        self.log = log

    @classmethod
    def from_options(cls, opts: TargetOptions) -> Recorder:
        raise NotImplementedError

    def power_boot(self, out: Path) -> None:
        with open(self.log, "a") as f:
            f.write(f"boot {out.name}\n")


def test_the_hook_protocol_around_boots(tmp_path: Path) -> None:
    """reset and one apply per step before the first boot of a configuration; nothing between
    boots in the same one; reset to the baseline at close; a failing apply is a one-line error."""
    log = tmp_path / "log"
    hook = tmp_path / "hook.sh"
    hook.write_text(HOOK.format(log=log))
    hook.chmod(0o755)
    t = Recorder(Hook(str(hook)), log)
    base = BootConfig("baseline")
    fast = BootConfig("fast", "quiet", (("bootdelay", "0"),), tmp_path / "ov",
                      steps=(("uboot-env", "bootdelay=0"), ("cmdline", "quiet")))
    t.boot(base, tmp_path / "boot-1.rec")
    t.boot(fast, tmp_path / "boot-2.rec")
    t.boot(fast, tmp_path / "boot-3.rec")
    t.close()
    t.close()  # once back in the baseline, nothing more
    assert log.read_text().splitlines() == [
        "baseline reset", "boot boot-1.rec", "fast reset", "fast apply uboot-env bootdelay=0",
        "fast apply cmdline quiet", f"fast apply overlay {(tmp_path / 'ov').resolve()}", "boot boot-2.rec",
        "boot boot-3.rec", "baseline reset"]
    with pytest.raises(TargetError) as e:
        t.boot(BootConfig("bad", "fail"), tmp_path / "boot-4.rec")
    assert str(e.value) == f"--hook {hook} apply cmdline fail exited with 5: cannot apply fail"
    meta = t.meta(BootConfig("x", "quiet"))
    assert meta["hook"] == str(hook) and meta["append"] == "quiet" and meta["target"] == "recorder"


def test_a_hook_gets_hostile_values_as_data_and_unreadable_ones_are_refused(tmp_path: Path) -> None:
    """Issue 29: the hook's arguments are an argv, never a shell line: ';', $(...), quotes and
    backquotes reach it as they are. A value it could not pass on as meant is refused before the
    target is touched, one line each: a NUL (it was Python's ValueError, a traceback), a newline,
    an unbalanced quote in kernel arguments, a U-Boot variable its environment cannot hold."""
    argv_log, marker = tmp_path / "argv.json", tmp_path / "PWNED"
    hook = tmp_path / "hook.py"
    hook.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"with open({str(argv_log)!r}, 'a') as f: f.write(json.dumps(sys.argv[1:]) + '\\n')\n")
    hook.chmod(0o755)
    t = Recorder(Hook(str(hook)), tmp_path / "log")
    args = f'quiet; touch {marker} $(touch {marker}) `touch {marker}` dyndbg="file a.c +p" \'x\''
    t.boot(BootConfig("odd", args, (("bootcmd", f"run a; touch {marker}"),)), tmp_path / "b.rec")
    calls = [json.loads(ln) for ln in argv_log.read_text().splitlines()]
    assert calls == [["reset"], ["apply", "cmdline", args], ["apply", "uboot-env", f"bootcmd=run a; touch {marker}"]]
    assert not marker.exists()
    for config, why in [
            (BootConfig("nul", "quiet\0 init=/bin/sh"), "one line of printable text"),
            (BootConfig("nl", "quiet\ninit=/bin/sh"), "a control character"),
            (BootConfig("q", 'quiet dyndbg="file a.c'), "an unbalanced"),
            (BootConfig("env", "", (("bootdelay", "0\0bootcmd=x"),)), "in the value"),
            (BootConfig("ov", "", (), tmp_path / "a\nb"), "a control character")]:
        with pytest.raises(TargetError) as e:
            t.boot(config, tmp_path / "c.rec")
        assert why in str(e.value) and str(e.value).startswith("--hook apply ") and "\n" not in str(e.value)
    assert len(argv_log.read_text().splitlines()) == 3  # the hook was not run for any of them
    with pytest.raises(TargetError, match=r"^--hook .* reset 'x\\x00y': a control character .* in an argument; refused$"):
        Hook(str(hook)).run(["reset", "x\0y"], "baseline")


def test_place_and_coordinator_reach_labgrid_as_data(tmp_path: Path) -> None:
    """bootlens writes no labgrid environment: --place and --coordinator are set in the one
    labgrid loaded (its !template substitutions are done by then), verbatim, whatever they hold."""
    lg = pytest.importorskip("labgrid")
    from bootlens.lab.labgrid import _override

    env_file = tmp_path / "env.yaml"
    env_file.write_text("targets:\n  main:\n    resources:\n      RemotePlace:\n        name: lab-1\n")
    env = lg.Environment(config_file=str(env_file))
    place, coord = 'p"; rm -rf / ${LG_X} !template\n$(id)', "h,ost:1; id"
    _override(env.config, LabgridSpec(str(env_file), place=place, coordinator=coord))
    assert env.config.data["targets"]["main"]["resources"]["RemotePlace"] == {"name": place}
    assert env.config.get_option("coordinator_address") == coord


def test_run_board_records_the_board(tmp_path: Path) -> None:
    """run.json of a board: its port, power-cycle command and line rate (no hook in a run)."""
    board = BoardTarget("/dev/ttyUSB0", "relay-ctl 3 cycle", 9600, "login:", 20.0)
    write_meta(tmp_path, board, BootConfig())
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["target"] == "board" and meta["port"] == "/dev/ttyUSB0" and meta["power_cycle"] == "relay-ctl 3 cycle"
    assert meta["baud"] == 9600 and meta["timeout_s"] == 20.0 and meta["markers"] == {"ready": "login:"}
    assert "hook" not in meta


@pytest.mark.skipif(sys.platform != "linux", reason="a pty board")
def test_the_board_of_the_command_line_refuses_what_it_cannot_apply(tmp_path: Path) -> None:
    """`bootlens run board --uboot-env ...`: nothing on a board applies it without a hook; one
    line, exit 2, no run folder."""
    from conftest import cli

    r = cli("run", "board", "--port", os.devnull, "--power-cycle", "true", "--uboot-env", "bootdelay=0",
            "-o", str(tmp_path / "run"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "only a hook script changes it" in r.stderr, r.stderr
    assert not (tmp_path / "run").exists()
