"""The ready line reaches the console through journald, which was not running yet.

With ``StandardOutput=journal+console`` (or ``journal``, ``kmsg``, ``syslog`` with ``+console``,
or the default ``DefaultStandardOutput=journal``) the application writes into journald's stream
socket; journald reads it and writes "app[PID]: APP READY" to the console. An application that
starts early (``DefaultDependencies=no``, see ``systemd.app_order``) can print long before
``systemd-journald.service`` is up: systemd listens on the socket from the start, so the write
does not fail, but the line waits in the socket until journald reads it. The console line gives
it away: journald's forward carries the syslog identifier ("app[116]: ") and journald's own
timestamp.

The saving is the time from the application's start to the ready line, less nothing: how long
the program itself takes to print is not in the log, so the figure is an upper bound. Without a
"Started" line for the application (a capture that stops at the ready line), its start is taken
as the moment what it is ordered after was active, or the first unit's start.

The change is a drop-in ``StandardOutput=tty`` (``TTYPath=`` /dev/console, the default): the
line goes straight to the console.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Confidence, Context, Finding, Rule
from ..evidence import secs
from ..systemd import _IDENT, ASSUMED, Model, conf_value, dropin, fmt_at, model, unit_evidence

JOURNALD = "systemd-journald.service"
VIA_JOURNALD = ("journal", "journal+console", "kmsg", "kmsg+console", "syslog", "syslog+console")
MIN_NS = 100_000_000  # under this the forward is journald's usual latency, not a wait for its start
TRADEOFF = ("the application's standard output no longer reaches the journal (journalctl -u shows nothing from "
            "it): log what must be kept through syslog(3) or sd_journal_print(3), or write only the ready line "
            "to /dev/console; on a console shared with systemd's status lines the two may interleave")


def default_output(files: Mapping[str, bytes]) -> str:
    """systemd's DefaultStandardOutput= from system.conf and its drop-ins (default: journal)."""
    return conf_value(files, "system.conf", "Manager", "DefaultStandardOutput") or "journal"


def output_of(m: Model, unit: str, files: Mapping[str, bytes]) -> str:
    """The unit's effective StandardOutput= (``inherit`` and unset: the manager's default)."""
    v = m.uf.value(unit, "Service", "StandardOutput")
    return default_output(files) if v is None or v.strip() in ("", "inherit") else v.strip()


def app_start(m: Model) -> tuple[int, str]:
    """When the application started, and how that is known."""
    assert m.app is not None
    if m.app.result != ASSUMED:
        return m.app.start_ns, f"{m.app.name} started at {fmt_at(m.app.start_ns)} (line {m.app.line_no})"
    deps = [m.by[u] for u in m.after.get(m.app.name, ()) if u in m.by and m.by[u].result != ASSUMED]
    if deps:
        last = max(deps, key=lambda r: r.active_ns)
        return last.active_ns, (f"{m.app.name}'s start is not in the log; it is ordered after {last.name}, active at "
                                f"{fmt_at(last.active_ns)} (line {last.end_line_no})")
    first = min((r for r in m.runs if r.result != ASSUMED), key=lambda r: r.start_ns)
    return first.start_ns, (f"{m.app.name}'s start is not in the log and it is ordered after no unit seen: taken "
                            f"as systemd's first unit start, {fmt_at(first.start_ns)} (line {first.line_no})")


@REGISTRY.register
class ReadyViaJournald(Rule):
    """The application printed its ready line before journald ran; journald forwarded it later."""

    id = "systemd.ready_output"
    title = "ready line written through journald"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        m = model(boot, ctx)
        if m is None or m.ready is None or m.app is None or m.app.name not in m.uf.paths:
            return
        lines = boot.boot.lines
        i = lines.index_of(m.ready[1])
        if not 0 <= i < len(lines) or not _IDENT.match(lines.text[i].strip()):
            return  # not journald's forward: the program wrote the line itself
        out = output_of(m, m.app.name, ctx.rootfs_files)
        if out not in VIA_JOURNALD:
            return
        start, how = app_start(m)
        journald = m.by.get(JOURNALD)
        if journald is not None and journald.result != ASSUMED and journald.active_ns <= start:
            return  # journald was up: the line waited for nothing
        saving = m.ready[0] - start
        if saving < MIN_NS:
            return
        jd = (f"{JOURNALD} started at {fmt_at(journald.start_ns)} (line {journald.line_no})"
              + (f", active at {fmt_at(journald.active_ns)} (line {journald.end_line_no})" if journald.span else "")
              if journald is not None else f"{JOURNALD} not active in the log before the ready line")
        path = f"etc/systemd/system/{m.app.name}.d/50-bootlens-console.conf"
        arithmetic = (f"{how}; StandardOutput={out} sends its output through journald; {jd}; journald wrote the "
                      f"ready line at {fmt_at(m.ready[0])} (line {m.ready[1]}, with the identifier journald puts "
                      f"before a forwarded line): {fmt_at(m.ready[0])} - {fmt_at(start)} = {secs(saving)}, at "
                      "most (the program's own time from its start to its print is not in the log)")
        yield Finding(
            rule=self.id, title=f"{m.app.name}'s ready line waits {secs(saving)} for journald to forward it",
            stage="userspace", saving_ns=saving, arithmetic=arithmetic, confidence=Confidence.MEDIUM,
            tradeoff=TRADEOFF,
            change=dropin(path, f"# bootlens ({self.id}): the ready line straight to the console, not through "
                                "journald\n[Service]\nStandardOutput=tty\nTTYPath=/dev/console\n",
                          f"{m.app.name}: StandardOutput=tty",
                          f"lay /{path} with [Service] StandardOutput=tty: the application writes to /dev/console "
                          "itself instead of waiting for journald to forward its output"),
            evidence=unit_evidence(m.boot, [m.app, *([journald] if journald is not None else [])], [m.ready[1]]))
