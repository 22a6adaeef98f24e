"""Configs of the PAPI units: ``papi_scheduler`` (the arithmetic-intensity scheduler, PAPI §5.2)
and ``papi_pu`` (a bank-level PIM processing unit of FC-PIM / Attn-PIM, §6).
"""
from __future__ import annotations

from dataclasses import dataclass

from pimforge.base.config import UnitConfig, param
from pimforge.base.errors import ConfigError

# ==== papi_scheduler =============================================================================

_SCHEDULER_ALL: list = []

# ==== end of papi_scheduler ======================================================================


# ==== papi_pu ====================================================================================

_PU_ALL: list = []

# ==== end of papi_pu =============================================================================

__all__ = _SCHEDULER_ALL + _PU_ALL
