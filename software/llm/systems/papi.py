"""PAPI (ASPLOS'25) running a real llama model: FC on FC-PIM or on the GPUs as the scheduler places
it, attention on Attn-PIM, the arithmetic on the ``papi_pu`` golden model.

Where each operation runs, decode steps (prefill is the GPUs', §7.4: compute-bound):

* **FC** (the projections and the FFN, :data:`~pimforge.software.llm.ops.LINEARS`): the scheduler's
  golden model (:func:`~pimforge.sim.golden.papi.scheduler.schedule`, §5.2) places each decoding
  iteration's FC from RLP x TLP (the batch, TLP 1) against alpha.  On FC-PIM the GEMV runs on
  ``papi_pu`` in its ``fc_pim`` preset (4P1B, §6.1), mapped as the PAPI system model maps it
  (§6.4's 2D blocks, :func:`~pimforge.software.papi.hardware.pim_fc`): a matrix's columns split
  into blocks of ``cg`` over the bank groups and pseudo-channels, each block a PU job in the
  unit's own order (fp16 products and sums, :mod:`pimforge.sim.golden.papi.fast`), the blocks'
  fp16 partial sums added on the host in float32 (the reduction the system model leaves to the
  GPU).  With ``batch`` B the PU's X has B identical columns (B copies of one sequence: the
  decoder computes the sequence once, the unit is handed the B vectors, and the run checks that
  the B outputs agree).  On the GPUs (the PUs of §4, A100 tensor cores) the GEMV is the host
  reference (float32): there is no GPU unit model.
* **Attention** on ``papi_pu`` in its ``attn_pim`` preset (1P2B, §6.2), AttAcc's mapping (§6.4):
  each (request, KV head) on one Attn-PIM stack, its tokens over the stack's processing groups.
  Q K^T: K's rows (tokens) are the PU's rows, the GQA group's 3 query heads its reuse; the fp16
  scores go to the softmax, which the paper does not place (the system model counts it free, on
  the buffer die / GPU) and which runs on the host in float64 with the reference's scale; the
  probabilities, rounded to fp16, are the reuse of S V, whose columns (tokens) are split over the
  groups as the system model splits them (``ceil(N / groups)`` a group), the groups' fp16 partial
  sums added on the host in float32.
* The LM head is an FC kernel the system model times, but the decoder computes it on the host
  (it is no :class:`~pimforge.software.llm.ops.Ops` call); the norms, RoPE and SwiGLU are the
  host's, as in the system model.

Time: the units' cycle models (``papi_pu``: :mod:`pimforge.hw.papi.pu_timing` through
:mod:`pimforge.software.papi.pim_time`; ``papi_scheduler``:
:mod:`pimforge.hw.papi.scheduler_timing`) for every invocation of a decode step, and the PAPI system model (:mod:`pimforge.software.papi`)
for the power cap, the GPUs, NVLink, PCIe and the baselines of §7, with SmolLM2's own (GQA)
matrix shapes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pimforge.base.errors import UserError
from pimforge.base.formats import FP16
from pimforge.hw.papi.config import HOST_KINDS, SCHEDULER_PRESETS, SchedulerConfig, pu_preset
from pimforge.hw.papi.perf import PU_CLOCK_MHZ
from pimforge.hw.papi.scheduler_timing import scheduler_schedule
from pimforge.sim.golden.fp import fast
from pimforge.sim.golden.papi.fast import (
    pu_gemv_golden, pu_gemv_one_column, pu_gemv_prepared, pu_weights
)
from pimforge.sim.golden.papi.scheduler import schedule
from pimforge.software import workloads as wl
from pimforge.software.llm.ops import Ops
from pimforge.software.energy import EnergyResult, add_counts, scale_counts
from pimforge.software.papi.config import (
    ATTN_STACKS, ENERGY_NODE, FC_STACKS, GPUS, SYSTEM_SETUP, SYSTEMS, PapiModelConfig
)
from pimforge.software.papi.hardware import (
    PRICES, attn_transfer, fc_transfer, gpu_fc, pim_attention, pim_fc
)
from pimforge.software.papi.pim_time import gemv_cycles
from pimforge.software.papi.systems import calibrate_alpha, fc_cost, hw_for

__all__ = ["PapiOps", "FC_KERNELS", "fc_blocks", "attn_block", "kernel_shapes"]

FC_UNIT, ATTN_UNIT, SCHED_UNIT = "papi_pu/fc_pim", "papi_pu/attn_pim", "papi_scheduler"
TLP = 1                     # no speculative decoding: one token per request per iteration

# The FC kernels of one layer as the PAPI system model fuses them (software/papi/systems.py
# fc_matrices: QKV, projection, the gated FFN's gate and up, down), by their members.
FC_KERNELS = {"qkv": ("attn_q", "attn_k", "attn_v"), "proj": ("attn_output",),
              "up": ("ffn_gate", "ffn_up"), "down": ("ffn_down",)}
_KERNEL_OF = {n: k for k, ms in FC_KERNELS.items() for n in ms}


def kernel_shapes(c) -> dict:
    """(rows, cols) of each :data:`FC_KERNELS` kernel of a model whose config is ``c`` (a
    :class:`~pimforge.software.llm.gguf_model.LlamaConfig`)."""
    q, kv = c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
    return {"qkv": (q + 2 * kv, c.d_model), "proj": (c.d_model, q),
            "up": (2 * c.d_ffn, c.d_model), "down": (c.d_model, c.d_ffn)}


def fc_blocks(kind, stacks: int, rows: int, cols: int) -> tuple:
    """``(cs, rg, cg)``: the column split, rows and columns of one processing group's block of a
    ``rows x cols`` FC matrix over ``stacks`` stacks of ``kind`` (§6.4; the mapping of
    :func:`~pimforge.software.papi.hardware.pim_fc`, whose time is this block's cycles)."""
    total = stacks * kind.groups
    cs = 1 if rows >= total else min(2 ** math.ceil(math.log2(total / rows)), max(1, cols // 64))
    return cs, -(-rows * cs // total), -(-cols // cs)


@dataclass(frozen=True)
class _Gqa:
    """What :func:`~pimforge.software.papi.hardware.pim_attention` reads of a model: the pairs
    are (request, KV head), one head's K and V serving the GQA group's query heads."""
    heads: int
    head_dim: int


def attn_block(kind, stacks: int, kv_heads: int, context: int, batch: int) -> int:
    """Tokens per processing group of the busiest Attn-PIM stack (the mapping of
    :func:`~pimforge.software.papi.hardware.pim_attention`)."""
    pairs = np.repeat(np.full(batch, context, np.int64), kv_heads)
    load = np.bincount(np.arange(len(pairs)) % stacks, weights=pairs, minlength=stacks)
    return int(math.ceil(float(load.max()) / kind.groups))


def _blocked(a, cs: int, cg: int, lanes: int) -> np.ndarray:
    """(..., n, cols) -> (..., cs, n, cgp): column block j = cols [j cg, (j + 1) cg), padded with
    zeros to a multiple of ``lanes`` (the unit's column reads)."""
    cgp = -(-cg // lanes) * lanes
    out = np.zeros(a.shape[:-2] + (cs, a.shape[-2], cgp), a.dtype)
    for j in range(cs):
        blk = a[..., j * cg:(j + 1) * cg]
        out[..., j, :, :blk.shape[-1]] = blk
    return out


def _host_sum(y) -> np.ndarray:
    """The PUs' fp16 partial sums ``y`` (blocks, ...) added on the host in float32, in block
    order (the reduction across processing groups, which no unit of the model does)."""
    out = y[0].astype(np.float32)
    for j in range(1, y.shape[0]):
        out = out + y[j].astype(np.float32)
    return out


def _gemv(cfg, wl, w16, x16) -> np.ndarray:
    """The unit on weights ``wl`` (:func:`~pimforge.sim.golden.papi.fast.pu_weights`) and fp16
    inputs ``x16``; where a value is not finite, the golden model on ``w16()`` (the weights'
    fp16 blocks, built only then).  Returns fp16 (..., rows, reuse) as float16."""
    if fast.finite(x16):
        y = pu_gemv_prepared(cfg, wl, x16)
        if fast.finite(y):
            return y
    y = pu_gemv_golden(cfg, fast.to_bits(FP16, w16()), fast.to_bits(FP16, x16))
    return fast.to_float(FP16, y)


class PapiOps(Ops):
    """PAPI's decode: FC where the scheduler places it (FC-PIM ``fc_pim`` or the GPUs), attention
    on Attn-PIM ``attn_pim`` (module docstring).

    Options: ``batch`` B (the static batch: B copies of the prompt, 1..128, the scheduler's
    ``paper`` preset); ``alpha`` the scheduler's memory-boundedness threshold on RLP x TLP
    (default: the PAPI system model's calibration at its default point, ``pimforge model
    papi``); ``backend`` golden only.
    """
    name = "papi"

    def __init__(self, backend: str = "golden", rtl_layers=None, rtl_steps=None, batch: int = 1,
                 alpha: int | None = None):
        if backend == "rtl":
            raise UserError("--backend rtl: papi runs on its golden models only; RTL steps are "
                            "supported on pam, hilos")
        if backend != "golden":
            raise UserError(f"--backend {backend}: golden or rtl")
        self.sched_cfg = SchedulerConfig(**SCHEDULER_PRESETS["paper"])
        if not isinstance(batch, int) or not 1 <= batch <= self.sched_cfg.max_batch:
            raise UserError(f"--batch {batch}: 1 to {self.sched_cfg.max_batch} (the scheduler's "
                            f"paper preset)")
        self.batch = batch
        self.mcfg = PapiModelConfig()
        self.hw = hw_for("PAPI", self.mcfg.fpu_area_mm2, self.mcfg.fc_fpus, self.mcfg.power_cap)
        if alpha is None:
            cal = calibrate_alpha(wl.get_model(self.mcfg.model), self.mcfg.fpu_area_mm2,
                                  self.mcfg.fc_fpus, self.mcfg.power_cap)
            alpha, self.alpha_source = int(cal["alpha"]), f"calibrated ({self.mcfg.model})"
        else:
            self.alpha_source = "given"
        if not isinstance(alpha, int) or not 0 <= alpha < 1 << self.sched_cfg.ai_bits:
            raise UserError(f"alpha {alpha}: an integer 0 to {(1 << self.sched_cfg.ai_bits) - 1}")
        self.alpha = alpha
        self.fc_cfg, self.attn_cfg = pu_preset("fc_pim"), pu_preset("attn_pim")
        self._step, self._iter, self._where = None, 0, {}

    # ------------------------------------------------------------------ setup
    def prepare(self, model) -> None:
        super().prepare(model)
        c = model.config
        self.cfg = c
        self.shapes = kernel_shapes(c)
        self.blocks = {k: fc_blocks(self.hw.fc_kind, FC_STACKS, r, co)
                       for k, (r, co) in self.shapes.items()}
        self._weights = {}
        self._step, self._iter, self._where = None, 0, {}

    def _placement(self, step) -> str:
        """The FC placement of ``step`` ("host" for prefill); a decode step's first call asks
        the scheduler and records its cycles."""
        if step is self._step:
            return self._where.get(step.pos, "host")
        self._step = step
        if not step.decode:
            return "host"
        self._iter += 1
        # no request finishes while the run goes on: the run stops at <eos> (free running) or
        # feeds the teacher's tokens (the request is kept running), so every count is 0
        ds = schedule(self.batch, TLP, self.alpha, [0] * (self._iter - 1))
        self._where[step.pos] = ds[-1].placement
        step.add_cycles(SCHED_UNIT, self._sched_cycles(self._iter))
        return ds[-1].placement

    def _sched_cycles(self, iteration: int) -> int:
        """Cycles of the decision that places iteration ``iteration``: the batch's start for the
        first, else the previous iteration's output tokens (B, in beats) to the decision."""
        cfg = self.sched_cfg
        n = cfg.tokens_per_beat
        events = [("host", HOST_KINDS["start"], self.batch)]
        if iteration > 1:
            beats = -(-self.batch // n)
            for b in range(beats):
                k = min(n, self.batch - b * n)
                events.append(("beat", [1] * n, (1 << k) - 1, b == beats - 1))
        s = scheduler_schedule(cfg, events)
        first = s["i"][0] if iteration > 1 else s["i_host"][0]
        return s["o"][-1] - first + 1

    def _w(self, layer: int, name: str, w: np.ndarray) -> np.ndarray:
        """The matrix's fp16 column blocks, laid out for the fast model (once per matrix)."""
        key = (layer, name)
        if key not in self._weights:
            self._weights[key] = pu_weights(self.fc_cfg, self._w16(name, w))
        return self._weights[key]

    def _w16(self, name: str, w: np.ndarray) -> np.ndarray:
        cs, _, cg = self.blocks[_KERNEL_OF[name]]
        return _blocked(np.asarray(w, np.float32).astype(np.float16), cs, cg, self.fc_cfg.lanes)

    # ------------------------------------------------------------------ the operations
    def linear(self, step, layer, name, w, x):
        where = self._placement(step)
        if where != "pim":
            return super().linear(step, layer, name, w, x)
        kern = _KERNEL_OF[name]
        cs, rg, cg = self.blocks[kern]
        if name == FC_KERNELS[kern][0]:
            step.add_cycles(FC_UNIT, gemv_cycles(rg, cg, self.batch, self.hw.fc_kind.fpus,
                                                 self.hw.fc_kind.banks))
        wl = self._w(layer, name, w)
        x16 = np.broadcast_to(np.asarray(x, np.float32).astype(np.float16),
                              (self.batch, len(x)))
        xb = _blocked(x16, cs, cg, self.fc_cfg.lanes)               # (cs, B, cgp)
        y = _gemv(self.fc_cfg, wl, lambda: self._w16(name, w), xb)  # (cs, rows, B)
        out = _host_sum(y)                                          # (rows, B)
        if self.batch > 1 and not (out == out[:, :1]).all():
            raise AssertionError(f"layer {layer} {name}: the batch's identical columns differ")
        return out[:, 0]

    def attention(self, step, layer, q, k, v, scale):
        if self._placement(step) == "host":
            return super().attention(step, layer, q, k, v, scale)
        cfg = self.attn_cfg
        hkv, n, d = k.shape
        grp = q.shape[0] // hkv
        kind = self.hw.attn_kind
        rg = attn_block(kind, ATTN_STACKS, hkv, n, self.batch)
        step.add_cycles(ATTN_UNIT, gemv_cycles(rg, d, grp * TLP, kind.fpus, kind.banks)
                        + gemv_cycles(d, rg, grp * TLP, kind.fpus, kind.banks))
        q16 = np.asarray(q, np.float32).astype(np.float16).reshape(hkv, grp, d)
        k16 = np.asarray(k, np.float32).astype(np.float16)
        v16 = np.asarray(v, np.float32).astype(np.float16)
        # Q K^T: K (n, d) per KV head, the group's query heads the reuse -> (hkv, n, grp)
        s = _gemv(cfg, pu_weights(cfg, k16), lambda: k16, q16).astype(np.float64) * scale
        p = np.exp(s - s.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p16 = np.swapaxes(p, 1, 2).astype(np.float16)              # (hkv, grp, n)
        # S V: V^T (d, n), its tokens over the groups (``own`` a group), partial sums on the host
        own = -(-n // kind.groups)
        nblk = -(-n // own)
        y = None
        if own == 1:            # one token a group: a one-column job each
            y = pu_gemv_one_column(cfg, v16, np.swapaxes(p16, 1, 2))  # (hkv, n, d, grp)
            y = y if fast.finite(y) else None
        if y is None:
            vt = _blocked(np.swapaxes(v16, 1, 2), nblk, own, cfg.lanes)   # (hkv, nblk, d, p)
            pb = _blocked(p16, nblk, own, cfg.lanes)                      # (hkv, nblk, grp, p)
            y = _gemv(cfg, pu_weights(cfg, vt), lambda: vt, pb)
        o = _host_sum(np.moveaxis(y, 1, 0))
        return np.swapaxes(o, 1, 2).reshape(hkv * grp, d).astype(np.float32)

    # ------------------------------------------------------------------ report
    def describe(self) -> dict:
        return {
            "fc": f"decode: where the papi_scheduler golden model places it (batch {self.batch}, "
                  f"TLP {TLP}, alpha {self.alpha}, {self.alpha_source}): FC-PIM = papi_pu "
                  f"fc_pim (4P1B, fp16) in the system model's 2D blocks, block partial sums "
                  f"added on the host in float32; GPU = host reference float32",
            "attention": "decode: papi_pu attn_pim (1P2B, fp16): Q K^T and S V; softmax on the "
                         "host in float64 (the paper does not place it); S V's per-group partial "
                         "sums added on the host in float32",
            "host": "prefill (the GPUs, PAPI §7.4), embedding, RMSNorm, RoPE, SwiGLU, LM head "
                    "(timed as an FC kernel by the system model)",
            "batch": f"{self.batch} identical sequences: computed once, the FC unit given "
                     f"{self.batch} identical input columns",
        }

    def _iteration(self, hw, where: str, context: int) -> dict:
        """Seconds of one decoding iteration of the batch by part, on ``hw`` with FC ``where``
        (the PAPI system model's parts; SmolLM2's shapes)."""
        c, B = self.cfg, self.batch
        n = B * TLP
        fc, comm = fc_cost(hw, self.shapes.values(), c.d_model, n, where)
        att = pim_attention(hw.attn_kind, ATTN_STACKS, _Gqa(c.n_kv_heads, c.head_dim),
                            np.full(B, context), c.group * TLP, hw.cap)
        # Q, K and V of the new tokens out and the outputs back: attn_transfer moves 4 x hidden
        # values a token; SmolLM2's are q + 2 kv + q
        moved = (2 * c.n_heads + 2 * c.n_kv_heads) * c.head_dim
        link = attn_transfer(n, moved / 4)
        if where == "gpu":
            head = gpu_fc(c.vocab, c.d_model, n)
        else:
            head = pim_fc(hw.fc_kind, FC_STACKS, c.vocab, c.d_model, n, hw.cap)
            head += fc_transfer(n, c.vocab, c.d_model, FC_STACKS)
        L = c.n_layers
        parts = {"FC": L * fc.s, "attention": L * att.s, "communication": L * (comm.s + link.s),
                 "lm_head": head.s}
        # the iteration's actions (the Costs' counts), the stacks' background power over it
        counts = add_counts(scale_counts(add_counts(fc.counts, att.counts, comm.counts,
                                                    link.counts), L), head.counts,
                            {"static:hbm_stack": (FC_STACKS + ATTN_STACKS) * sum(parts.values())})
        return parts, counts

    def timing(self, steps: list) -> dict:
        """Per decoding iteration of the batch (one token per request): ``s_per_token`` the
        iteration's seconds (a request's time per token), ``tokens_per_s`` the batch's tokens
        over it; ``baselines`` the §7 systems' tokens/s on the same steps (the PAPI system
        model's hardware, FC where each system puts it)."""
        dec = [s for s in steps if s.decode and s.pos in self._where]
        if not dec:
            return {}
        clock = PU_CLOCK_MHZ * 1e6
        B, k = self.batch, len(dec)
        parts = {"FC": 0.0, "attention": 0.0, "communication": 0.0, "lm_head": 0.0,
                 "scheduler": 0.0}
        cycles, counts = {}, {}
        for s in dec:
            it, cn = self._iteration(self.hw, self._where[s.pos], s.context)
            counts = add_counts(counts, cn)
            for p, t in it.items():
                parts[p] += t
            parts["scheduler"] += s.cycles.get(SCHED_UNIT, 0) / clock
            for u, cy in s.cycles.items():
                cycles[u] = cycles.get(u, 0) + cy
        s_tok = sum(parts.values()) / k
        n_tok = B * TLP * k
        # the scheduler's time at the GPUs' static power (they wait for its decision)
        counts = add_counts(counts, {"static:gpu": GPUS * parts["scheduler"]})
        own = EnergyResult("PAPI", scale_counts(counts, 1.0 / n_tok), s_tok / (B * TLP),
                           ENERGY_NODE)
        base_s, base_j = {}, {}
        for name in SYSTEMS:
            if name == "PAPI":
                continue
            hw = hw_for(name, self.mcfg.fpu_area_mm2, self.mcfg.fc_fpus, self.mcfg.power_cap)
            fc = SYSTEM_SETUP[name]["fc"]
            its = [self._iteration(hw, self._where[s.pos] if fc == "dynamic" else fc,
                                   s.context) for s in dec]
            base_s[name] = sum(sum(it.values()) for it, _ in its) / k
            base_j[name] = PRICES.joules(add_counts(*(cn for _, cn in its))) / n_tok
        return {
            "system": "PAPI: 6 A100 + 30 FC-PIM (4P1B) + 60 Attn-PIM (1P2B) HBM3 stacks (§7.1)",
            "s_per_token": s_tok, "tokens_per_s": B * TLP / s_tok,
            "breakdown_s": {p: t / k for p, t in parts.items()},
            "unit_cycles_per_token": {u: cy / k for u, cy in cycles.items()},
            "clock_mhz": PU_CLOCK_MHZ,
            "baselines": {n: B * TLP / t for n, t in base_s.items()},
            "baseline_s_per_token": base_s,
            "energy": {"j_per_token": own.j_per_token, "power_w": own.power_w,
                       "breakdown_j": own.breakdown(), "baselines": base_j,
                       "source": "the PAPI system model's actions of each iteration "
                                 "(software/papi/hardware.py Costs: FC, attention, links, the "
                                 "LM head, GPU and stack static power) over its tokens"},
            "decode_steps": k, "layers": self.cfg.n_layers, "batch": B, "tlp": TLP,
            "alpha": self.alpha, "alpha_source": self.alpha_source,
            "placements": [self._where[s.pos] for s in dec],
            "note": "FC and attention per layer x layers and the LM head once per iteration, "
                    "with the system model's power cap, GPUs and links; a papi_pu count is one "
                    "processing group's block (every group runs its own in parallel), summed "
                    "over the layers' kernels; the scheduler at the FPU clock",
        }
