"""Golden model of ``pamif_buffer``: its drain words are the golden re-layout's destination
words in list order (:func:`pimforge.sim.golden.pamif.relayout.write_beats`)."""
from pimforge.sim.golden.pamif.relayout import relayout, write_beats

__all__ = ["relayout", "write_beats"]
