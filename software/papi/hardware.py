"""The PAPI hardware as the system model sees it: eqs. 3-4 (banks per PIM die), the Fig. 7 power
model and its 116 W cap, one FC matrix or one attention layer on a set of PIM stacks (timed by
the ``papi_pu`` cycle model through :mod:`~pimforge.software.papi.pim_time`), the A100 roofline
and the links (§6.3).

Energy is counted, not computed here: each :class:`Cost` carries the actions of its step (bank
bits read, PIM MACs and their activation transfers, GPU FLOPs and HBM bits, link bits, seconds of
static power) and the shared energy table (:mod:`pimforge.hw.core.energy`, at
:data:`~pimforge.software.papi.config.ENERGY_NODE`) prices them."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pimforge.hw.core.energy import table
from pimforge.software.energy import add_counts, scale_counts
from pimforge.software.papi.config import (
    ENERGY_NODE, GPU, GPUS, HBM, NVLINK, PCIE, POWER_BUDGET_W
)
from pimforge.software.papi.pim_time import LANES, gemv_seconds

__all__ = ["bank_bound", "banks_per_die", "PimKind", "pim_kind", "Cost", "pim_fc",
           "gpu_fc", "pim_attention", "gpu_attention", "allreduce", "fc_transfer",
           "attn_transfer", "power_w", "pim_counts", "background_w", "PRICES", "LINK_LATENCY_S",
           "BANK_GROUP"]

BANK_GROUP = 32          # §6.1: 96 banks = 3 bank groups; a die keeps whole groups
LINK_LATENCY_S = 2e-6    # assumed: one transfer over NVLink or PCIe
BYTES = 2                # fp16
WEIGHT_BITS = 8 * BYTES
PRICES = table(ENERGY_NODE)   # the FPUs sit on the HBM die (22 nm); the rest are device entries


def background_w() -> float:
    """One stack's refresh and background power (the table's ``static:hbm_stack``)."""
    return PRICES.pj("static:hbm_stack")


def bank_bound(fpus_per_bank: float, fpu_area: float) -> float:
    """Eq. 3 solved for m: the most banks a die holds with ``fpus_per_bank`` FPUs each."""
    return HBM.die_area / (fpus_per_bank * fpu_area + HBM.bank_area)


def banks_per_die(fpus_per_bank: float, fpu_area: float) -> int:
    """Eq. 3's bound in whole bank groups, at most a standard die's banks (eq. 4: 96)."""
    m = int(math.floor(bank_bound(fpus_per_bank, fpu_area) + 1e-9))
    return min(HBM.banks_std, m // BANK_GROUP * BANK_GROUP)


@dataclass(frozen=True)
class PimKind:
    """A PIM stack of processing groups: ``fpus`` FPUs shared by ``banks`` banks (xPyB)."""

    fpus: int
    banks: int
    banks_die: int

    @property
    def name(self) -> str:
        return f"{self.fpus}P{self.banks}B"

    @property
    def groups(self) -> int:
        """Processing groups per stack."""
        return HBM.dies * self.banks_die // self.banks

    @property
    def capacity(self) -> float:
        return HBM.dies * self.banks_die * HBM.bank_bytes


def pim_kind(fpus: int, banks: int, fpu_area: float) -> PimKind:
    """The stack for an xPyB configuration, its banks per die from eq. 3."""
    return PimKind(fpus, banks, banks_per_die(fpus / banks, fpu_area))


@dataclass
class Cost:
    """Seconds of one step and the actions it performs (action key -> count; seconds for the
    ``static:`` keys); :attr:`j` prices them with the energy table."""

    s: float = 0.0
    counts: dict = field(default_factory=dict)

    @property
    def j(self) -> float:
        return PRICES.joules(self.counts)

    def __iadd__(self, o):
        self.s += o.s
        self.counts = add_counts(self.counts, o.counts)
        return self

    def times(self, k: float) -> "Cost":
        """``k`` copies of this step in sequence (a layer's cost over the model's layers)."""
        return Cost(k * self.s, scale_counts(self.counts, k))


def pim_counts(weights: float, macs: float) -> dict:
    """Fig. 7's three parts: DRAM access (each fp16 weight read once from its bank, one 32-byte
    column per 16 weights: the reuse is served from the PU's buffer), the activation's transfer
    to the bank and the FPU's MAC, one each per MAC."""
    return {"dram:hbm_pim:bit": weights * WEIGHT_BITS, "pim:xfer:e5m10": macs,
            "pim:mac:e5m10": macs}


def power_w(kind: PimKind, reuse: int) -> float:
    """Power of one stack with every FPU busy at data reuse ``reuse`` (Fig. 7c): one second's
    actions priced, plus the stack's background."""
    macs = kind.groups * kind.fpus * LANES * HBM.fpu_hz
    return PRICES.joules(add_counts(pim_counts(macs / reuse, macs), {"static:hbm_stack": 1.0}))


