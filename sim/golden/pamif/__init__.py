"""Golden models of the PAM interface units (mirrors hw/pamif).

The four units move the same tokens, so one model serves them all: the golden re-layout
(:mod:`pimforge.sim.golden.pamif.relayout`) gives the read beats, the destination image, the
write beats and the list status that each unit's bench checks its part against.
"""

GOLDEN_MODULES = {"buffer": "relayout", "interface": "relayout", "receiver": "relayout",
                  "sender": "relayout"}
"""generator module -> the golden module that serves it, where that is not the module of the
same name (docs/dev/anatomy.md)"""
