"""What every target shares: the ready marker the reference targets print, and the error a
target that cannot be set up or booted raises.
"""

from __future__ import annotations

from ..core.errors import BootlensError

READY_MARKER = "APP READY"


class TargetError(BootlensError):
    """A target could not be set up, configured or booted."""

    exit_code = 2
