"""``python -m bootlens``: the same as ``bootlens``."""

from .cli import main

main(prog_name="bootlens")  # "Usage: bootlens ...", not "Usage: python -m bootlens ..."
