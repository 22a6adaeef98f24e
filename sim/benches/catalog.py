"""Every unit's cocotb bench, read from the bench modules' ``BENCHES``.

A unit's bench lives at the mirror of its generator: ``hw/<area>/<module>.py`` ->
``sim/benches/<area>/<module>.py`` (docs/dev/anatomy.md).
"""
from __future__ import annotations

from pimforge.sim.benches.fp import add, cmp, convert, exp, fma, log, mul, recip
from pimforge.sim.benches.hermes import act, gemv
from pimforge.sim.benches.hilos import attention, qk_gemv, sv_gemv, two_pass_softmax
from pimforge.sim.benches.lolpim import dispatcher, pingpong
from pimforge.sim.benches.pam import device, pu, ru, softmax, system
from pimforge.sim.benches.pamif import buffer, interface, receiver, sender
from pimforge.sim.benches.papi import pu as papi_pu, scheduler

__all__ = ["BENCH_MODULES", "BENCHES"]

BENCH_MODULES = (add, cmp, convert, exp, fma, log, mul, recip,
                 pu, ru, softmax, device, system,
                 qk_gemv, sv_gemv, two_pass_softmax, attention,
                 act, gemv,
                 buffer, sender, receiver, interface,
                 dispatcher, pingpong,
                 scheduler, papi_pu)

BENCHES = {name: bench for mod in BENCH_MODULES for name, bench in mod.BENCHES.items()}
"""name -> ``bench(cfg, rng, seed=1, **kw) -> Job``"""
