"""``python -m bootlens``: the same as ``bootlens``."""

from .cli import main

main()
