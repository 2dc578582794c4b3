"""Whether a file is a bootlens recording: :func:`is_recording`, apart from the reader in
:mod:`bootlens.capture.recording` (which imports it back, with :data:`FORMAT`).

Every log ``bootlens analyze`` reads is asked this first; a plain console log should not pay for
importing the recording reader and writer (their dataclasses, base64, json) to hear "no".
"""

from __future__ import annotations

FORMAT = "bootlens-recording"
# A UTF-8 byte-order mark, as Windows editors (Notepad "UTF-8 with BOM") and some terminal
# programs put before text they save: not part of the file's text, a recording's or a log's.
BOM = b"\xef\xbb\xbf"


def is_recording(head: bytes) -> bool:
    """True if these first bytes of a file start a bootlens recording (after a byte-order mark)."""
    return head.removeprefix(BOM).lstrip()[:1] == b"{" and FORMAT.encode() in head[:512]
