"""PAMattention end to end (PAM §5.1 Alg. 1, §5.2): Q, K, V in, the attention output O out.

For each head the N tokens are spread over the tiers HBM, DDR and SSD in the ratio ``split``
(contiguous ranges in that order, :func:`pimforge.base.numerics.spread`), and each tier's tokens
evenly over its PUs.  Every PU with tokens computes its local attention partial (Alg. 1 lines
9-12), each tier's RU merges its PUs' partials (intra-device reduction, lines 15-22) and the HBM
tier's RU merges the tier partials and normalizes (inter-device reduction, line 21).  Heads run
one after another.

Two backends compute the same bits:

* ``golden``: :func:`pimforge.sim.golden.pam.system.system_attention`, the bit-exact model.
* ``rtl``: the generated Verilog of ``pam_pu`` and ``pam_ru`` in cocotb simulations, unit by
  unit: one ``pam_pu`` simulation per tier (one phase per PU token set and head), one ``pam_ru``
  simulation per tier for the intra-device reductions, one final ``pam_ru`` for the inter-device
  reduction.  Each phase carries the golden model's expected outputs, so the harness checks every
  unit bit for bit, and the outputs the RTL actually produced feed the next level.

Inputs are rounded to fp16 (round to nearest even); every result also reports its relative error
``||O - O_ref||_inf / ||O_ref||_inf`` against float64 attention on those fp16 inputs.
"""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pimforge.base import numerics as num
from pimforge.base.errors import ToolError, UserError
from pimforge.base.formats import FP16
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.pam.config import ACC_FORMATS, PamSystemConfig
from pimforge.sim.benches.pam.beats import pu_beats, ru_request_beats, unpack_rows
from pimforge.sim.benches.pam.pu import pu_expected
from pimforge.sim.benches.pam.ru import ru_expected
from pimforge.sim.golden.pam import system as g_sys
from pimforge.sim.harness.job import Job, Phase, unpack_payloads
from pimforge.sim.harness.runner import run_unit
from pimforge.software.flow_io import (
    check_choice, check_out_path, check_scale, json_float, load_npy, to_fp16, value_text,
    write_flow_outputs
)

__all__ = ["ACCS", "BACKENDS", "HEAD_DIMS", "TIERS", "HeadResult", "PamAttentionResult",
           "pam_attention", "prepare_inputs", "check_split", "check_pus", "check_tile",
           "run_cli"]

ACCS = ACC_FORMATS   # the pam_pu / pam_ru accumulator formats
BACKENDS = ("golden", "rtl")
HEAD_DIMS = (64, 128, 256)
TIERS = ("hbm", "ddr", "ssd")
MAX_PUS = 16
MAX_TILE = 64


# ---------------------------------------------------------------------------------------------
# results

@dataclass
class HeadResult:
    """One head of PAMattention.

    Members
    -------
    o : float16 (d,) normalized output.
    tier_counts : tokens per tier (HBM, DDR, SSD).
    pu_counts : per tier, tokens per PU (PUs with zero tokens take no part).
    m, l, lse : final running maximum, sum of exponentials and log-sum-exp, as bit patterns (m and
        lse in fp32, the score format; l in ``acc``).
    rel_err : ``||o - o_ref||_inf / ||o_ref||_inf`` against float64 attention (the absolute error
        if ``o_ref`` is all zeros).
    """

    o: np.ndarray
    tier_counts: list
    pu_counts: list
    m: int
    l: int
    lse: int
    rel_err: float


