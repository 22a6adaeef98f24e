"""Every unit's hardware declaration, read from the generator modules' ``UNITS``.

One line per generator module; the declarations themselves (name, summary, config class,
presets, generator, cycle model) live in those modules (README, "Anatomy of a unit").
``FORMAL_EXTRAS`` adds, for the units that have one, a formal harness of unit-specific
properties to the stream-protocol proof (README, "Formal verification").
"""
from __future__ import annotations

from pimforge.hw.fp import add, cmp, convert, exp, fma, log, mul, recip
from pimforge.hw.hermes import act, gemv
from pimforge.hw.hilos import attention, qk_gemv, sv_gemv, two_pass_softmax
from pimforge.hw.lolpim import dispatcher, pingpong
from pimforge.hw.pam import device, pu, pu_formal, ru, softmax, system
from pimforge.hw.pamif import buffer, buffer_formal, interface, receiver, sender, sender_formal
from pimforge.hw.papi import pu as papi_pu, scheduler

__all__ = ["GENERATORS", "HW_UNITS", "UNIT_MODULES", "FORMAL_EXTRAS"]

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
