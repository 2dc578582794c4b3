"""Stage 6, experiment and optimize: changes and the configurations made of them
(:mod:`.configs`), a target as an experiment drives it (:mod:`.testbed`), and
``bootlens experiment``/``optimize`` (:mod:`.experiment`).
"""
