#!/usr/bin/env python3
"""How long `optimize --rebuild-kernel` spends building kernels (issue 30): the two kernels
kernel.from_boot derives from our reference boot (tests/data/corpus/qemu-arm64-uboot-initcall
.grabserial-t.log, Debian 6.1.0-56-arm64 with initcall_debug) -- of everything that ran, and of
what the product used -- each configured and built from Debian's linux-source-6.1 into an empty
build folder, once with ccache off (a first build on a new machine) and once with it on after
that (what a second run pays when the configuration changed but most objects did not).

    python3 bench/bench_kernel_build.py            # about 15 minutes on 2 cores
    python3 bench/bench_kernel_build.py --warm     # only the ccache run (needs an earlier build)

Needs linux-source-6.1, gcc-aarch64-linux-gnu, ccache (make test installs them) and the reference
target set up (its Debian config is the diff's base). State the machine's load when quoting the
figures (printed at the start and the end).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from bootlens import analyze_paths  # noqa: E402
from bootlens.core.options import MarkerSpec, ParseOptions  # noqa: E402
from bootlens.kbuild.build import build, source_tree  # noqa: E402
from bootlens.kbuild.derive import derive, read_config  # noqa: E402
from bootlens.kbuild.sourcemap import load_or_index  # noqa: E402
from bootlens.targets.initramfs import init_files  # noqa: E402
from bootlens.targets.qemu import setup  # noqa: E402

LOG = HERE.parent / "tests" / "data" / "corpus" / "qemu-arm64-uboot-initcall.grabserial-t.log"


def main() -> None:
    warm_only = "--warm" in sys.argv
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    tf = setup("qemu-arm64")
    src = source_tree()
    sm = load_or_index(src)
    running = read_config(tf.config.read_text()) if tf.config else None
    boot = analyze_paths([str(LOG)], ParseOptions((MarkerSpec.parse("ready=APP READY"),))).boots[0]
    with open(tf.initramfs, "rb") as f:
        head = f.read(16)
    d = derive(boot.boot, sm, running, init_files(), "console=ttyAMA0 printk.time=1", head)
    kernels = {"what ran": d.symbols, "what the product used": d.needed}
    modes = [("ccache on", False)] if warm_only else [("ccache off", True), ("ccache on", False)]
    for mode, off in modes:
        for name, symbols in kernels.items():
            lines = ("allnoconfig", *(f"CONFIG_{s}=y" for s in symbols))
            with tempfile.TemporaryDirectory(prefix="bootlens-kbench-") as tmp:
                os.environ["BOOTLENS_KERNEL_BUILDS"] = tmp
                if off:
                    os.environ["CCACHE_DISABLE"] = "1"
                else:
                    os.environ.pop("CCACHE_DISABLE", None)
                t = time.monotonic()
                b = build(lines, tf.config, log=False)
                wall = time.monotonic() - t
                size = b.image.stat().st_size
                ys = sum(1 for v in read_config(b.config.read_text()).values() if v == "y")
                print(f"{mode:10}  {name:22} {len(symbols):4} symbols -> {ys:5} =y  Image {size / 2**20:5.1f} MiB  "
                      f"{wall:7.1f} s", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
