"""Bench of ``hilos_attention``: jobs (one KV head and its d_group queries each) as beat streams,
with the bench playing the FPGA's DRAM.

The DRAM model holds K, V and the scores the kernel spills between the two softmax passes:

* ``i_k`` and ``i_v`` stream the K and V regions; their first beats come ``latency`` cycles after
  the start, then at most ``bandwidth`` beats per cycle (a fixed valid pattern).
* ``o_s`` is the score write port (its ready follows the same bandwidth pattern) and ``i_s`` the
  read port: score beat k can be read ``latency`` cycles after the kernel wrote it.
* ``i_q`` and ``i_pre`` come from the host (no throttling in the no-stall phase).

Expected outputs come from the golden model (:func:`pimforge.sim.golden.hilos.attention.hilos_group`):
``o_s`` (every score beat, bit-exact) and ``o`` (O of each job).  The read-back stream ``i_s``
replays the golden scores; since ``o_s`` is checked bit for bit, that is what the kernel wrote.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pimforge.base.formats import FP16
from pimforge.base.numerics import float_bits
from pimforge.sim.benches.hilos.beats import k_beats, o_beats, q_beats, row_block_beats, v_beats
from pimforge.sim.benches.pam.inputs import make_inputs
from pimforge.sim.golden.hilos import attention as h_att
from pimforge.sim.harness.job import Job, Phase, concat_fields
from pimforge.sim.harness.stall import StallPattern

__all__ = ["HilosJob", "attention_inputs", "attention_phase", "attention_job", "random_job",
           "bandwidth_pattern", "DEFAULT_JOBS"]

# default bench: (stored tokens, precomputed tokens, masked fraction) per job
DEFAULT_JOBS = ((1, 0, 0.0), (40, 0, 0.25), (64, 5, 0.0), (33, 3, 0.3))


@dataclass
class HilosJob:
    """One job: fp16 bits ``q16`` (G, d), ``k16`` (n_k, d), ``v16`` (n, d), ``mask`` (n,) bool,
    ``pre16`` (G, c) precomputed scores in the score format (or None); ``golden`` filled in."""

    q16: np.ndarray
    k16: np.ndarray
    v16: np.ndarray
    mask: np.ndarray
    pre: np.ndarray | None = None
    golden: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.v16)


def random_job(cfg, rng, n_k: int, c: int = 0, masked: float = 0.0, kind: str = "normal"):
    G, d = cfg.d_group, cfg.head_dim
    q, k, v = make_inputs(kind, 1, n_k + c, d, rng)
    q = np.concatenate([q, rng.standard_normal((G - 1, d)).astype(np.float16)]) if G > 1 else q
    mask = rng.random(n_k + c) < masked
    pre = None
    if c:
        s = q.astype(np.float64) @ k[0, n_k:].astype(np.float64).T * cfg.scale
        pre = float_bits(cfg.score_fmt, s)
    return HilosJob(float_bits(FP16, q), float_bits(FP16, k[0, :n_k]), float_bits(FP16, v[0]),
                    mask, pre)



def attention_inputs(cfg, jobs) -> tuple:
    """``(inputs, expected)`` field dicts of a run of ``jobs`` back to back (golden filled in)."""
    w = cfg.score_fmt.width
    qs, ks, pres, vs, ss, os_ = [], [], [], [], [], []
    for j in jobs:
        n_k = len(j.k16)
        g = h_att.hilos_group(j.q16, j.k16, j.v16, cfg.block, j.mask, cfg.scale, cfg.score_fmt,
                          cfg.mask_value, j.pre)
        j.golden = g
        qb = q_beats(cfg, j.q16)
        qb["pre"] = [int(j.pre is not None and np.size(j.pre) > 0)] * len(qb["data"])
        qs.append(qb)
        ks.append(k_beats(cfg, j.k16, j.mask[:n_k]))
        if qb["pre"][0]:
            pres.append(row_block_beats(cfg, j.pre, j.mask[n_k:], w))
        vs.append(v_beats(cfg, j.v16))
        ss.append(row_block_beats(cfg, g["s"], j.mask, w, g["segments"]))
        os_.append(o_beats(cfg, g["O"]))
    pre = concat_fields(pres) if pres else {"data": [], "keep": [], "mask": [], "last": []}
    inputs = {"i_q": concat_fields(qs), "i_k": concat_fields(ks), "i_pre": pre, "i_v": concat_fields(vs), "i_s": concat_fields(ss)}
    expected = {"o_s": concat_fields(ss), "o": concat_fields(os_)}
    return inputs, expected


def bandwidth_pattern(bandwidth: float) -> StallPattern:
    """A fixed valid/ready pattern of ``bandwidth`` beats per cycle (1.0 = every cycle)."""
    if not 0 < bandwidth <= 1:
        raise ValueError(f"bandwidth must be in (0, 1] beats per cycle, not {bandwidth!r}")
    if bandwidth == 1:
        return StallPattern()
    period = 64
    return StallPattern.cycle([int((i + 1) * bandwidth) > int(i * bandwidth)
                               for i in range(period)])


def attention_phase(cfg, jobs, name: str = "no stalls", bandwidth: float = 1.0,
                    latency: int = 0, stall_p: float = 0.0, seed: int = 1) -> Phase:
    """A phase running ``jobs`` against the DRAM model (``bandwidth`` beats per cycle per port,
    ``latency`` cycles), optionally with random stalls of probability ``stall_p`` added on every
    stream (both sides)."""
    inputs, expected = attention_inputs(cfg, jobs)
    bw = bandwidth_pattern(bandwidth)
    valid = {s: bw for s in ("i_k", "i_v", "i_s")}
    ready = {"o_s": bw}
    if stall_p:
        valid = {s: StallPattern.random(stall_p, seed + i)
                 for i, s in enumerate(("i_q", "i_k", "i_pre", "i_s", "i_v"))}
        ready = {"*": StallPattern.random(stall_p, seed + 9)}
    return Phase(name, inputs, expected, valid_stall=valid, ready_stall=ready,
                 start_delay={"i_k": latency, "i_v": latency},
                 after={"i_s": ("o_s", latency)})


def attention_job(cfg, rng, seed: int = 1, jobs=DEFAULT_JOBS, stalls: bool = True,
                  stall_p: float = 0.3, latency: int = 20) -> Job:
    """The default bench: ``jobs`` (stored, precomputed, masked fraction) without stalls, then
    again with random stalls on every stream."""
    js = [random_job(cfg, rng, n_k, c, frac) for n_k, c, frac in jobs]
    phases = [attention_phase(cfg, js, latency=latency)]
    if stalls:
        phases.append(attention_phase(cfg, js, f"random stalls p={stall_p}", latency=latency,
                                      stall_p=stall_p, seed=seed))
    return Job(phases)


BENCHES = {"hilos_attention": attention_job}