@dataclass
class PamAttentionResult:
    """The output of :func:`pam_attention`: ``o`` (heads, d) float16 and the per-head details."""

    o: np.ndarray
    heads: list
    acc: str
    scale: float
    split: tuple
    pus: tuple
    tile: int
    backend: str
    tokens: int = 0
    wall_s: float = 0.0
    units: list = field(default_factory=list)   # rtl: (unit, tier, phases, cycles) per simulation

    @property
    def max_rel_err(self) -> float:
        return max(h.rel_err for h in self.heads)

    def _value(self, key: str, bits) -> float:
        fmt = ACCS[self.acc] if key == "l" else num.SCORE
        return float(num.bits_float(fmt, [bits])[0])

    def report(self) -> dict:
        """JSON-ready dict: run parameters and, per head, token counts, m, l, lse and the error."""
        heads = []
        for i, h in enumerate(self.heads):
            heads.append({
                "head": i,
                "tier_tokens": dict(zip(TIERS, h.tier_counts)),
                "pus": dict(zip(TIERS, (len(c) for c in h.pu_counts))),
                "pu_tokens": dict(zip(TIERS, h.pu_counts)),
                **{k: json_float(self._value(k, getattr(h, k))) for k in ("m", "l", "lse")},
                **{f"{k}_bits": f"{getattr(h, k):#x}" for k in ("m", "l", "lse")},
                "rel_err": json_float(h.rel_err),
            })
        return {"flow": "pam-attention", "backend": self.backend, "acc": self.acc,
                "heads": len(self.heads), "tokens": self.tokens, "head_dim": self.o.shape[1],
                "split": list(self.split), "pus": list(self.pus), "tile": self.tile,
                "scale": self.scale, "max_rel_err": json_float(self.max_rel_err),
                "rtl_simulations": [dict(zip(("unit", "tier", "phases", "cycles"), u))
                                    for u in self.units],
                "per_head": heads}

    def summary(self) -> str:
        """A few human-readable lines."""
        ratio = ":".join(f"{x:g}" for x in self.split)
        lines = [f"pam-attention ({self.backend}): {len(self.heads)} head(s), d={self.o.shape[1]}, "
                 f"N={self.tokens}, split {ratio}, pus {':'.join(map(str, self.pus))}, "
                 f"acc {self.acc}, tile {self.tile}, scale {self.scale:.6g}"]
        for i, h in enumerate(self.heads):
            lines.append(f"  head {i}: tokens hbm/ddr/ssd {'/'.join(map(str, h.tier_counts))}, "
                         f"lse {self._value('lse', h.lse):.6g}, rel err {h.rel_err:.2e}")
        if self.units:
            cyc = sum(u[3] for u in self.units)
            lines.append(f"  rtl: {len(self.units)} simulations, {cyc} cycles, every unit "
                         f"bit-exact vs the golden model")
        lines.append(f"  max rel err {self.max_rel_err:.2e} vs float64 attention")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# checking what the user gave

def check_split(split, label: str = "split", shown=None) -> tuple:
    """Three non-negative finite numbers with a positive sum (HBM, DDR, SSD weights)."""
    try:
        w = tuple(float(x) for x in split)
    except (TypeError, ValueError):
        w = ()
    if len(w) != 3 or not all(math.isfinite(x) and x >= 0 for x in w) or sum(w) <= 0:
        raise UserError(f"{label} must be three non-negative numbers H:D:S with a positive sum, "
                        f"got {value_text(split, shown)}")
    return w


def check_pus(pus, label: str = "pus", shown=None) -> tuple:
    """Three PU counts (HBM, DDR, SSD), each an integer in 1..16."""
    try:
        vals = [x if isinstance(x, (int, np.integer)) and not isinstance(x, bool) else
                int(x, 10) if isinstance(x, str) else None for x in pus]
    except (TypeError, ValueError):
        vals = []
    if len(vals) != 3 or any(v is None or not 1 <= v <= MAX_PUS for v in vals):
        raise UserError(f"{label} must be three integers H:D:S, each in 1..{MAX_PUS}, "
                        f"got {value_text(pus, shown)}")
    return tuple(int(v) for v in vals)


def check_tile(tile, label: str = "tile", shown=None) -> int:
    ok = isinstance(tile, (int, np.integer)) and not isinstance(tile, bool)
    if not ok and isinstance(tile, str):
        try:
            tile, ok = int(tile, 10), True
        except ValueError:
            pass
    if not ok or not 1 <= tile <= MAX_TILE:
        raise UserError(f"{label} must be an integer in 1..{MAX_TILE}, got "
                        f"{value_text(tile, shown)}")
    return int(tile)


def prepare_inputs(q, k, v, dtypes=("float16", "float32", "float64")) -> tuple:
    """Check shapes and dtypes and return fp16 bit patterns ``(q16, k16, v16)`` of shapes
    (heads, d), (heads, N, d), (heads, N, d)."""
    arrays = {"Q": np.asarray(q), "K": np.asarray(k), "V": np.asarray(v)}
    for name, a in arrays.items():
        if a.dtype.name not in dtypes:
            raise UserError(f"{name} has dtype {a.dtype.name}; allowed: {', '.join(dtypes)}")
    for name, nd, dims in (("Q", 2, "(heads, d)"), ("K", 3, "(heads, N, d)"),
                           ("V", 3, "(heads, N, d)")):
        if arrays[name].ndim != nd:
            raise UserError(f"{name} must have {nd} dimensions {dims}, got shape "
                            f"{arrays[name].shape}")
    qa, ka, va = arrays["Q"], arrays["K"], arrays["V"]
    if ka.shape != va.shape:
        raise UserError(f"K shape {ka.shape} and V shape {va.shape} differ; they must be equal")
    if (qa.shape[0], qa.shape[1]) != (ka.shape[0], ka.shape[2]):
        raise UserError(f"Q shape {qa.shape} does not match K shape {ka.shape}; Q must be "
                        f"(heads, d) for K and V of shape (heads, N, d)")
    heads, n, d = ka.shape
    if d not in HEAD_DIMS:
        raise UserError(f"head dimension d={d} is not supported; allowed: "
                        f"{', '.join(map(str, HEAD_DIMS))}")
    if heads == 0:
        raise UserError("Q, K and V hold no heads (heads = 0); need at least one")
    if n == 0:
        raise UserError("K and V hold no tokens (N = 0); need at least one")
    return tuple(to_fp16(name, a) for name, a in arrays.items())


