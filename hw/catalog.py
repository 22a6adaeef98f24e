"""Every unit's hardware declaration, read from the generator modules' ``UNITS``.

One line per generator module; each declaration (:class:`~pimforge.hw.core.unit.HwUnit`: name,
summary, paper section, config class, presets with their clocks, generator, cycle model, formal
environment, synthesis-benchmark config) lives in its module, so adding a unit touches its own
files and one line here.
"""
from __future__ import annotations

from pimforge.hw.fp import add, cmp, convert, exp, fma, log, mul, recip
from pimforge.hw.hermes import act, gemv
from pimforge.hw.hilos import attention, qk_gemv, sv_gemv, two_pass_softmax
from pimforge.hw.lolpim import dispatcher, pingpong
from pimforge.hw.pam import device, pu, ru, softmax, system
from pimforge.hw.pamif import buffer, interface, receiver, sender
from pimforge.hw.papi import pu as papi_pu, scheduler

__all__ = ["GENERATORS", "HW_UNITS", "UNIT_MODULES"]

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
