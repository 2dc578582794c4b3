"""Stage 6, experiment and optimize: changes and the configurations made of them
(:mod:`.configs`), a target as an experiment drives it (:mod:`.testbed`), how configurations
are booted and measured (:mod:`.measurement`), ``bootlens experiment`` (:mod:`.experiment`)
and ``bootlens optimize`` (:mod:`.optimize`).
"""