# ---------------------------------------------------------------------------------------------
# the flow

def pam_attention(q, k, v, split=(1, 1, 1), pus=(4, 4, 4), acc: str = "fp16", tile: int = 16,
                  scale=None, backend: str = "golden", sim: str = "verilator") -> PamAttentionResult:
    """PAMattention (PAM Alg. 1) over the HBM, DDR and SSD tiers.

    Parameters
    ----------
    q : array (heads, d); k, v : arrays (heads, N, d); float16, float32 or float64, rounded to
        fp16 (nearest even).  d is 64, 128 or 256.
    split : token ratio HBM:DDR:SSD (non-negative, positive sum).
    pus : PUs per tier, each 1..16.
    acc : accumulator format of the exponentials, l and O: ``"fp16"`` (as in PAM) or ``"fp32"``;
        scores, maxima and the log-sum-exp are fp32 either way.
    tile : tokens per PU tile, 1..64.
    scale : score scale (``None``: 1/sqrt(d)); rounded to fp32.
    backend : ``"golden"`` (bit-exact model) or ``"rtl"`` (cocotb co-simulation of the Verilog).
    sim : simulator of the rtl backend (``verilator`` or ``icarus``).
    """
    t0 = time.monotonic()
    check_choice(backend, BACKENDS, "backend")
    check_choice(acc, tuple(ACCS), "accumulator format")
    split, pus, tile = check_split(split), check_pus(pus), check_tile(tile)
    q16, k16, v16 = prepare_inputs(q, k, v)
    heads, n, d = k16.shape
    scale = check_scale(scale, d)
    fmt = ACCS[acc]
    units = []
    if backend == "golden":
        raw = [g_sys.system_attention(fmt, scale, q16[h], k16[h], v16[h], split, pus, tile)
               for h in range(heads)]
    else:
        raw = _rtl_system(fmt, scale, q16, k16, v16, split, pus, tile, sim, units)
    results = []
    for h, r in enumerate(raw):
        o16 = np.asarray(r["norm"], dtype=np.int64).astype(np.uint16).view(np.float16)
        ref = g_sys.attention_f64(num.bits_float(FP16, q16[h]), num.bits_float(FP16, k16[h]),
                              num.bits_float(FP16, v16[h]), scale)
        err = float(np.max(np.abs(o16.astype(np.float64) - ref)))
        den = float(np.max(np.abs(ref)))
        pu_counts = [num.spread(c, [1] * p) for c, p in zip(r["tier_counts"], pus)]
        results.append(HeadResult(o16, list(r["tier_counts"]), pu_counts, int(r["m"]),
                                  int(r["l"]), int(r["lse"]), err / den if den > 0 else err))
    o = np.stack([h.o for h in results]).astype(np.float16)
    return PamAttentionResult(o, results, acc, scale, split, pus, tile, backend, tokens=n,
                              wall_s=time.monotonic() - t0, units=units)


# ---------------------------------------------------------------------------------------------
# rtl backend: streams in the PAM stream formats (see hw/pam), one unit at a time

def _progress(msg: str):
    if os.environ.get("PIMFORGE_QUIET") != "1":
        print(f"[pimforge] {msg}", file=sys.stderr, flush=True)


def _simulate(unit: str, tier: str, cfg, phases: list, sim: str, units: list) -> list:
    """Run one simulation; raise ToolError naming the first mismatch; return PhaseResults."""
    _progress(f"pam-attention rtl: {unit} ({tier}) with {len(phases)} phase(s)")
    res = run_unit(HW_UNITS[unit], cfg, Job(phases), sim=sim)
    if not res.passed:
        bad = next(p for p in res.phases if p.errors)
        raise ToolError(f"rtl backend: {unit} ({tier}) differs from the golden model in phase "
                        f"'{bad.name}': {bad.errors[0]}; log: {res.log}")
    units.append((unit, tier, len(phases), sum(p.cycles for p in res.phases)))
    return [(p, res.manifest) for p in res.phases]


