"""Stage 6, experiment and optimize: changes and the configurations made of them, and what a
target boots with in each (:mod:`.configs`), how configurations are booted on a target and
measured (:mod:`.measurement`), ``bootlens experiment`` (:mod:`.experiment`) and ``bootlens
optimize`` (:mod:`.optimize`). The targets themselves are :mod:`bootlens.targets`.
"""
