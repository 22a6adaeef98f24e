"""Every unit's hardware declaration, read from the generator modules' ``UNITS``.

One line per generator module; the declarations themselves (name, summary, config class,
presets, generator, cycle model) live in those modules (README, "Anatomy of a unit").
``FORMAL_EXTRAS`` adds, for the units that have one, a formal harness of unit-specific
properties to the stream-protocol proof (README, "Formal verification").
"""
from __future__ import annotations

from pimforge.hw.fp import add, cmp, convert, exp, fma, log, mul, recip
from pimforge.hw.hermes import act, gemv
from pimforge.hw.hermes.config import NDP_CLOCK_MHZ
from pimforge.hw.hilos import attention, qk_gemv, sv_gemv, two_pass_softmax
from pimforge.hw.hilos.config import KERNEL_CLOCK_MHZ
from pimforge.hw.lolpim import dispatcher, pingpong
from pimforge.hw.lolpim.aim import AIM_CLOCK_HZ
from pimforge.hw.pam import device, pu, pu_formal, ru, softmax, system
from pimforge.hw.pam.config import HBM_FP32_CLOCK_MHZ, PAPER_TIER_CLOCK_MHZ, TIER_CLOCK_MHZ, TIERS
from pimforge.hw.pamif import buffer, buffer_formal, interface, receiver, sender, sender_formal
from pimforge.hw.pamif.layout import IF_CLOCK_PS
from pimforge.hw.papi import pu as papi_pu, scheduler
from pimforge.hw.papi.hbm import PU_CLOCK_HZ

__all__ = ["GENERATORS", "HW_UNITS", "UNIT_MODULES", "FORMAL_EXTRAS", "PRESET_CLOCKS"]

GENERATORS = (add, cmp, convert, exp, fma, log, mul, recip,
              pu, ru, softmax, device, system,
              qk_gemv, sv_gemv, two_pass_softmax, attention,
              act, gemv,
              buffer, sender, receiver, interface,
              dispatcher, pingpong,
              scheduler, papi_pu)

HW_UNITS = {u.name: u for mod in GENERATORS for u in mod.UNITS}
"""name -> :class:`~pimforge.hw.core.unit.HwUnit`"""

UNIT_MODULES = {u.name: mod.__name__ for mod in GENERATORS for u in mod.UNITS}
"""name -> the generator's module (``pimforge.hw.<area>.<module>``), the root of its family"""

FORMAL_EXTRAS = {"pamif_buffer": buffer_formal.buffer_properties,
                 "pamif_sender": sender_formal.sender_environment,
                 "pam_pu": pu_formal.pu_environment}
"""name -> ``extra(m, dut, dut_module, ports, active)`` for
:class:`~pimforge.hw.core.formal.FormalTop`: the unit's environment, invariants and properties
beyond the stream rules (``pimforge prove`` adds them)"""


def _clocks(unit: str, presets, mhz: float, source: str, target: str = "ASIC") -> dict:
    return {p: {"mhz": float(mhz), "source": source, "target": target}
            for p in presets if p in HW_UNITS[unit].presets}


_HILOS_PRESETS = ("hilos_dgroup1", "hilos_dgroup4", "hilos_dgroup5")
_HILOS_CLOCK = ("HILOS §6.2: the SmartSSD's kernel clock", "FPGA (Kintex UltraScale+ KU15P)")
_PAMIF = ("pam_interface", "pamif_buffer", "pamif_sender", "pamif_receiver")
_NETLIST = "the clock this preset's netlist supports (ASAP7 estimate, hw/pam/config.py)"
PRESET_CLOCKS = {
    **{u: {t: {"mhz": TIER_CLOCK_MHZ[t], "source": _NETLIST, "target": "ASIC",
               "paper_mhz": PAPER_TIER_CLOCK_MHZ[t],
               "paper_source": f"PAM Table 1 / §7.1: the {t} tier's PU clock"}
           for t in TIERS if t in HW_UNITS[u].presets}
       for u in ("pam_pu", "pam_device")},
    **{u: _clocks(u, HW_UNITS[u].presets, NDP_CLOCK_MHZ, "Hermes Table II: the NDP core clock")
       for u in ("hermes_gemv", "hermes_act")},
    **{u: _clocks(u, _HILOS_PRESETS, KERNEL_CLOCK_MHZ, *_HILOS_CLOCK)
       for u in ("hilos_attention", "qk_gemv", "sv_gemv", "two_pass_softmax")},
    "papi_pu": _clocks("papi_pu", HW_UNITS["papi_pu"].presets, PU_CLOCK_HZ / 1e6,
                       "PAPI §6.2: the FPU clock"),
    "lolpim_pingpong": _clocks("lolpim_pingpong", HW_UNITS["lolpim_pingpong"].presets,
                               AIM_CLOCK_HZ / 1e6, "LoL-PIM Table 5: the AiM PU clock"),
    **{u: _clocks(u, HW_UNITS[u].presets, 1e6 / IF_CLOCK_PS,
                  "PAM interface (§6.1): 1 GHz, the memory controller's clock "
                  "(hw/pamif/layout.py IF_CLOCK_PS)")
       for u in _PAMIF},
}
PRESET_CLOCKS["pam_pu"]["hbm_fp32"] = dict(PRESET_CLOCKS["pam_pu"]["hbm"], mhz=HBM_FP32_CLOCK_MHZ)
"""unit -> preset -> ``{"mhz", "source", "target"}``: the clock of the hardware a preset models:
the paper's, or (PAM, whose paper clocks the netlists do not reach) the netlist's, with the
paper's beside it (``paper_mhz``, ``paper_source``).  ``pimforge synth`` checks the preset's
logic depth per stage against it (README, "Synthesis reports"); the system models run their
cycle counts at the same constants."""
