"""What each input of ``analyze``, ``report`` or ``compare`` is, told by its content (never by
its name): a log (or recording, or run folder), or a side file of one of the formats in
``sources/`` (:mod:`bootlens.sources.base`): a boot-data file, or a supplement that adds to a
boot (systemd-analyze outputs, a bootchart, an ftrace buffer, an strace, a logic analyzer capture).

Apart from :mod:`bootlens.sources.supplements` for start-up: every log is asked, and the answer for a
plain console log needs only each format's light sniff (in ``sources/<format>/__init__.py``), not the
readers nor the supplement model.
"""

from __future__ import annotations

import os

from ..capture.recording_sniff import is_recording
from .base import Head, formats
from .systemd_analyze import SYSTEMD_ANALYZE as SYSTEMD_ANALYZE
from .systemd_analyze import collection_files as collection_files

# A recording is a log whatever it holds: the formats asked before this point (a tar archive, a
# boot-data file: neither can be mistaken for one) may claim a file first, the others only a file
# that is not a recording.
RECORDING_ORDER = 25

formats()  # the formats' sniffs imported with this module: every input is classified


def classify(name: str) -> str | None:
    """What an input is when it is not a boot log: the kind a side format's sniff answers
    ("bootchart", "bootdata", "logic", "strace", "ftrace", a systemd-analyze command such as
    "blame", or "collection": a folder of systemd-analyze outputs, as ``target boot --collect``
    writes); None for a log, a recording, a run folder or anything unreadable (the log reader
    reports that)."""
    if name == "-":
        return None
    try:
        if os.path.isdir(name):
            for fmt in formats():
                if fmt.sniff_dir is not None and (kind := fmt.sniff_dir(name)) is not None:
                    return kind
            return None
        if not os.path.isfile(name):
            return None
        head = Head(name)
        recording_checked = False
        for fmt in formats():
            if fmt.sniff is None:
                continue
            if fmt.sniff_order > RECORDING_ORDER and not recording_checked:
                recording_checked = True
                if is_recording(head.text[:512].encode()):
                    return None
            if (kind := fmt.sniff(name, head)) is not None:
                return kind
        return None
    except OSError:
        return None
