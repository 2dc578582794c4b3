"""Build a kernel from Debian's ``linux-source`` package for a configuration's Kconfig lines.

A configuration's Kconfig lines (:func:`bootlens.experiment.configs.combine` merges them from
its changes) are:

- ``allnoconfig`` first: start from nothing (else from the running kernel's own config);
- ``CONFIG_X=y``: switch X on, with what it depends on (:mod:`.kconfig`);
- ``CONFIG_X=n`` (or ``# CONFIG_X is not set``): switch it off; anything else: set as given.

The kernel's ``make olddefconfig`` settles the result; a build folder is kept per set of
Kconfig lines (``~/.cache/bootlens/kernel/builds/HASH``; ``$BOOTLENS_KERNEL_BUILDS`` names another
folder) and compiled with ccache when it is installed, so a configuration built once is not
built again. :func:`build` returns the Image, the final config and how long it took; a failed build raises :class:`KernelBuildError` (one
line, the build log's path), which ``optimize`` records as the configuration's result.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BootlensError
from .derive import read_config

SOURCE_TARBALLS = "/usr/src"  # where Debian's linux-source-X.Y puts linux-source-X.Y.tar.xz
ALLNOCONFIG = "allnoconfig"
ARCHES = {"arm64": ("arm64", "aarch64-linux-gnu-", "arch/arm64/boot/Image")}


class KernelBuildError(BootlensError):
    """A kernel that could not be configured or built."""

    exit_code = 2


def kernel_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bootlens" / "kernel"


def source_tree(series: str = "6.1") -> Path:
    """The unpacked ``linux-source-SERIES`` tree (unpacked into the cache on first use), or a
    one-line error saying which package to install."""
    tarball = Path(SOURCE_TARBALLS) / f"linux-source-{series}.tar.xz"
    dest = kernel_cache() / f"linux-source-{series}"
    stamp = dest / ".bootlens-unpacked"
    if stamp.exists():  # unpacked whole before (never again under a build that may be running)
        return dest
    if not tarball.exists():
        raise KernelBuildError(f"{tarball} not found: install linux-source-{series} (apt)")
    print(f"bootlens: unpacking {tarball}", file=sys.stderr, flush=True)
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".unpack-{os.getpid()}"
    import tarfile

    with tarfile.open(tarball) as tf:  # the tarball's single top folder is linux-source-SERIES
        tf.extractall(tmp, filter="tar")
    (tmp / f"linux-source-{series}").rename(dest)
    shutil.rmtree(tmp, ignore_errors=True)
    stamp.write_text(str(tarball))
    return dest


def kernel_release(src: Path) -> str:
    """``6.1.192`` from the tree's Makefile."""
    v: dict[str, str] = {}
    for line in (src / "Makefile").read_text().splitlines()[:6]:
        k, _, val = line.partition("=")
        v[k.strip()] = val.strip()
    return f"{v.get('VERSION')}.{v.get('PATCHLEVEL')}.{v.get('SUBLEVEL')}"


@dataclass(frozen=True, slots=True)
class Built:
    """A built kernel: the image to boot, its .config, the build folder, seconds it took (0: cached)."""

    image: Path
    config: Path
    folder: Path
    seconds: float
    lines: tuple[str, ...]  # the Kconfig lines it was built for
    dropped: tuple[str, ...]  # wanted symbols the kernel's own tools left off (unmet dependencies)


def _make(src: Path, out: Path, arch: str, cross: str, *targets: str, jobs: int | None = None,
          log: Path | None = None, timeout_s: float = 4 * 3600) -> None:
    cc = f"{cross}gcc"
    args = ["make", "-C", str(src), f"O={out}", f"ARCH={arch}", f"CROSS_COMPILE={cross}"]
    if shutil.which("ccache"):
        args.append(f"CC=ccache {cc}")
    if jobs:
        args.append(f"-j{jobs}")
    if shutil.which(cc) is None:
        raise KernelBuildError(f"{cc} not found: install gcc-{cross.rstrip('-')} (apt)")
    out.mkdir(parents=True, exist_ok=True)
    with open(log or os.devnull, "ab") as f:
        try:
            p = subprocess.run([*args, *targets], stdout=f, stderr=subprocess.STDOUT, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise KernelBuildError(f"make {' '.join(targets)} timed out") from None
    if p.returncode != 0:
        last = ""
        if log is not None:
            tail = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()][-3:]
            last = ": " + " / ".join(t.strip() for t in tail)[:300]
        raise KernelBuildError(f"make {' '.join(targets)} failed{last}" + (f" (log: {log})" if log else ""))