def _capped(t: float, e_stack: float, cap: bool) -> float:
    """The stack's time under the power budget: its energy may not exceed 116 W x time."""
    return max(t, e_stack / (POWER_BUDGET_W - background_w())) if cap else t


def pim_fc(kind: PimKind, stacks: int, rows: int, cols: int, n: int, cap: bool = True) -> Cost:
    """Y = W X with W (rows x cols) in 2D blocks over every processing group of ``stacks``
    stacks (§6.4: rows over banks, columns over bank groups and pseudo-channels), X carrying
    ``n`` = RLP x TLP tokens."""
    total = stacks * kind.groups
    cs = 1 if rows >= total else min(2 ** math.ceil(math.log2(total / rows)), max(1, cols // 64))
    rg, cg = -(-rows * cs // total), -(-cols // cs)
    t = gemv_seconds(rg, cg, n, kind.fpus, kind.banks)
    c = pim_counts(rows * cols, rows * cols * n)
    return Cost(_capped(t, PRICES.joules(c) / stacks, cap), c)


def pim_attention(kind: PimKind, stacks: int, m, ctx: np.ndarray, tlp: int,
                  cap: bool = True) -> Cost:
    """One layer's attention for requests of context ``ctx``: (request, head) pairs over the
    stacks (§6.4: one head per device), each pair's K^T and V over the stack's groups."""
    pairs = np.repeat(ctx.astype(np.int64), m.heads)
    load = np.bincount(np.arange(len(pairs)) % stacks, weights=pairs, minlength=stacks)
    busiest = float(load.max())
    rg = int(math.ceil(busiest / kind.groups))
    d = m.head_dim
    t = (gemv_seconds(rg, d, tlp, kind.fpus, kind.banks)
         + gemv_seconds(d, rg, tlp, kind.fpus, kind.banks))
    w = 2.0 * float(pairs.sum()) * d
    e_busy = PRICES.joules(pim_counts(2.0 * busiest * d, 2.0 * busiest * d * tlp))
    return Cost(_capped(t, e_busy, cap), pim_counts(w, w * tlp))


def _gpu_cost(flops: float, bytes_: float) -> Cost:
    """The six A100s (tensor-parallel) on one kernel: roofline time; FLOPs, HBM bits and the
    six GPUs' static power over that time."""
    t = GPU.time(flops / GPUS, bytes_ / GPUS)
    return Cost(t, {"gpu:flop:e5m10": flops, "dram:hbm:bit": bytes_ * 8, "static:gpu": GPUS * t})


def gpu_fc(rows: int, cols: int, n: int) -> Cost:
    """Y = W X on the six GPUs: W read once, X and Y through HBM."""
    return _gpu_cost(2.0 * rows * cols * n, BYTES * (rows * cols + n * (rows + cols)))


def gpu_attention(m, ctx: np.ndarray, tlp: int) -> Cost:
    """One layer's attention on the GPUs (prefill: ``ctx`` the prompt, ``tlp`` its tokens)."""
    flops = 4.0 * m.heads * m.head_dim * float(np.sum(ctx)) * tlp
    return _gpu_cost(flops, BYTES * 2.0 * m.hidden * float(np.sum(ctx)))


def _link(bytes_per_link: float, link, key: str, links: int) -> Cost:
    t = bytes_per_link / link.effective + LINK_LATENCY_S
    return Cost(t, {key: bytes_per_link * links * 8})


def allreduce(n: int, hidden: int) -> Cost:
    """A ring all-reduce of the n x hidden activations over the GPUs' NVLink."""
    b = 2.0 * (GPUS - 1) / GPUS * n * hidden * BYTES
    return _link(b, NVLINK, "link:nvlink:bit", GPUS)


def fc_transfer(n: int, rows: int, cols: int, stacks: int) -> Cost:
    """X out to the FC-PIM stacks and Y (or its partial sums) back over the NVLink of their
    GPUs (§6.3).  §6.4's 2D blocks: the ``stacks / GPUs`` stacks behind one link split the
    columns ``c`` ways (c = 1: whole X to each, whole rows back; c = all: X once, partial sums
    of every row back); the mapping takes the ``c`` that moves the fewest bytes."""
    per_gpu = stacks // GPUS
    per_link = min(n * BYTES * (per_gpu * cols / c + rows * c / GPUS)
                   for c in range(1, per_gpu + 1) if per_gpu % c == 0)
    return _link(per_link, NVLINK, "link:nvlink:bit", GPUS)


def attn_transfer(n: int, hidden: int) -> Cost:
    """Q, K and V of the new tokens to the Attn-PIM stacks and the outputs back (§6.3: PCIe,
    one x16 link per GPU's 10 stacks)."""
    per_link = 4.0 * n * hidden * BYTES / GPUS
    return _link(per_link, PCIE, "link:pcie:bit", GPUS)
