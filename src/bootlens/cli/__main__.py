"""``python -m bootlens.cli``: the same as ``bootlens``."""

from .fastpath import main

main()