def configure(src: Path, lines: Sequence[str], running: Path | None, work: Path, arch: str = "arm64"
              ) -> tuple[str, tuple[str, ...]]:
    """The final .config text for ``lines`` (see the module's doc) and the wanted symbols the
    kernel's tools left off."""
    from .kconfig import enable, load

    karch, cross, _ = ARCHES[arch]
    work.mkdir(parents=True, exist_ok=True)
    cfg = work / ".config"
    if lines and lines[0] == ALLNOCONFIG:
        _make(src, work, karch, cross, ALLNOCONFIG, log=work / "configure.log")
        lines = lines[1:]
    elif running is not None:
        shutil.copy(running, cfg)
    else:
        raise KernelBuildError("no configuration to start from: the running kernel's config is not known")
    kc = load(src, karch, cross, cfg)
    on = [ln[7:-2] for ln in lines if ln.startswith("CONFIG_") and ln.endswith("=y")]
    closure = enable(kc, on)
    for ln in lines:  # the other lines, exactly as given
        name, _, value = ln.removeprefix("# ").removesuffix(" is not set").partition("=")
        sym = kc.syms.get(name.removeprefix("CONFIG_"))
        if sym is None or ln.endswith("=y"):
            continue
        sym.set_value("n" if ln.startswith("#") or value == "n" else value)
    kc.write_config(str(cfg), header="")
    _make(src, work, karch, cross, "olddefconfig", log=work / "configure.log")
    final = cfg.read_text()
    got = read_config(final)
    dropped = tuple(s for s in on if got.get(s) != "y" and s not in closure.refused)
    return final, tuple(sorted(set(dropped) | set(closure.refused)))


def build(lines: Sequence[str], running: Path | None, arch: str = "arm64", series: str = "6.1",
          jobs: int | None = None, log: bool = True) -> Built:
    """The kernel for ``lines`` (built, or from the cache when built before)."""
    src = source_tree(series)
    karch, cross, image_rel = ARCHES[arch]
    root = Path(os.environ.get("BOOTLENS_KERNEL_BUILDS") or kernel_cache() / "builds")
    root.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256("\n".join([kernel_release(src), arch, *lines]).encode()).hexdigest()[:16]
    folder = root / key
    image = folder / image_rel
    if image.exists() and (folder / ".bootlens-built").exists():
        dropped = tuple((folder / ".bootlens-dropped").read_text().split())
        return Built(image, folder / ".config", folder, 0.0, tuple(lines), dropped)
    t = time.monotonic()
    if log:
        print(f"bootlens: configuring a {kernel_release(src)} kernel ({len(lines)} Kconfig lines) in {folder}",
              file=sys.stderr, flush=True)
    _, dropped = configure(src, lines, running, folder, arch)
    (folder / ".bootlens-dropped").write_text(" ".join(dropped))
    (folder / "kconfig-lines").write_text("\n".join(lines) + "\n")
    if log:
        print(f"bootlens: building it (make -j{jobs or os.cpu_count()} Image; log: {folder / 'build.log'})",
              file=sys.stderr, flush=True)
    _make(src, folder, karch, cross, "Image", jobs=jobs or os.cpu_count(), log=folder / "build.log")
    (folder / ".bootlens-built").write_text("")
    return Built(image, folder / ".config", folder, time.monotonic() - t, tuple(lines), dropped)


def diffconfig(src: Path, old: Path, new: Path) -> str:
    """``scripts/diffconfig -m`` of the tree: the lines that turn ``old`` into ``new``, in
    Kconfig form, to apply to a product's defconfig."""
    p = subprocess.run([sys.executable, str(src / "scripts" / "diffconfig"), "-m", str(old), str(new)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise KernelBuildError(f"scripts/diffconfig failed: {p.stderr.strip()[:200]}")
    return p.stdout
