"""The keeper: runs a captured command so that it ends when bootlens ends, however bootlens ends.

``bootlens capture -- COMMAND`` does not start COMMAND itself but this script,
``python -I -S keeper.py STATUS_FD PARENT_PID -- COMMAND...``, as the leader of a new session
and process group. bootlens cannot clean up after a SIGKILL, so the kernel has to tell someone:

- the keeper asks for SIGTERM when bootlens dies (``PR_SET_PDEATHSIG``; it fires on SIGKILL
  too) and checks that bootlens had not died before the request was made;
- it becomes a child subreaper (``PR_SET_CHILD_SUBREAPER``): a descendant orphaned by its
  parent (a daemonising grandchild, even one that left the process group with ``setsid``)
  becomes the keeper's child, not init's, so the keeper can still find and end it;
- COMMAND runs in the keeper's process group with ``PR_SET_PDEATHSIG=SIGKILL`` towards the
  keeper, so that COMMAND (QEMU, say) dies even if the keeper itself is SIGKILLed;
- on SIGTERM, SIGHUP or SIGINT (bootlens's own ``killpg``, or bootlens's death) it sends
  SIGTERM to every descendant, SIGKILL to what is left after a grace period, reaps them all and
  exits;
- when COMMAND exits, it waits until no descendant is left and exits with COMMAND's status
  (dying of the same signal if COMMAND died of one), so bootlens sees COMMAND's own status.

STATUS_FD tells bootlens whether COMMAND could be started: it is closed empty once COMMAND has
been exec'd, or receives ``E<errno>`` if the exec failed (exit 127), ``K<reason>`` if the keeper
cannot guard (no prctl), ``P`` if bootlens had already gone. Standard library only and no bootlens import: it runs isolated (-I -S), so that it
starts quickly and cannot be broken by the environment. Linux only (prctl).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GRACE_S = 2.0  # SIGTERM, then SIGKILL: bootlens waits 5 s for the keeper before killing the group
ENDING = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class _End(Exception):
    """A signal asked the keeper to end everything."""


def _on_signal(signum: int, frame: object) -> None:
    raise _End()


def _prctl(libc: ctypes.CDLL, option: int, arg: int) -> None:
    if libc.prctl(option, arg, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def descendants(root: int) -> list[int]:
    """Live processes below ``root`` (from /proc: each process's parent), nearest first."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split at the last ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) < 2 or fields[0] == b"Z":
            continue  # a zombie is already dead; its parent (or the keeper) reaps it
        children.setdefault(int(fields[1]), []).append(int(name))
    out: list[int] = []
    todo = [root]
    while todo:
        for c in children.get(todo.pop(), ()):
            out.append(c)
            todo.append(c)
    return out


def _reap() -> bool:
    """Reap every child that has ended; True while any child (live or not yet reaped) is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def end_all() -> None:
    """SIGTERM to every descendant, SIGKILL after the grace period, until none is left."""
    for s in ENDING:
        signal.signal(s, signal.SIG_IGN)  # ending already: more requests change nothing
    me = os.getpid()
    termed: set[int] = set()
    deadline = time.monotonic() + GRACE_S
    give_up = deadline + 10  # a process stuck in the kernel (state D) cannot be waited out forever
    while time.monotonic() < give_up:
        late = time.monotonic() > deadline
        for pid in descendants(me):
            if late or pid not in termed:
                try:
                    os.kill(pid, signal.SIGKILL if late else signal.SIGTERM)
                except ProcessLookupError:
                    pass
                termed.add(pid)
        if not _reap():
            return
        time.sleep(0.02)


def _start(libc: ctypes.CDLL, argv: list[str], status_fd: int) -> int:
    """Fork and exec COMMAND (the caller blocks the ending signals); its pid."""
    keeper = os.getpid()
    err_r, err_w = os.pipe()  # close-on-exec: empty at EOF means the exec worked
    pid = os.fork()
    if pid == 0:  # the command, before exec
        try:
            os.close(err_r)
            os.close(status_fd)
            # what the keeper changed goes back to the defaults COMMAND expects (Python also
            # ignores SIGPIPE and SIGXFSZ); blocked signals then arrive with their default action
            for s in (*ENDING, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(s, signal.SIG_DFL)
            _prctl(libc, PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != keeper:  # the keeper died before the request: follow it
                os._exit(1)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, ENDING)
            os.execvp(argv[0], argv)
        except OSError as e:
            os.write(err_w, str(e.errno or 0).encode())
        finally:
            os._exit(127)
    os.close(err_w)
    err = b""
    while chunk := os.read(err_r, 64):
        err += chunk
    os.close(err_r)
    if err:
        os.waitpid(pid, 0)
        os.write(status_fd, b"E" + err)
        os._exit(127)
    return pid


def _exit_like(status: int | None) -> None:
    """Exit with COMMAND's status: its exit code, or death by the same signal."""
    if status is None:
        os._exit(128 + signal.SIGTERM)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the command may have dumped core; not again
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those two are always default
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def main(args: list[str]) -> None:
    """Run COMMAND under the keeper's guard (see the module docstring)."""
    # held back until the keeper can act on them: the handler raises, and an exception before
    # the loop below would print a traceback into the command's output
    signal.pthread_sigmask(signal.SIG_BLOCK, ENDING)
    for s in ENDING:
        signal.signal(s, _on_signal)
    status_fd, parent = int(args[0]), int(args[1])
    argv = args[3:] if args[2:3] == ["--"] else args[2:]
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _prctl(libc, PR_SET_CHILD_SUBREAPER, 1)
        _prctl(libc, PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError) as e:  # not Linux: bootlens says so instead of running unguarded
        os.write(status_fd, f"Kprctl: {e}".encode())
        os._exit(1)
    if os.getppid() != parent:  # bootlens died before the request was made
        os.write(status_fd, b"P")
        os._exit(1)
    leader = _start(libc, argv, status_fd)
    os.close(status_fd)
    # the keeper must not hold the command's output pipe open: bootlens reads it to its end
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    status: int | None = None
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, ENDING)
        while True:
            try:
                pid, st = os.waitpid(-1, 0)  # the command, or an orphan the keeper inherited
            except ChildProcessError:
                break  # nothing left below the keeper
            if pid == leader:
                status = st
    except _End:
        end_all()
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
