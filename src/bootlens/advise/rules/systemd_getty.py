"""Login prompts (``getty.target``) come up before the application.

``multi-user.target`` wants ``getty.target``; an application ordered after
``multi-user.target`` therefore waits for the gettys, and for ``systemd-user-sessions.service``
they are ordered after. The saving is the boot replayed without the getty units and
``getty.target`` (:meth:`Model.saving`). The automatic change masks the gettys that ran (a
product console without a login prompt); to keep a login, start it after the application
instead, which needs the application no longer ordered after ``multi-user.target`` first
(``systemd.app_order``), else the two orders make a cycle.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Confidence, Context, Finding, Rule
from ..evidence import secs
from ..systemd import fmt_at, mask_change, model, unit_evidence

GETTY = re.compile(r"(?:serial-getty|getty|container-getty)@[\w.\\-]+\.service|console-getty\.service")
TRADEOFF = ("no login prompt on those consoles at boot; to keep one, order the getty after the application "
            "instead (a drop-in with After=APP.service, once the application is not ordered after "
            "multi-user.target: see systemd.app_order), or start it on demand")


@REGISTRY.register
class GettyBeforeApp(Rule):
    """The application waits for the login prompts."""

    id = "systemd.getty_before_app"
    title = "getty before the application"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        m = model(boot, ctx)
        if m is None or m.ready is None or m.app is None:
            return
        gettys = [r for r in m.runs if GETTY.fullmatch(r.name) and r.start_ns <= m.app.start_ns]
        target = m.by.get("getty.target")
        if not gettys or target is None or target.active_ns > m.app.start_ns:
            return
        names = sorted({r.name for r in gettys})
        saving = m.saving(drop=[*names, "getty.target"])
        app = m.app.name
        listing = ", ".join(f"{r.name} at {fmt_at(r.active_ns)} (line {r.end_line_no})" for r in gettys)
        if saving is None or saving <= 0:
            arithmetic = (f"no estimate: {listing}, getty.target at {fmt_at(target.active_ns)}, before {app} "
                          f"started at {fmt_at(m.app.start_ns)}; {m.unmoved('them')}"
                          f"{' (something else held ' + app + ' longer)' if m.after else ''}; {m.chain_text()}")
            saving = None
        else:
            arithmetic = (f"{listing}; getty.target reached at {fmt_at(target.active_ns)} (line {target.line_no}), "
                          f"before {app} started at {fmt_at(m.app.start_ns)}; the boot replayed over the After= "
                          f"map without the gettys and getty.target puts the ready line {secs(saving)} earlier, "
                          f"every other unit keeping its measured duration; {m.chain_text()}")
        yield Finding(
            rule=self.id, title=f"{app} waits for the login prompts ({', '.join(names)})"
                                + (f": {secs(saving)}" if saving else ""),
            stage="userspace", saving_ns=saving, arithmetic=arithmetic,
            confidence=Confidence.MEDIUM if saving else Confidence.LOW, tradeoff=TRADEOFF,
            change=mask_change(names, "no login prompt before the application"),
            evidence=unit_evidence(m.boot, [*gettys, target], [m.ready[1]]))
