"""The HILOS attention kernel end to end (HILOS §4.3-4.4): Q, K, V (and optionally a padding mask
and host-precomputed scores) in, the attention output O out.

Shapes: Q ``(Hq, d)``; K ``(Hkv, N_k, d)`` (the tokens stored near the SSD); V ``(Hkv, N, d)``
with ``N = N_k + c``; the precomputed scores ``P`` ``(Hq, c)`` are the host's scaled Q.K of the
``c`` most recent tokens (delayed KV writeback, §4.3), whose V rows come last in V; the mask
``(N,)`` or ``(Hkv, N)`` is True (or 1) at padded positions.  ``d_group = Hq / Hkv`` queries
share each KV head (GQA); query ``i`` reads KV head ``i // d_group``.

Two backends compute the same bits:

* ``golden``: :func:`pimforge.sim.golden.hilos.attention.hilos_group` per KV head.
* ``rtl``: the generated Verilog of ``hilos_attention`` in one cocotb simulation, every KV head a
  job, with the bench's DRAM model; the harness checks every score beat and every output beat
  against the golden model, and the result is the O the RTL produced.

Every result reports its relative error ``||O - O_ref||_inf / ||O_ref||_inf`` against float64
attention on the fp16 inputs (precomputed scores taken as given, masked positions left out).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from pimforge.base.errors import ConfigError, ToolError, UserError
from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import bits_float, float_bits
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.hilos.attention_timing import kernel_bound
from pimforge.hw.hilos.config import (
    BEAT_ELEMS, BLOCKS, D_GROUPS, HEAD_DIMS, SCORE_FMTS, HilosAttentionConfig
)
from pimforge.sim.benches.hilos.attention import HilosJob, attention_phase
from pimforge.sim.benches.hilos.beats import unpack_o
from pimforge.sim.golden.hilos import attention as h_att
from pimforge.sim.harness.job import Job, unpack_payloads
from pimforge.sim.harness.runner import run_unit
from pimforge.software.flow_io import (
    check_choice, check_out_path, check_scale, json_float, load_npy, to_fp16, write_flow_outputs
)

__all__ = ["BACKENDS", "SCORE_FMTS", "HilosAttentionResult", "hilos_attention", "kernel_config",
           "run_cli", "reference"]

BACKENDS = ("golden", "rtl")


@dataclass
class HilosAttentionResult:
    """``o`` (Hq, d) float16, ``rel_err`` per query head and the run's parameters; with the rtl
    backend ``cycles`` (the kernel, first input to last output) and ``bound`` (max of the QK^T
    beats, S.V beats and softmax pass cycles)."""

    o: np.ndarray
    rel_err: list
    d_group: int
    block: int
    score_fmt: str
    scale: float
    backend: str
    tokens: int
    precomputed: int
    masked: int
    cycles: int | None = None
    bound: int | None = None
    wall_s: float = 0.0
    stats: list = field(default_factory=list)   # (m, Z) fp32 bits per query head

    @property
    def max_rel_err(self) -> float:
        return max(self.rel_err)

    def report(self) -> dict:
        return {"flow": "hilos-attention", "backend": self.backend, "query_heads": len(self.o),
                "kv_heads": len(self.o) // self.d_group, "d_group": self.d_group,
                "head_dim": self.o.shape[1], "tokens": self.tokens,
                "precomputed": self.precomputed, "masked": self.masked, "block": self.block,
                "score_fmt": self.score_fmt, "scale": self.scale,
                "max_rel_err": json_float(self.max_rel_err),
                "rel_err": [json_float(e) for e in self.rel_err],
                "kernel_cycles": self.cycles, "bound_cycles": self.bound,
                "stats": [{"m": json_float(float(bits_float(FP32, [m])[0])),
                           "Z": json_float(float(bits_float(FP32, [z])[0]))}
                          for m, z in self.stats]}

    def summary(self) -> str:
        hkv = len(self.o) // self.d_group
        lines = [f"hilos-attention ({self.backend}): {len(self.o)} query head(s) over {hkv} KV "
                 f"head(s) (d_group {self.d_group}), d={self.o.shape[1]}, N={self.tokens} "
                 f"({self.precomputed} precomputed, {self.masked} masked), block {self.block}, "
                 f"scores {self.score_fmt}, scale {self.scale:.6g}"]
        if self.cycles is not None:
            lines.append(f"  rtl: {self.cycles} cycles for the kernel, bound {self.bound} "
                         f"({self.cycles / self.bound:.3f} x), every score and output beat "
                         f"bit-exact vs the golden model")
        lines.append(f"  max rel err {self.max_rel_err:.2e} vs float64 attention")
        return "\n".join(lines)


def kernel_config(d_group: int, head_dim: int, block: int = 128, score_fmt: str = "fp32",
                  scale=None, beat_elems: int = 32):
    try:
        return HilosAttentionConfig(d_group=d_group, head_dim=head_dim, block=block,
                                    beat_elems=beat_elems, score_fmt=SCORE_FMTS[score_fmt],
                                    score_scale=0.0 if scale is None else float(scale))
    except ConfigError as e:
        raise UserError(f"{e.field} {e.value!r} does not fit this kernel: allowed {e.allowed}") \
            from None


def _check_inputs(q, k, v, mask, pre):
    arrays = {"Q": np.asarray(q), "K": np.asarray(k), "V": np.asarray(v)}
    for name, nd, dims in (("Q", 2, "(Hq, d)"), ("K", 3, "(Hkv, N_k, d)"),
                           ("V", 3, "(Hkv, N, d)")):
        if arrays[name].ndim != nd:
            raise UserError(f"{name} must have {nd} dimensions {dims}, got shape "
                            f"{arrays[name].shape}")
    qa, ka, va = arrays["Q"], arrays["K"], arrays["V"]
    hq, d = qa.shape
    hkv, n_k, dk = ka.shape
    if dk != d or va.shape[2] != d:
        raise UserError(f"head dimensions differ: Q {qa.shape}, K {ka.shape}, V {va.shape}")
    if d not in HEAD_DIMS:
        raise UserError(f"head dimension d={d} is not supported; allowed: "
                        f"{', '.join(map(str, HEAD_DIMS))}")
    if hkv == 0 or va.shape[0] != hkv:
        raise UserError(f"K {ka.shape} and V {va.shape} must hold the same number (>= 1) of KV "
                        f"heads")
    if hq % hkv or hq // hkv not in D_GROUPS:
        raise UserError(f"Q has {hq} heads for {hkv} KV heads; d_group = Hq / Hkv must be an "
                        f"integer in {D_GROUPS[0]}..{D_GROUPS[-1]}")
    if n_k == 0:
        raise UserError("K holds no tokens (N_k = 0); need at least one stored token")
    n = va.shape[1]
    c = n - n_k
    if pre is None:
        if c:
            raise UserError(f"V has {n} tokens but K has {n_k}; without --precomputed they must "
                            f"be equal")
        pa = None
    else:
        pa = np.asarray(pre)
        if pa.ndim != 2 or pa.shape[0] != hq or pa.shape[1] != c or c == 0:
            raise UserError(f"precomputed scores must have shape (Hq, N - N_k) = ({hq}, {c}) "
                            f"(V has {n} tokens, K {n_k}), got {pa.shape}")
        if not np.all(np.isfinite(pa.astype(np.float64))):
            raise UserError("precomputed scores hold NaN or Inf values; only finite numbers are "
                            "allowed")
    if mask is None:
        ma = np.zeros((hkv, n), dtype=bool)
    else:
        ma = np.asarray(mask)
        if ma.dtype != bool and not (np.issubdtype(ma.dtype, np.integer)
                                     and np.isin(ma, (0, 1)).all()):
            raise UserError(f"mask must be bool or 0/1 integers, got dtype {ma.dtype.name}")
        if ma.shape == (n,):
            ma = np.broadcast_to(ma, (hkv, n))
        if ma.shape != (hkv, n):
            raise UserError(f"mask must have shape (N,) = ({n},) or (Hkv, N) = ({hkv}, {n}), got "
                            f"{ma.shape}")
        ma = ma.astype(bool)
    return qa, ka, va, ma, pa


def reference(q, k, v, mask, pre, scale) -> np.ndarray:
    """float64 attention of one query (d,) over K (n_k, d), V (n, d) and precomputed scores."""
    s = np.asarray(k, dtype=np.float64) @ np.asarray(q, dtype=np.float64) * scale
    if pre is not None:
        s = np.concatenate([s, np.asarray(pre, dtype=np.float64)])
    keep = ~np.asarray(mask, dtype=bool)
    if not keep.any():
        return np.zeros(np.shape(v)[1])
    s = s[keep]
    p = np.exp(s - s.max())
    return (p / p.sum()) @ np.asarray(v, dtype=np.float64)[keep]


def hilos_attention(q, k, v, mask=None, precomputed=None, block: int = 128,
                    score_fmt: str = "fp32", scale=None, backend: str = "golden",
                    sim: str = "verilator", beat_elems: int = 32) -> HilosAttentionResult:
    """The HILOS kernel on Q, K, V (see the module docstring for the shapes).

    Parameters
    ----------
    mask : padded positions (True), (N,) or (Hkv, N); None = no padding.
    precomputed : (Hq, N - N_k) host-precomputed scaled scores, or None.
    block : tokens per block (32, 64 or 128).
    score_fmt : format of the scores between the units ("fp32", or "fp16" as in the paper).
    scale : score scale (default 1/sqrt(d)).
    backend : "golden" or "rtl".
    beat_elems : fp16 elements per K/V beat of the hardware (8, 16 or 32; 32 = 512-bit AXI).
        The result does not depend on it; the rtl backend's cycle count does.
    """
    check_choice(backend, BACKENDS, "backend")
    check_choice(score_fmt, tuple(SCORE_FMTS), "score format")
    if block not in BLOCKS:
        raise UserError(f"block must be one of {', '.join(map(str, BLOCKS))}, got {block!r}")
    if beat_elems not in BEAT_ELEMS:
        raise UserError(f"beat_elems must be one of {', '.join(map(str, BEAT_ELEMS))}, got "
                        f"{beat_elems!r}")
    qa, ka, va, ma, pa = _check_inputs(q, k, v, mask, precomputed)
    hq, d = qa.shape
    hkv, n_k, _ = ka.shape
    G = hq // hkv
    scale = check_scale(scale, d)
    cfg = kernel_config(G, d, block, score_fmt, scale, beat_elems)
    q16, k16, v16 = (to_fp16(name, a) for name, a in (("Q", qa), ("K", ka), ("V", va)))
    pre = None if pa is None else float_bits(cfg.score_fmt, pa.astype(np.float64))
    t0 = time.perf_counter()
    jobs = [HilosJob(q16[i * G:(i + 1) * G], k16[i], v16[i], ma[i],
                     None if pre is None else pre[i * G:(i + 1) * G]) for i in range(hkv)]
    cycles = bound = None
    if backend == "golden":
        for j in jobs:
            j.golden = h_att.hilos_group(j.q16, j.k16, j.v16, cfg.block, j.mask, cfg.scale,
                                     cfg.score_fmt, cfg.mask_value, j.pre)
        o16 = np.concatenate([j.golden["O"] for j in jobs])
    else:
        o16, cycles = _rtl(cfg, jobs, sim)
        bound = kernel_bound(cfg, [(len(j.k16), j.n) for j in jobs])
    wall = time.perf_counter() - t0
    o = bits_float(FP16, o16).astype(np.float16)
    pre_f = None if pre is None else bits_float(cfg.score_fmt, pre)
    errs = []
    for i in range(hq):
        kv = i // G
        ref = reference(bits_float(FP16, q16[i]), bits_float(FP16, k16[kv]),
                        bits_float(FP16, v16[kv]), ma[kv], None if pre_f is None else pre_f[i],
                        cfg.scale)
        diff = np.abs(o[i].astype(np.float64) - ref).max()
        top = np.abs(ref).max()
        errs.append(float(diff / top) if top > 0 else float(diff))
    stats = [(j.golden["m"][g], j.golden["Z"][g]) for j in jobs for g in range(G)]
    return HilosAttentionResult(o, errs, G, block, score_fmt, cfg.scale, backend,
                                va.shape[1], va.shape[1] - n_k, int(ma[0].sum()), cycles, bound,
                                wall, stats)


def _rtl(cfg, jobs, sim):
    phase = attention_phase(cfg, jobs, name="kernel")
    res = run_unit(HW_UNITS["hilos_attention"], cfg, Job([phase]), sim=sim)
    if not res.passed:
        raise ToolError(f"hilos_attention RTL does not match the golden model:\n{res.summary()}"
                        f"\nlog: {res.log}")
    ph = res.phases[0]
    fields = unpack_payloads(res.manifest, "o", ph.received["o"])
    per = cfg.d_group * cfg.row_beats
    data = list(fields["data"])
    o16 = np.concatenate([unpack_o(cfg, data[i * per:(i + 1) * per]) for i in range(len(jobs))])
    first = min(ph.in_stamps[s][0] for s in ("i_q", "i_k") if ph.in_stamps[s])
    return o16, ph.cycles - first


def _check_int_choice(text, allowed, option: str) -> int:
    try:
        b = int(text, 10)
    except (TypeError, ValueError):
        b = None
    if b not in allowed:
        raise UserError(f"{option} must be one of {', '.join(map(str, allowed))}, got {text!r}")
    return b


def run_cli(args) -> int:
    """``pimforge run hilos-attention``: check everything, compute, then write O (and report)."""
    backend = check_choice(args.backend, BACKENDS, "backend")
    fmt = check_choice(args.score_fmt, tuple(SCORE_FMTS), "score format")
    block = _check_int_choice(args.block, BLOCKS, "--block")
    beat = _check_int_choice(args.beat_elems, BEAT_ELEMS, "--beat-elems")
    check_out_path(args.out, "--out")
    if args.report is not None:
        check_out_path(args.report, "--report")
    q, k, v = (load_npy(p, n) for p, n in ((args.q, "Q"), (args.k, "K"), (args.v, "V")))
    mask = None if args.mask is None else load_npy(
        args.mask, "mask", dtypes=("bool", "int8", "uint8", "int32", "int64"))
    pre = None if args.precomputed is None else load_npy(
        args.precomputed, "precomputed", dtypes=("float16", "float32", "float64"))
    d = q.shape[-1] if q.ndim else 0
    scale = None if args.scale is None else check_scale(args.scale, d, "--scale", repr(args.scale))
    res = hilos_attention(q, k, v, mask, pre, block, fmt, scale, backend, beat_elems=beat)
    return write_flow_outputs(res, args.out, args.report)


