"""The side-format role (sources/<format>/) and the side renderers (render/side/<format>.py):
every folder is a format, every renderer names one, and a new format really is one folder plus
one renderer: added to a copy of the package, it is sniffed, read, attached and shown by
``analyze`` with no line changed anywhere else."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import CORPUS

import bootlens
from bootlens.sources.base import REGISTRY, formats, hooks
from bootlens.render import side

SRC = Path(bootlens.__file__).parent
HOOKS = {"text", "json", "html", "event_text", "origin"}


def test_every_folder_of_sources_is_a_format_in_sniff_order() -> None:
    folders = sorted(p.name for p in (SRC / "sources").iterdir() if (p / "__init__.py").is_file())
    fs = formats()
    assert sorted(f.name for f in fs) == folders == REGISTRY.names()
    assert [f.sniff_order for f in fs] == sorted(f.sniff_order for f in fs)
    assert len({f.sniff_order for f in fs}) == len(fs) and len({f.attach_order for f in fs}) == len(fs)
    for f in fs:
        assert f.sniff is not None or f.sniff_dir is not None, f.name
        if f.attaches:
            assert hooks(f).__name__ == f"bootlens.sources.{f.name}.attach"


def test_every_side_renderer_names_a_format_and_defines_only_hooks() -> None:
    names = {f.name for f in formats()}
    files = sorted(p.stem for p in (SRC / "render" / "side").glob("*.py") if p.stem != "__init__")
    assert files and set(files) <= names, set(files) - names
    order = [f.name for f in sorted(formats(), key=lambda f: f.attach_order) if f.name in files]
    assert [m.__name__.rsplit(".", 1)[1] for m in side.renderers()] == order
    for m in side.renderers():
        public = {k for k, v in vars(m).items() if callable(v) and getattr(v, "__module__", "") == m.__name__
                  and not k.startswith("_")}
        assert public & HOOKS, f"{m.__name__} defines no hook"


def test_a_boot_without_side_files_asks_no_renderer() -> None:
    """render.side answers nothing for a plain log's boot, without importing a renderer."""
    code = ("import sys; from bootlens.timeline.analyze import analyze_paths; from bootlens.render import side; "
            f"b = analyze_paths([{str(CORPUS / 'qemu-arm64-uboot.console.log')!r}]).boots[0]; "
            "assert side.json_keys(b) == {} and side.origin(b) is None; "
            "print(sorted(m for m in sys.modules if m.startswith('bootlens.render.side.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


DEMO_INIT = '''"""Side format: a demo "wattmeter" log (one power reading a line), for the test."""

from __future__ import annotations

from ..base import REGISTRY, FormatOption, Head, SideFormat


def _sniff(path: str, head: Head) -> str | None:
    return "wattmeter" if head.text.startswith("# wattmeter") else None


FLOOR = FormatOption("--watt-floor", "watt_floor", "W", default=0.0, minimum=0, help="Readings under W are noise.")
FORMAT = REGISTRY.register(SideFormat("wattmeter", sniff_order=35, attach_order=35, sniff=_sniff, options=(FLOOR,),
                                      what="wattmeter log"))
'''

DEMO_ATTACH = '''"""How a wattmeter log joins a boot: its peak reading, kept as the format's part."""

from __future__ import annotations


def read_one(kind, path):
    return [float(ln.split()[1]) for ln in path.read_text().splitlines()[1:] if ln.strip()], ()


def configure(values):
    return values["watt_floor"]


def finish(parts, floor):
    watts = parts.pop("wattmeter", None)
    if watts is not None:
        parts["wattmeter"] = (max(watts), sum(1 for w in watts if w >= (floor or 0.0)))
    return parts
'''

DEMO_RENDER = '''"""The wattmeter's peak in analyze's JSON and terminal summary."""

from __future__ import annotations


def json(b):
    part = b.supplement.part("wattmeter")
    return {} if part is None else {"wattmeter": {"peak_w": part[0], "readings": part[1]}}


def text(b, console, top):
    part = b.supplement.part("wattmeter")
    if part is not None:
        console.print(f"wattmeter: peak {part[0]} W")
'''


def test_a_new_side_format_is_one_folder_and_one_renderer(tmp_path: Path) -> None:
    """A copy of the package with sources/wattmeter/ (its sniff, reading and one command-line
    option) and render/side/wattmeter.py added, nothing else touched: analyze reads, attaches and
    shows it, and takes its option."""
    pkg = tmp_path / "src" / "bootlens"
    shutil.copytree(SRC, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "sources" / "wattmeter").mkdir()
    (pkg / "sources" / "wattmeter" / "__init__.py").write_text(DEMO_INIT)
    (pkg / "sources" / "wattmeter" / "attach.py").write_text(DEMO_ATTACH)
    (pkg / "render" / "side" / "wattmeter.py").write_text(DEMO_RENDER)
    meter = tmp_path / "power.txt"
    meter.write_text("# wattmeter v1\n0.0 1.5\n0.5 3.25\n1.0 2.0\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "src"), COLUMNS="100")
    log = str(CORPUS / "qemu-arm64-uboot.console.log")
    run = [sys.executable, "-m", "bootlens", "--no-config", "analyze"]
    doc = json.loads(subprocess.run([*run, "--json", log, str(meter)], env=env, capture_output=True, text=True,
                                    check=True).stdout)
    assert doc["boots"][0]["wattmeter"] == {"peak_w": 3.25, "readings": 3}
    assert ["wattmeter", str(meter)] in [[s["what"], s["path"]] for s in doc["boots"][0]["systemd_analyze"]["sources"]]
    text = subprocess.run([*run, log, str(meter)], env=env, capture_output=True, text=True, check=True).stdout
    assert "wattmeter: peak 3.25 W" in text
    floored = subprocess.run([*run, "--json", log, str(meter), "--watt-floor", "2"], env=env, capture_output=True,
                             text=True, check=True).stdout
    assert json.loads(floored)["boots"][0]["wattmeter"] == {"peak_w": 3.25, "readings": 2}
    alone = subprocess.run([*run, log, "--watt-floor", "2"], env=env, capture_output=True, text=True)
    assert alone.returncode == 2 and alone.stderr == "bootlens: error: --watt-floor: no wattmeter log among the inputs\n"
    helped = subprocess.run([*run, "--help"], env=env, capture_output=True, text=True, check=True).stdout
    assert "--watt-floor W" in helped
    # and the installed package has no such format: the copy alone grew one
    assert importlib.util.find_spec("bootlens.sources.wattmeter") is None
