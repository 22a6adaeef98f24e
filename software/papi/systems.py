"""The five systems of §7 on one decoding iteration and on whole static batches: FC on the GPUs
or on the FC stacks (chosen per iteration by the §5 scheduler for PAPI), attention on the
attention stacks, the links between them; alpha calibrated at our own GPU / FC-PIM crossover."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from pimforge.software import workloads as wl
from pimforge.software.energy import EnergyResult, add_counts, scale_counts
from pimforge.software.papi.config import (
    ATTN_STACKS, ENERGY_NODE, FC_STACKS, FPU_AREA_PAPER, SYSTEM_SETUP
)
from pimforge.software.papi.hardware import (
    PRICES, Cost, allreduce, attn_transfer, fc_transfer, gpu_attention, gpu_fc, pim_attention,
    pim_fc, pim_kind
)
from pimforge.software.papi.sched import placements
from pimforge.software.papi.workload import sample_requests

__all__ = ["Hw", "hw_for", "fc_matrices", "fc_layer", "fc_cost", "iteration", "run_batch", "calibrate_alpha",
           "RunResult", "run_system", "ALPHA_GRID", "PARTS"]

ALPHA_GRID = tuple(range(1, 1025))
PARTS = ("FC", "attention", "communication", "prefill")


@dataclass(frozen=True)
class Hw:
    """One system's hardware: its FC and attention stack kinds and the power cap."""

    name: str
    fc: str
    fc_kind: object
    attn_kind: object
    cap: bool = True


def hw_for(system: str, fpu_area: float = FPU_AREA_PAPER, fc_fpus: int = 4,
           cap: bool = True, fc: str = "") -> Hw:
    """The hardware of one of §7's systems (FC-PIM as ``fc_fpus``P1B; ``fc`` overrides where
    its FC runs: dynamic, gpu or pim)."""
    s = SYSTEM_SETUP[system]
    f, b = s["fc_pu"]
    if f == 4:
        f = fc_fpus
    return Hw(system, fc or s["fc"], pim_kind(f, b, fpu_area), pim_kind(*s["attn_pu"], fpu_area), cap)


def fc_matrices(m) -> list:
    """(rows, cols, count per layer) of one layer's FC kernels: QKV, projection, FFN."""
    up = (2 if m.gated_ffn else 1) * m.ffn
    return [(3 * m.hidden, m.hidden), (m.hidden, m.hidden), (up, m.hidden), (m.hidden, m.ffn)]


@lru_cache(maxsize=1 << 14)
def fc_layer(hw: Hw, mname: str, n: int, where: str) -> tuple:
    """(compute, communication) Cost of one layer's FC kernels on ``n`` tokens, ``where`` gpu or
    pim; the LM head is counted once per iteration by :func:`iteration`."""
    m = wl.get_model(mname)
    return fc_cost(hw, fc_matrices(m), m.hidden, n, where)


def fc_cost(hw: Hw, matrices, hidden: int, n: int, where: str) -> tuple:
    """(compute, communication) Cost of FC kernels of shapes ``matrices`` ((rows, cols) each) on
    ``n`` tokens, ``where`` gpu (with the two all-reduces of a layer of width ``hidden``) or
    pim (with each kernel's transfers)."""
    comp, comm = Cost(), Cost()
    for rows, cols in matrices:
        if where == "gpu":
            comp += gpu_fc(rows, cols, n)
        else:
            comp += pim_fc(hw.fc_kind, FC_STACKS, rows, cols, n, hw.cap)
            comm += fc_transfer(n, rows, cols, FC_STACKS)
    if where == "gpu":
        comm += allreduce(n, hidden)
        comm += allreduce(n, hidden)
    return comp, comm


@lru_cache(maxsize=1 << 12)
def _lm_head(hw: Hw, mname: str, n: int, where: str) -> Cost:
    m = wl.get_model(mname)
    if where == "gpu":
        return gpu_fc(m.vocab, m.hidden, n)
    c = pim_fc(hw.fc_kind, FC_STACKS, m.vocab, m.hidden, n, hw.cap)
    c += fc_transfer(n, m.vocab, m.hidden, FC_STACKS)
    return c


def iteration(hw: Hw, m, ctx: np.ndarray, tlp: int, where: str) -> dict:
    """One decoding iteration of the running requests (contexts ``ctx``), FC ``where``: Cost by
    part (FC, attention, communication)."""
    n = len(ctx) * tlp
    comp, comm = fc_layer(hw, m.name, n, where)
    att = pim_attention(hw.attn_kind, ATTN_STACKS, m, ctx, tlp, hw.cap)
    link = attn_transfer(n, m.hidden)
    head = _lm_head(hw, m.name, n, where)
    L = m.layers
    fc = comp.times(L)
    fc += head
    comm = comm.times(L)
    comm += link.times(L)
    return {"FC": fc, "attention": att.times(L), "communication": comm}


def _prefill(hw: Hw, m, inp: np.ndarray) -> Cost:
    """The prompts: on the GPUs where there are GPUs (§7.4: compute-bound), on the PIM stacks in
    the PIM-only systems (a GEMM of all prompt tokens; causal attention at half the prompt)."""
    n = int(inp.sum())
    where = "pim" if hw.fc == "pim" else "gpu"
    comp, comm = fc_layer(hw, m.name, n, where)
    if where == "gpu":
        att = gpu_attention(m, inp / 2, int(np.ceil(inp.mean())))
    else:
        att = pim_attention(hw.attn_kind, ATTN_STACKS, m, inp // 2 + 1, int(np.ceil(inp.mean())),
                            hw.cap)
    c = Cost()
    for part in (comp, comm, att):
        c += part.times(m.layers)
    c += _lm_head(hw, m.name, len(inp), where)
    return c


