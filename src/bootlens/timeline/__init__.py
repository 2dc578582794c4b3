"""Stage 4, the timeline: an input cut into boots and parsed (:mod:`.boots`), every clock put
on one axis (:mod:`.align`, the only place clocks convert), stages from milestones
(:mod:`.stages`, :mod:`.prekernel`), the analysis of a boot (:mod:`.analyze`), what
``report``/``compare`` take as INPUT (:mod:`.inputs`), the critical chain across layers
(:mod:`.chain`) and what side files say beside bootlens's own figures (:mod:`.agreement`).
"""
