"""The build-time decision pyproject.toml cannot express: with the native accelerator or without.

With cargo on PATH (or named by $CARGO), bootlens._scan is built from native/ (Rust + PyO3)
against CPython's stable ABI, so the wheel is tagged cp311-abi3-<platform> and installs on every
CPython >= 3.11. Without cargo no extension is declared at all, so the wheel is pure Python and
tagged py3-none-any: an optional extension that is declared but not built would still tag the
wheel cp311-cp311-<platform>, which every other Python refuses. The same holds when cargo is there
but the build fails (a toolchain too old, a missing linker): the extension is optional, so the
build goes on, says so, and the wheel is tagged as the pure-Python wheel it then is.
Everything else is in pyproject.toml.
"""

import glob
import os
import shutil
from importlib.machinery import EXTENSION_SUFFIXES

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools_rust import Binding, RustExtension


class bdist_wheel_native_or_pure(bdist_wheel):
    """bdist_wheel that tags the wheel pure Python when the optional native module was not built."""

    def run_command(self, command: str) -> None:
        super().run_command(command)
        if command != "build" or self.root_is_pure:
            return
        build_lib = self.get_finalized_command("build").build_lib
        if not any(glob.glob(os.path.join(build_lib, "bootlens", "_scan" + s)) for s in EXTENSION_SUFFIXES):
            print("bootlens: the native accelerator was not built; this is a pure-Python wheel (py3-none-any)")
            self.root_is_pure = True


if os.environ.get("CARGO") or shutil.which("cargo"):
    setup(
        rust_extensions=[
            RustExtension(
                "bootlens._scan",
                "native/Cargo.toml",
                binding=Binding.PyO3,
                optional=True,  # a toolchain that fails still gives a working (pure-Python) bootlens
                debug=False,  # editable installs would otherwise build a debug (10x slower) module
            )
        ],
        options={"bdist_wheel": {"py_limited_api": "cp311"}},
        cmdclass={"bdist_wheel": bdist_wheel_native_or_pure},
    )
else:
    setup()
