"""The core: what every stage shares and nothing of the pipeline. The timeline model
(:mod:`.model`: clock-tagged times, events, boots; :mod:`.lines`: lines as columns), bounded
numbers read from log text, the exception tree, durations as a person reads them
(:mod:`.units`), the user's markers and parse options, ``bootlens.toml``, lazily compiled
patterns, JSON bytes, and the look-up of third-party plugins. It imports nothing of bootlens
but :mod:`bootlens._native`.
"""
