"""The five systems as :class:`~pimforge.software.llm.ops.Ops`: each runs the operations its
paper puts on its hardware through the units' golden models (or their Verilog)."""
from __future__ import annotations

from pimforge.base.errors import UserError

__all__ = ["SYSTEM_NAMES", "RTL_SYSTEMS", "OPTIONS", "make_ops"]

SYSTEM_NAMES = ("pam", "hilos", "hermes", "lolpim", "papi")
RTL_SYSTEMS = ("pam", "hilos")       # systems whose layer-steps can run on the Verilog
CLASSES = {}
# the run options each system takes
OPTIONS = {"pam": ("backend", "rtl_layers", "rtl_steps"),
           "hilos": ("backend", "rtl_layers", "rtl_steps"),
           "hermes": ("sparse",), "lolpim": (), "papi": ("batch",)}


def make_ops(name: str, **opts):
    """The system ``name``'s Ops, given the options it takes (the others are ignored)."""
    if name not in CLASSES:
        raise UserError(f"--system: unknown system {name!r}; allowed: {', '.join(SYSTEM_NAMES)}")
    return CLASSES[name](**{k: v for k, v in opts.items() if k in OPTIONS[name]})
