"""bootlens: the boot-time workbench for embedded Linux.

The library is the pipeline of docs/architecture.md, one folder a stage (capture, read,
parsers, sources, timeline, stats, targets, advise, experiment, lab, history, render, cli).
Its public calls are here, each imported on first use (``import bootlens`` costs nothing more,
and a small ``bootlens analyze`` pays only for what it runs):

- :func:`analyze_paths` (``timeline.analyze``): logs or recordings -> an ``Analysis``, one
  ``BootAnalysis`` per boot (stages on one axis, top offenders, silences);
- :func:`analyze_inputs` (``timeline.inputs``): what ``report`` and ``compare`` take as INPUT
  (logs, recordings, run folders, side files such as systemd-analyze outputs) -> ``Group`` s;
- :func:`advise_inputs` (``advise.summary``): the same inputs -> findings with the saving of each;
- :func:`compare_groups` (``stats.compare``): groups against the first, with significance;
- :func:`render_html`, :func:`render_svg`, :func:`render_perfetto` (``render``): the report of
  groups as bytes.
"""

from __future__ import annotations

# A constant, not importlib.metadata.version("bootlens"): that lookup imports email, zipfile and
# the distribution scan, a third of the start-up of a small `bootlens analyze`.
# tests/test_startup.py checks it equals pyproject.toml's version and the installed metadata.
__version__ = "0.1.0"

# public name -> the module that defines it (imported when the name is first read)
_PUBLIC = {
    "analyze_paths": "timeline.analyze",
    "analyze_inputs": "timeline.inputs",
    "advise_inputs": "advise.summary",
    "compare_groups": "stats.compare",
    "render_html": "render.html",
    "render_svg": "render.svg",
    "render_perfetto": "render.perfetto",
}

__all__ = ["__version__", *_PUBLIC]

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from .advise.summary import advise_inputs as advise_inputs
    from .render.html import render_html as render_html
    from .render.perfetto import render_perfetto as render_perfetto
    from .render.svg import render_svg as render_svg
    from .stats.compare import compare_groups as compare_groups
    from .timeline.analyze import analyze_paths as analyze_paths
    from .timeline.inputs import analyze_inputs as analyze_inputs


def __getattr__(name: str) -> object:
    """A public call, from its module on first use."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
