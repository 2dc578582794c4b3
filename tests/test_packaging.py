"""Packaging: the sdist and the wheels build, install into new virtualenvs and run from there.

Built once for the module, offline (``python -m build --no-isolation`` with the build tools of the
test extras), from a copy of this checkout's files (``git ls-files``): the sdist, then from that
sdist (so it must carry native/) the wheel with the native core; and from the same sdist a wheel
build where cargo is missing, which must stop with setup.py's one line saying how to get cargo (the
native core is required: docs/performance.md). The wheel is installed into a new virtualenv, as a
user would (``pip install FILE``, dependencies from the index), and run from there:
``bootlens --version`` and ``bootlens analyze`` of a log in tests/data; the abi3 wheel also into a
newer CPython when the machine has one.

One Rust release build in all (the wheel from the sdist; ``pip install`` of the sdist with cargo
does the same build again, so it is not repeated here). It starts from a copy of the checkout's
cargo cache (native/target), which spares some of the dependencies; on 2 busy cores it takes one
to two minutes. Last, clippy checks that the crate keeps to its rust-version, Debian 12's rustc.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import CORPUS

ROOT = Path(__file__).resolve().parents[1]
LOG = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
NO_CARGO = ("bootlens: cargo not found: the native core (native/, Rust) is required to build bootlens; "
            "install it with `apt-get install cargo rustc` (Debian) or https://rustup.rs, then build again")
CARGO = shutil.which("cargo")

pytestmark = pytest.mark.slow  # a Rust release build, a check build, three virtualenvs: about two minutes

if CARGO is None:  # CI must build the native wheel, not skip it
    if os.environ.get("CI"):
        pytest.fail("cargo is not on PATH: the native wheel cannot be built", pytrace=False)
    pytest.skip("cargo is not on PATH: bootlens cannot be built", allow_module_level=True)
try:
    import build  # noqa: F401  (python -m build, from the test extras)
except ImportError:
    if os.environ.get("CI"):
        raise
    pytest.skip("the build package is not installed (pip install -e '.[test]')", allow_module_level=True)


@dataclass(frozen=True)
class Dist:
    """What the module's builds produced."""

    sdist: Path
    wheel: Path  # from the sdist
    wheel_log: str
    no_cargo: subprocess.CompletedProcess[str]  # the wheel build from the sdist without cargo
    work: Path


def _run(cmd: list[str | Path], cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 900) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r


