"""The five systems as :class:`~pimforge.software.llm.ops.Ops`: each runs the operations its
paper puts on its hardware through the units' golden models (or their Verilog)."""
from __future__ import annotations

from pimforge.base.errors import UserError
from pimforge.software.llm.systems.hermes import HermesOps
from pimforge.software.llm.systems.hilos import HilosOps
from pimforge.software.llm.systems.lolpim import LolpimOps
from pimforge.software.llm.systems.pam import PamOps
from pimforge.software.llm.systems.papi import PapiOps

__all__ = ["SYSTEM_NAMES", "TITLES", "RTL_SYSTEMS", "CLASSES", "OPTIONS", "make_ops"]

SYSTEM_NAMES = ("pam", "hilos", "hermes", "lolpim", "papi")
TITLES = {"pam": "PAM", "hilos": "HILOS", "hermes": "Hermes", "lolpim": "LoL-PIM", "papi": "PAPI"}
RTL_SYSTEMS = ("pam", "hilos")       # systems whose layer-steps can run on the Verilog
CLASSES = {"pam": PamOps, "hilos": HilosOps, "hermes": HermesOps, "lolpim": LolpimOps,
           "papi": PapiOps}
# the run options each system takes
_RUN = ("backend", "rtl_layers", "rtl_steps")
OPTIONS = {"pam": _RUN, "hilos": _RUN, "hermes": _RUN + ("sparse",), "lolpim": _RUN,
           "papi": _RUN + ("batch",)}


def make_ops(name: str, **opts):
    """The system ``name``'s Ops, given the options it takes (the others are ignored)."""
    if name not in CLASSES:
        raise UserError(f"--system: unknown system {name!r}; allowed: {', '.join(SYSTEM_NAMES)}")
    return CLASSES[name](**{k: v for k, v in opts.items() if k in OPTIONS[name]})