def _received(manifest, phase_result, width: int, n: int) -> dict:
    """The partial an ``o`` stream carried: O (d,) from the beats (``n`` elements of ``width``
    bits each), m and l (and lse) from beat 0."""
    f = unpack_payloads(manifest, "o", phase_result.received["o"])
    out = {"O": unpack_rows(f["data"], width, n).reshape(-1), "m": int(f["m"][0]),
           "l": int(f["l"][0])}
    if "lse" in f:
        out["lse"] = int(f["lse"][0])
        out["norm"] = unpack_rows(f["norm"], 16, n).reshape(-1)
    return out


def _rtl_system(acc, scale, q16, k16, v16, split, pus, tile, sim, units) -> list:
    """PAM Alg. 1 on the RTL units (same result layout as ``system_attention``, per head)."""

    def ru_phase(name, cfg, parts):
        return Phase(name, {"i": ru_request_beats(parts, cfg.vector_width, cfg.acc.width)},
                     {"o": ru_expected(cfg, parts)})
    heads, n, d = k16.shape
    sys_cfg = PamSystemConfig(hbm_pus=pus[0], ddr_pus=pus[1], ssd_pus=pus[2], head_dim=d,
                              acc=acc, tile_tokens=tile, score_scale=scale)
    tier_counts = num.spread(n, split)
    starts = np.cumsum([0] + tier_counts)
    device_partials = [[None] * 3 for _ in range(heads)]      # [head][tier]
    for t, tier in enumerate(TIERS):
        if not tier_counts[t]:
            continue
        dev = sys_cfg.device_config(tier)
        pu_cfg, ru_cfg = dev.pu_config(), dev.ru_config(final=False)
        # local attention (Alg. 1 lines 9-12): one phase per PU token set and head
        sets, phases = [], []
        a = int(starts[t])
        for p, c in enumerate(num.spread(tier_counts[t], [1] * dev.pus)):
            for h in range(heads):
                if c:
                    ks, vs = k16[h, a:a + c], v16[h, a:a + c]
                    i_q, i_kv = pu_beats(pu_cfg, q16[h], ks, vs)
                    exp = pu_expected(pu_cfg, q16[h], ks, vs)
                    phases.append(Phase(f"head {h} pu {p} ({c} tokens)",
                                        {"i_q": i_q, "i_kv": i_kv}, {"o": exp}))
                    sets.append(h)
            a += c
        pu_out = [[] for _ in range(heads)]
        for h, (pr, man) in zip(sets, _simulate("pam_pu", tier, pu_cfg, phases, sim, units)):
            pu_out[h].append(_received(man, pr, acc.width, pu_cfg.lanes))
        # intra-device reduction (Alg. 1 lines 15-22) in PU order
        phases = [ru_phase(f"head {h} intra-device", ru_cfg, pu_out[h]) for h in range(heads)]
        for h, (pr, man) in enumerate(_simulate("pam_ru", tier, ru_cfg, phases, sim, units)):
            device_partials[h][t] = _received(man, pr, acc.width, ru_cfg.vector_width)
    # inter-device reduction and normalization in the HBM tier's final RU (Alg. 1 line 21)
    fin_cfg = sys_cfg.device_config("hbm").ru_config(final=True)
    parts = [[p for p in device_partials[h] if p is not None] for h in range(heads)]
    phases = [ru_phase(f"head {h} inter-device", fin_cfg, parts[h]) for h in range(heads)]
    out = []
    for h, (pr, man) in enumerate(_simulate("pam_ru", "hbm final", fin_cfg, phases, sim, units)):
        r = _received(man, pr, acc.width, fin_cfg.vector_width)
        r["tier_counts"] = tier_counts
        out.append(r)
    return out


# ---------------------------------------------------------------------------------------------
# command line: pimforge run pam-attention

def run_cli(args) -> int:
    """``pimforge run pam-attention``: check everything, compute, then write O and the report."""
    backend = check_choice(args.backend, BACKENDS, "backend")
    acc = check_choice(args.acc, tuple(ACCS), "accumulator format")
    split = check_split(args.split.split(":"), "--split", repr(args.split))
    pus = check_pus(args.pus.split(":"), "--pus", repr(args.pus))
    tile = check_tile(args.tile, "--tile", repr(args.tile))
    check_out_path(args.out, "--out")
    if args.report is not None:
        check_out_path(args.report, "--report")
        if Path(args.report).resolve() == Path(args.out).resolve():
            raise UserError(f"--out and --report name the same file '{args.out}'")
    arrays = [load_npy(path, name) for path, name in ((args.q, "Q"), (args.k, "K"), (args.v, "V"))]
    d = arrays[0].shape[-1] if arrays[0].ndim else 0
    scale = None if args.scale is None else check_scale(args.scale, d, "--scale", repr(args.scale))
    res = pam_attention(*arrays, split=split, pus=pus, acc=acc, tile=tile, scale=scale,
                        backend=backend)
    return write_flow_outputs(res, args.out, args.report)
