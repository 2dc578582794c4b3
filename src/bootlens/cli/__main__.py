"""``python -m bootlens.cli``: the same as ``bootlens``."""

from . import main

main()