@dataclass
class RunResult:
    """One static batch (or their mean) on one system."""

    system: str
    seconds: float
    counts: dict                                      # the batch's actions (hardware.Cost)
    tokens: int
    iterations: int
    parts: dict = field(default_factory=dict)        # seconds by part
    gpu_iters: int = 0                                # iterations with FC on the GPUs
    rlp: list = field(default_factory=list)           # RLP per iteration

    @property
    def joules(self) -> float:
        return PRICES.joules(self.counts)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds

    @property
    def tokens_per_j(self) -> float:
        return self.tokens / self.joules

    def energy(self, label: str = "") -> EnergyResult:
        """Per output token: the batch's actions and seconds over its tokens."""
        return EnergyResult(label or self.system, scale_counts(self.counts, 1.0 / self.tokens),
                            self.seconds / self.tokens, ENERGY_NODE)


def run_batch(hw: Hw, m, inp: np.ndarray, out: np.ndarray, tlp: int, alpha: float,
              decode_only: bool = False) -> RunResult:
    """A static batch to its last <eos>: every iteration each running request decodes ``tlp``
    tokens (all accepted); the §5 scheduler places FC for PAPI from RLP x TLP and alpha."""
    steps = -(-out // tlp)                          # iterations each request runs
    iters = int(steps.max())
    eos = np.bincount(steps, minlength=iters + 1)[1:iters + 1]
    where = placements(len(inp), tlp, alpha, eos, hw.fc)
    parts = {p: 0.0 for p in PARTS}
    acts = Cost()
    rlps = []
    if not decode_only:
        pre = _prefill(hw, m, inp)
        parts["prefill"] = pre.s
        acts += pre
    for k in range(iters):
        alive = steps > k
        rlps.append(int(alive.sum()))
        ctx = inp[alive] + k * tlp + 1
        for p, c in iteration(hw, m, ctx, tlp, where[k]).items():
            parts[p] += c.s
            acts += c
    secs = sum(parts.values())
    counts = add_counts(acts.counts, {"static:hbm_stack": (FC_STACKS + ATTN_STACKS) * secs})
    return RunResult(hw.name, secs, counts, int(out.sum()), iters, parts,
                     sum(1 for w in where if w == "gpu"), rlps)


def _pim_wins(hw: Hw, mname: str, n: int) -> bool:
    g = sum(c.s for c in fc_layer(hw, mname, n, "gpu"))
    return sum(c.s for c in fc_layer(hw, mname, n, "pim")) <= g


def calibrate_alpha(m, fpu_area: float = FPU_AREA_PAPER, fc_fpus: int = 4,
                    cap: bool = True, system: str = "PAPI") -> dict:
    """§5.2.1's offline evaluation on our own models: one layer's FC (with its transfers) on the
    six GPUs and on the 30 FC-PIM stacks over RLP x TLP in 1..1024; alpha = the largest value
    at which FC-PIM is not slower (0 if never, 1024 if always).  A coarse scan (1, 2, 3, 4, 6,
    8, 12, ...) brackets the crossover and bisection finds it; ``consistent``: the coarse scan
    changes sides once.  ``system`` names whose FC stacks are compared (AttAcc-only: 1P1B)."""
    hw = hw_for(system, fpu_area, fc_fpus, cap)
    coarse = sorted({v for k in range(11) for v in (2 ** k, 3 * 2 ** k) if v <= ALPHA_GRID[-1]})
    wins = [_pim_wins(hw, m.name, n) for n in coarse]
    flips = sum(1 for a, b in zip(wins, wins[1:]) if a != b)
    if not wins[0]:
        return {"alpha": 0.0, "crossover": 1, "consistent": flips == 0}
    if all(wins):
        return {"alpha": float(ALPHA_GRID[-1]), "crossover": None, "consistent": True}
    k = wins.index(False)
    lo, hi = coarse[k - 1], coarse[k]          # PIM wins at lo, loses at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _pim_wins(hw, m.name, mid) else (lo, mid)
    return {"alpha": float(lo), "crossover": hi, "consistent": flips == 1}


def sample_batch(task: str, batch: int, seed: int) -> tuple:
    """The requests of one static batch."""
    return sample_requests(task, batch, seed)


def run_system(system: str, m, task: str, batch: int, tlp: int, *, alpha: float, batches: int = 2,
               seed: int = 0, decode_only: bool = False, fpu_area: float = FPU_AREA_PAPER,
               fc_fpus: int = 4, cap: bool = True, fc: str = "") -> RunResult:
    """The mean of ``batches`` seeded static batches on one system."""
    hw = hw_for(system, fpu_area, fc_fpus, cap, fc)
    rs = [run_batch(hw, m, *sample_batch(task, batch, seed * 1000 + b), tlp, alpha, decode_only)
          for b in range(batches)]
    parts = {p: float(np.mean([r.parts[p] for r in rs])) for p in PARTS}
    return RunResult(system, float(np.mean([r.seconds for r in rs])),
                     scale_counts(add_counts(*(r.counts for r in rs)), 1.0 / len(rs)),
                     int(round(np.mean([r.tokens for r in rs]))),
                     int(round(np.mean([r.iterations for r in rs]))), parts,
                     int(round(np.mean([r.gpu_iters for r in rs]))), rs[0].rlp)

