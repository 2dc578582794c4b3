"""The build step pyproject.toml cannot express: the native core bootlens._scan, built from native/.

bootlens parses its hot formats (printk and grabserial framing, the keyword index, initcall_debug,
function_graph) in Rust only, one implementation of each (docs/performance.md), so the extension
is required: without cargo (on PATH or named by $CARGO) the build stops with one line saying how to
get it. It is built against CPython's stable ABI, so the wheel is tagged cp311-abi3-<platform> and
installs on every CPython >= 3.11. Everything else is in pyproject.toml.
"""

import os
import shutil
import sys

from setuptools import setup
from setuptools_rust import Binding, RustExtension
from setuptools_rust.build import build_rust

NO_CARGO = ("bootlens: cargo not found: the native core (native/, Rust) is required to build bootlens; "
            "install it with `apt-get install cargo rustc` (Debian) or https://rustup.rs, then build again")



class build_rust_or_say_why(build_rust):  # type: ignore[misc]
    """build_rust that stops with NO_CARGO, not a traceback, when there is no cargo to build with.
    Checked here, not at the top: an sdist (native/'s sources) needs no compiler."""

    def run(self) -> None:
        if not (os.environ.get("CARGO") or shutil.which("cargo")):
            sys.exit(NO_CARGO)
        super().run()


setup(
    rust_extensions=[
        RustExtension(
            "bootlens._scan",
            "native/Cargo.toml",
            binding=Binding.PyO3,
            debug=False,  # editable installs would otherwise build a debug (10x slower) module
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
    cmdclass={"build_rust": build_rust_or_say_why},
)