def _env(**extra: str) -> dict[str, str]:
    """The environment without anything that would make bootlens run or build from elsewhere."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CARGO")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    work = tmp_path_factory.mktemp("packaging")
    src = work / "checkout"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():  # a file deleted but not yet committed is still listed
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    # the checkout's cargo cache (dependencies compiled by `make install`), copied so that the
    # test never writes into the checkout
    cargo_target = work / "cargo-target"
    if (ROOT / "native" / "target" / "release").is_dir():
        shutil.copytree(ROOT / "native" / "target" / "release", cargo_target / "release", symlinks=True)
    env = _env(CARGO_TARGET_DIR=str(cargo_target))
    _forget_crate(src, env)
    out = work / "dist"
    # sdist, then the wheel built from the unpacked sdist
    r = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, src], cwd=work, env=env)
    wheel_log = r.stdout + r.stderr
    (work / "build.log").write_text(wheel_log)
    (sdist,) = out.glob("bootlens-*.tar.gz")
    (wheel,) = out.glob("bootlens-*.whl")
    unpacked = work / "unpacked"
    with tarfile.open(sdist) as tf:
        tf.extractall(unpacked, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    (sdist_root,) = unpacked.iterdir()
    no_cargo = work / "bin-without-cargo"
    no_cargo.mkdir()
    shutil.rmtree(sdist_root / "build", ignore_errors=True)
    r = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", work / "no-cargo",
                        sdist_root], cwd=work, env=_env(PATH=str(no_cargo)), capture_output=True, text=True,
                       timeout=900)
    return Dist(sdist, wheel, wheel_log, r, work)


def _forget_crate(checkout: Path, env: dict[str, str]) -> None:
    """The crate's own build out of the cargo cache (its dependencies stay): cargo would otherwise
    find it fresh (it checks the checkout's source files it was built from) and not compile the
    sources of the sdist at all."""
    if CARGO is not None:
        _run([CARGO, "clean", "--offline", "--release", "-p", "bootlens-scan", "--manifest-path",
              checkout / "native" / "Cargo.toml"], cwd=checkout, env=env)


def _venv(dist: Dist, name: str, python: str = sys.executable) -> Path:
    """A new virtualenv with no packages. Its pip is the test's own (pip --python) for this
    Python; another Python gets its own pip (an older pip may not run on a newer Python)."""
    path = dist.work / "venvs" / name
    _run([python, "-m", "venv", *(["--without-pip"] if python == sys.executable else []), path], cwd=dist.work)
    return path


def _install(venv: Path, what: Path, dist: Dist, path: str | None = None) -> str:
    """pip install WHAT into the virtualenv (PATH replaced by ``path`` if given); pip's output."""
    own = (venv / "bin" / "pip").exists()
    pip = [venv / "bin" / "python", "-m", "pip"] if own else [sys.executable, "-m", "pip", "--python", venv / "bin" / "python"]
    r = _run([*pip, "--disable-pip-version-check", "install", "--verbose", "--no-compile", what], cwd=dist.work,
             env=_env(**({"PATH": path} if path else {})))
    return r.stdout + r.stderr


def _bootlens(venv: Path, *args: str, cwd: Path) -> str:
    return _run([venv / "bin" / "bootlens", *args], cwd=cwd, env=_env()).stdout


def _check_installed(venv: Path, dist: Dist) -> dict[str, object]:
    """bootlens runs from the virtualenv (not from this checkout); returns its analysis."""
    where = _run([venv / "bin" / "python", "-c", "import bootlens; print(bootlens.__file__)"],
                 cwd=dist.work, env=_env()).stdout.strip()
    assert where.startswith(str(venv)), where
    version = _bootlens(venv, "--version", cwd=dist.work)
    assert version.strip() == "bootlens, version 0.1.0"
    doc: dict[str, object] = json.loads(
        _bootlens(venv, "analyze", str(LOG), "--marker", "ready=APP READY", "--json", cwd=dist.work))
    boots = doc["boots"]
    assert isinstance(boots, list) and boots[0]["counts"]["initcalls"] == 918  # grep -c 'initcall .* returned'
    text = _bootlens(venv, "analyze", str(LOG), "--marker", "ready=APP READY", "--top", "3", cwd=dist.work)
    assert "APP READY" in text
    return doc


def test_sdist_carries_the_native_sources(dist: Dist) -> None:
    with tarfile.open(dist.sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    for need in ("native/Cargo.toml", "native/Cargo.lock", "native/src/lib.rs", "native/src/parse/initcall.rs",
                 "setup.py", "pyproject.toml", "src/bootlens/cli/__init__.py", "src/bootlens/render/assets/report.js"):
        assert need in names, need
    assert not [n for n in names if n.startswith("native/target")]
    assert not [n for n in names if n.endswith((".so", ".pyc"))]


def _wheel_files(wheel: Path) -> tuple[list[str], str]:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
    return names, meta


def test_native_wheel_is_abi3(dist: Dist) -> None:
    from packaging.tags import Tag, cpython_tags
    from packaging.utils import parse_wheel_filename

    _, _, _, tags = parse_wheel_filename(dist.wheel.name)
    (tag,) = tags
    assert (tag.interpreter, tag.abi) == ("cp311", "abi3"), dist.wheel.name
    # the stable ABI: every CPython from 3.11 on takes it, 3.10 does not
    for minor, ok in ((10, False), (11, True), (12, True), (13, True), (14, True)):
        supported = set(cpython_tags((3, minor), abis=[f"cp3{minor}"], platforms=[tag.platform]))
        assert (Tag("cp311", "abi3", tag.platform) in supported) is ok, minor
    names, meta = _wheel_files(dist.wheel)
    assert "bootlens/_scan.abi3.so" in names
    assert "Root-Is-Purelib: false" in meta
    # compiled from the sources in the sdist (python -m build unpacks it into build-via-sdist-*)
    assert re.search(r"Compiling bootlens-scan v0\.1\.0 \(\S*build-via-sdist-\S*/native\)", dist.wheel_log), \
        dist.work / "build.log"


def test_build_without_cargo_says_why(dist: Dist) -> None:
    """No cargo, no bootlens: the build stops, and the last thing it says is how to get cargo."""
    r = dist.no_cargo
    assert r.returncode != 0
    assert NO_CARGO in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert not list((dist.work / "no-cargo").glob("*.whl"))


@pytest.fixture(scope="module")
def wheel_venv(dist: Dist) -> tuple[Path, dict[str, object]]:
    """A virtualenv with the wheel built from the sdist, and its analysis of LOG."""
    venv = _venv(dist, "wheel")
    _install(venv, dist.wheel, dist)
    return venv, _check_installed(venv, dist)


def test_wheel_installs_and_runs(dist: Dist, wheel_venv: tuple[Path, dict[str, object]]) -> None:
    venv, _ = wheel_venv
    r = subprocess.run([venv / "bin" / "python", "-c", "import bootlens._scan as m; print(m.__file__)"],
                       capture_output=True, text=True, env=_env(), cwd=dist.work)
    assert r.stdout.strip() == str(next(venv.glob("lib/python3*/site-packages/bootlens/_scan.abi3.so")))


def _newer_python() -> str | None:
    """A CPython newer than 3.11 on this machine (for the abi3 wheel), or None."""
    candidates = [shutil.which(f"python3.{m}") for m in (14, 13, 12)]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += sorted((str(p) for p in pyenv.glob("3.1[2-9]*/bin/python3")), reverse=True)
    for c in filter(None, candidates):
        r = subprocess.run([c, "-c", "import sys, venv; print(sys.version_info >= (3, 12))"],
                           capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip() == "True":
            return c
    return None


def test_abi3_wheel_runs_on_a_newer_python(dist: Dist) -> None:
    python = _newer_python()
    if python is None:
        pytest.skip("no CPython >= 3.12 on this machine")
    venv = _venv(dist, "newer", python=python)
    _install(venv, dist.wheel, dist)
    _check_installed(venv, dist)


def test_native_crate_keeps_to_its_rust_version(tmp_path: Path) -> None:
    """native/Cargo.toml's rust-version is Debian 12's rustc (1.63), so that `make` can build the
    accelerator with Debian's own Rust. clippy's incompatible_msrv names every use of a standard
    library API that is newer (std::sync::OnceLock, 1.70, once slipped in); a check build, about
    30 s from cold."""
    if subprocess.run([CARGO, "clippy", "--version"], capture_output=True).returncode != 0:
        pytest.skip("cargo clippy is not installed")
    _run([CARGO, "clippy", "--offline", "--quiet", "--manifest-path", ROOT / "native" / "Cargo.toml", "--",
          "-A", "clippy::all", "-D", "clippy::incompatible_msrv"], cwd=tmp_path,
         env=_env(CARGO_TARGET_DIR=str(tmp_path / "target")))
