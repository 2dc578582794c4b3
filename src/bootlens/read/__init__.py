"""Stage 2, read: bytes -> clean text -> :class:`~bootlens.core.lines.Lines` (:mod:`.reader`),
the framings other tools wrote (LAVA, journalctl, dmesg -T/-x: :mod:`.framings`; the journal's
JSON and export forms: :mod:`.journal`) and the second pass over the framed stamps
(:mod:`.quirks`: glued stamps, torn levels, host-clock restarts).
"""
