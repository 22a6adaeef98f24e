"""Configs of the LoL-PIM units: ``lolpim_dispatcher`` (the on-module DPA dispatcher, LoL-PIM §5,
Fig. 6c) and ``lolpim_pingpong`` (I/O-aware ping-pong buffering for one AiM channel's PU, §6,
Fig. 7b).
"""
from __future__ import annotations

# ==== lolpim_dispatcher (DPA dispatcher) =========================================================

_DISPATCHER_ALL: list = []

# ==== end of lolpim_dispatcher ===================================================================


# ==== lolpim_pingpong (I/O-aware ping-pong buffering) ============================================

_PINGPONG_ALL: list = []

# ==== end of lolpim_pingpong =====================================================================

__all__ = _DISPATCHER_ALL + _PINGPONG_ALL
