"""Golden model of ``pamif_sender``: the golden re-layout (:mod:`pimforge.sim.golden.pamif.relayout`):
the read beats, the destination image and the write beats, and the list status."""
from pimforge.sim.golden.pamif.relayout import list_status, read_beats, relayout, write_beats

__all__ = ["list_status", "read_beats", "relayout", "write_beats"]
