"""Statistics over repeated boots (:mod:`.figures`: medians with confidence intervals, the
two-sample test) and ``bootlens compare`` (:mod:`.compare`).
"""
