"""PAM on a real LLM: decode attention through PAMattention (PAM Alg. 1, §5), the KV cache
placed over the HBM, DDR and SSD tiers by PAM's placement and migration policy (§6.3).

**What runs where.**

* **PAM's units** (``pam_pu``, ``pam_ru``): the attention of every decode step.  Per layer, the
  3 KV heads' tokens sit in the three tiers as the policy placed them; each tier's tokens go
  contiguously and evenly to its PUs (``pam_device``), each PU computes the local-attention
  partial of each of the 9 query heads (query head h reads KV head ``h // 3``), the tier's RU
  merges its PUs' partials and the HBM tier's final RU merges the tiers' partials and normalizes
  (Alg. 1 lines 9-22).  The arithmetic is the golden model's
  (:func:`~pimforge.sim.golden.pam.fast.system_attention_heads`, bit-exact with
  :func:`~pimforge.sim.golden.pam.system.system_attention` and so with the RTL); Q, K and V are
  rounded to fp16, the output comes back as float32.
* **The host** (the GPUs in PAM's system, §7.1): the projections and the FFN (the defaults of
  :class:`~pimforge.software.llm.ops.Ops`), and the prompt's attention (prefill runs on the
  GPUs in PAM).

**The placement policy** (the system model's, :mod:`pimforge.software.pam.locality`).
Per layer and KV head, each token has a tier and an importance ``I`` (PAM eq. 7,
:func:`~pimforge.software.pam.locality.importance_update`), updated every step (prompt steps
included) from the step's attention probabilities, averaged over the KV head's query heads and
scaled to mean 1 (the system model's performance score ``S``; computed on the host in float64
from the fp16 Q and K the units see).  At the first decode step the prompt's tokens are placed by
importance (the most important fill HBM up to its share, then DDR, the rest SSD).  Each new token
enters HBM; when a tier exceeds its share of the context, its least important token (the new one
included, whose importance is still 0, exactly as in the system model) moves one tier down.
After the attention, Algorithm 2's two greedy swap loops
(:func:`~pimforge.software.pam.locality.schedule_step`) run with the load-balancing targets of
eq. 9 (:func:`~pimforge.software.pam.locality.balanced_ratios`, from the tiers' token rates).
The tiers' shares of the context are an assumption (``shares``): SmolLM2-135M's KV cache fits
the HBM tier of PAM's Table 1 many times over, where the policy keeps every token in HBM.

Inside a tier the tokens go to the PUs in position order: the units' token sets are contiguous
slices (``system_attention`` takes the tier counts, the tokens reordered tier by tier).  The
greedy bank-group mapping of §6.1 is not modelled here; PAM's 8x sparse attention neither: every
token is computed.

Timing: per decode step and layer the ``pam_pu`` schedule of each PU (its 9 token sets back to
back) and the ``pam_ru`` schedules (intra-device, final), at the tier clocks, against the tiers'
internal bandwidth; Q out and partials back over the DDR and SSD tiers' host links; the KV moves
of the policy through the PAM interface (overlapped with the GEMMs, as the system model does);
the GEMMs on PAM's GPUs (:func:`~pimforge.software.pam.step.fc_time`).  The baselines come from
the system model (:func:`~pimforge.software.pam.step.step`) when it knows the model.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from pimforge.base.errors import ToolError, UserError
from pimforge.base.formats import FP16
from pimforge.hw.pam.config import ACC_FORMATS, TIERS, PamSystemConfig
from pimforge.hw.pam.pu_timing import pu_schedule
from pimforge.hw.pam.ru_timing import ru_cycles
from pimforge.sim.golden.fp import fast as ff
from pimforge.sim.golden.pam.fast import pu_token_sets, system_attention_heads
from pimforge.software import workloads as wl
from pimforge.software.llm.ops import Ops
from pimforge.software.pam import locality as loc
from pimforge.software.pam.attention import pam_attention
from pimforge.software.pam.config import SYSTEMS, Hardware, PamModelConfig
from pimforge.software.pam.energy import step_energy
from pimforge.software.pam.relayout import interface_instances, interface_relayout_seconds
from pimforge.software.pam.step import fc_time, step as model_step, throughput

__all__ = ["PamOps", "SHARES", "MODEL_NAME", "tier_caps", "model_spec"]

SHARES = (0.5, 0.25, 0.25)
"""Assumed shares of each layer's context held by HBM, DDR and SSD (a cache that spilled)."""
MODEL_NAME = "SmolLM2-135M"
_H, _D, _S = 0, 1, 2
_DEFAULT = PamSystemConfig()


def tier_caps(shares, n: int) -> list:
    """Tokens each tier may hold out of ``n``, as the system model's traces allow: HBM and DDR
    their share rounded (half to even), SSD the rest; with no SSD share the lowest tier with a
    share takes the rounding."""
    c = [min(round(float(shares[_H]) * n), n), 0, 0]
    c[_D] = min(round(float(shares[_D]) * n), n - c[_H])
    if float(shares[_S]) <= 0:
        c[_D if float(shares[_D]) > 0 else _H] += n - c[_H] - c[_D]
    c[_S] = n - c[_H] - c[_D]
    return c


def model_spec(config) -> wl.ModelSpec:
    """The system model's description of the decoder: the workloads registry's entry for
    SmolLM2-135M when it has one, else one built from the model's config."""
    if MODEL_NAME in wl.MODELS:
        return wl.MODELS[MODEL_NAME]
    return wl.ModelSpec(MODEL_NAME, config.n_layers, config.d_model, config.n_heads,
                        config.n_kv_heads, config.d_ffn, config.vocab, True,
                        "the GGUF file's metadata", tied_embeddings=True,
                        head_dim_override=config.head_dim)


@lru_cache(maxsize=4096)
def _pu_cycles(pu_cfg, sets: tuple) -> int:
    return pu_schedule(pu_cfg, list(sets))[-1][1] + 1


@lru_cache(maxsize=256)
def _ru_cycles(ru_cfg, requests: tuple) -> int:
    return ru_cycles(ru_cfg, list(requests))


class PamOps(Ops):
    """PAM: decode attention on PAMattention with PAM's KV placement (module docstring).

    Options: ``backend`` ``"golden"`` or ``"rtl"`` (the chosen layers and first decode steps on
    the Verilog of ``pam_pu`` and ``pam_ru``, asserted equal to the golden model bit for bit);
    ``rtl_layers`` (list of layer indices, default all), ``rtl_steps`` (number of first decode
    steps, default all); ``acc`` ``"fp16"`` (PAM's) or ``"fp32"``; ``shares`` of the context per
    tier; ``pus`` per tier (1..16); ``tile`` tokens per PU tile; ``lam`` of eq. 7; ``sim``
    (``verilator`` or ``icarus``)."""

    name = "pam"

    def __init__(self, backend: str = "golden", rtl_layers=None, rtl_steps=None,
                 acc: str = _DEFAULT.acc.name, shares=SHARES,
                 pus=(_DEFAULT.hbm_pus, _DEFAULT.ddr_pus, _DEFAULT.ssd_pus),
                 tile: int = _DEFAULT.tile_tokens, lam: float = loc.LAMBDA,
                 sim: str = "verilator"):
        if backend not in ("golden", "rtl"):
            raise UserError(f"backend '{backend}'; allowed: golden, rtl")
        if acc not in ACC_FORMATS:
            raise UserError(f"accumulator '{acc}'; allowed: {', '.join(ACC_FORMATS)}")
        sh = [float(x) for x in shares]
        if len(sh) != 3 or min(sh) < 0 or sum(sh) <= 0:
            raise UserError(f"shares {tuple(shares)}; allowed: three non-negative numbers "
                            "(HBM, DDR, SSD) with a positive sum")
        self.backend, self.sim = backend, sim
        self.rtl_layers = None if rtl_layers is None else {int(x) for x in rtl_layers}
        self.rtl_steps = rtl_steps
        self.acc = ACC_FORMATS[acc]
        self.shares = tuple(x / sum(sh) for x in sh)
        self.sys_cfg = PamSystemConfig(hbm_pus=pus[0], ddr_pus=pus[1], ssd_pus=pus[2],
                                       head_dim=64, acc=self.acc, tile_tokens=tile)
        self.pus, self.tile, self.lam = tuple(int(p) for p in pus), int(tile), float(lam)
        self.hw = Hardware.from_config(PamModelConfig())
        self.records = {}
        self.rtl_runs = []

    # -------------------------------------------------------------------------------------
    def prepare(self, model) -> None:
        super().prepare(model)
        c = model.config
        self.group = c.n_heads // c.n_kv_heads
        self.sys_cfg = PamSystemConfig(hbm_pus=self.pus[0], ddr_pus=self.pus[1],
                                       ssd_pus=self.pus[2], head_dim=c.head_dim, acc=self.acc,
                                       tile_tokens=self.tile)
        devs = {name: self.sys_cfg.device_config(name) for name in TIERS}
        self.unit_cfgs = {name: (d.pu_config(), d.ru_config(final=False))
                          for name, d in devs.items()}
        self.final_cfg = devs["hbm"].ru_config(final=True)
        rates = [t.token_rate(c.head_dim) for t in self.hw.tiers]
        self.rates = rates
        self.tier = [None] * c.n_layers       # per layer (kv heads, n) int8
        self.imp = [np.zeros((c.n_kv_heads, 0)) for _ in range(c.n_layers)]
        self.records = {}
        self.rtl_runs = []
        self.decode_steps = 0
        self._last_pos = None

    def _rtl_here(self, layer: int) -> bool:
        if self.backend != "rtl":
            return False
        if self.rtl_layers is not None and layer not in self.rtl_layers:
            return False
        return self.rtl_steps is None or self.decode_steps <= self.rtl_steps

    # -------------------------------------------------------------------------------------
    # the placement policy
    def _probabilities(self, q16, k16, scale) -> np.ndarray:
        """Per KV head, the attention probabilities averaged over its query heads, scaled to
        mean 1 (the performance score S), float64 from the fp16 values."""
        hkv, n, d = k16.shape
        qf = ff.to_float(FP16, q16).astype(np.float64).reshape(hkv, self.group, d)
        kf = ff.to_float(FP16, k16).astype(np.float64)
        s = np.einsum("gqd,gnd->gqn", qf, kf) * float(np.float32(scale))
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        return p.mean(axis=1) * n

    def _place(self, layer: int, n: int) -> int:
        """The tiers of the ``n`` tokens before this step's attention: the prompt's placement
        at the first decode step, then the new token into HBM with evictions down the tiers.
        Returns the tokens moved down: ``[HBM -> DDR, DDR -> SSD]``."""
        imp = self.imp[layer]
        hkv = imp.shape[0]
        if imp.shape[1] < n:
            imp = np.concatenate([imp, np.zeros((hkv, n - imp.shape[1]))], axis=1)
            self.imp[layer] = imp
        tier = self.tier[layer]
        if tier is None:
            caps = tier_caps(self.shares, n - 1)
            tier = np.full((hkv, n - 1), _S, np.int8)
            for g in range(hkv):
                order = np.argsort(-imp[g, :n - 1], kind="stable")
                tier[g, order[:caps[_H]]] = _H
                tier[g, order[caps[_H]:caps[_H] + caps[_D]]] = _D
        tier = np.concatenate([tier, np.full((hkv, n - tier.shape[1]), _H, np.int8)], axis=1)
        caps = tier_caps(self.shares, n)
        moved = [0, 0]                    # HBM -> DDR, DDR -> SSD
        for g in range(hkv):
            for hi, lo in ((_H, _D), (_D, _S)):
                members = np.flatnonzero(tier[g] == hi)
                if len(members) > caps[hi]:
                    tier[g, members[np.argmin(imp[g, members])]] = lo
                    moved[hi] += 1
        self.tier[layer] = tier
        return moved

    def _schedule(self, layer: int, counts) -> list:
        """Algorithm 2 on each KV head's trace; returns its swaps ``[DDR <-> SSD, HBM <-> DDR]``
        (each swap moves one token up and one down)."""
        x, y = loc.balanced_ratios(self.rates, counts)
        swaps = [0, 0]
        for g in range(self.tier[layer].shape[0]):
            sw = loc.schedule_step(self.imp[layer][g], self.tier[layer][g], x, y)
            swaps = [a + b for a, b in zip(swaps, sw)]
        return swaps

    # -------------------------------------------------------------------------------------
    def attention(self, step, layer, q, k, v, scale):
        q16, k16, v16 = (ff.to_bits(FP16, np.asarray(x, np.float32).astype(np.float16))
                         for x in (q, k, v))
        n = k16.shape[1]
        if not step.decode:
            out = super().attention(step, layer, q, k, v, scale)
        else:
            if step.pos != self._last_pos:
                self._last_pos = step.pos
                self.decode_steps += 1
            evicted = self._place(layer, n)
            tier = self.tier[layer]
            counts = np.bincount(tier[0], minlength=3).tolist()
            assert all(np.bincount(t, minlength=3).tolist() == counts for t in tier)
            perm = np.argsort(tier, axis=1, kind="stable")      # tier by tier, position order
            kv_of = np.arange(q16.shape[0]) // self.group
            kq = np.take_along_axis(k16, perm[:, :, None], axis=1)[kv_of]
            vq = np.take_along_axis(v16, perm[:, :, None], axis=1)[kv_of]
            res = system_attention_heads(self.acc, scale, q16, kq, vq, counts, self.pus,
                                         self.tile)
            if self._rtl_here(layer):
                self._rtl_check(step, layer, scale, q16, kq, vq, counts, res)
            out = ff.to_float(FP16, res["norm"]).astype(np.float32)
            rec = self._cycles(step, counts)
            rec.update(layer=layer, placement=tier.copy(), evicted=evicted)
        imp = self.imp[layer]
        if imp.shape[1] < n:
            imp = np.concatenate([imp, np.zeros((imp.shape[0], n - imp.shape[1]))], axis=1)
        self.imp[layer] = loc.importance_update(imp, self._probabilities(q16, k16, scale),
                                                self.lam)
        if step.decode:
            rec["swaps"] = self._schedule(layer, counts)
            rec["counts"] = counts
            self.records.setdefault(step.pos, []).append(rec)
        return out

    def _rtl_check(self, step, layer, scale, q16, kq, vq, counts, res):
        """The same attention on the Verilog of pam_pu and pam_ru (every unit checked against
        its golden expectation by the harness), and its output against the fast model's."""
        f16 = [ff.to_float(FP16, x) for x in (q16, kq, vq)]
        r = pam_attention(*f16, split=counts, pus=self.pus, acc=self.acc.name, tile=self.tile,
                          scale=float(np.float32(scale)), backend="rtl", sim=self.sim)
        got = ff.to_bits(FP16, r.o)
        if not np.array_equal(got, res["norm"]):
            h = int(np.flatnonzero((got != res["norm"]).any(axis=1))[0])
            raise ToolError(f"pam rtl: layer {layer}, position {step.pos}: query head {h}'s "
                            "output differs from the golden model")
        self.rtl_runs.append({"layer": layer, "pos": step.pos, "tier_tokens": list(counts),
                              "simulations": len(r.units), "cycles": sum(u[3] for u in r.units),
                              "wall_s": r.wall_s})

    # -------------------------------------------------------------------------------------
    # cycles and time
    def _cycles(self, step, counts) -> dict:
        """The units' cycles of one layer's attention: per tier the slowest PU (its 9 sets back
        to back) and the intra-device RU, then the final RU; recorded on the Step per unit."""
        heads = self.model.config.n_heads
        sets = pu_token_sets(counts, self.pus)
        tiers = {}
        for t, name in enumerate(TIERS):
            if not counts[t]:
                continue
            pu_cfg, ru_cfg = self.unit_cfgs[name]
            busy = [c for _, c in sets[t] if c]
            pu = [_pu_cycles(pu_cfg, (c,) * heads) for c in busy]
            ru = _ru_cycles(ru_cfg, (len(busy),) * heads)
            for c in pu:
                step.add_cycles("pam_pu", c)
            step.add_cycles("pam_ru", ru)
            tiers[name] = {"pu": max(pu), "ru": ru, "tokens": counts[t]}
        final = _ru_cycles(self.final_cfg, (len(tiers),) * heads)
        step.add_cycles("pam_ru", final)
        return {"tiers": tiers, "final": final}

    def _layer_seconds(self, rec: dict) -> dict:
        """One layer's attention: each tier's PUs (or its internal bandwidth, if slower) and
        RU, plus Q out and partials back over the tier's host link; then the final RU."""
        c = self.model.config
        d, heads = c.head_dim, c.n_heads
        part_bytes = d * self.acc.width // 8 + 8          # O in acc, m and l
        per_tier = {}
        for t, tier in enumerate(self.hw.tiers):
            r = rec["tiers"].get(tier.name)
            if r is None:
                continue
            clk = tier.clock_mhz * 1e6
            pu = r["pu"] / clk
            bw = heads * r["tokens"] * 4 * d / tier.internal_bw
            link = 0.0 if t == _H else heads * (2 * d + part_bytes) / tier.host_bw
            per_tier[tier.name] = max(pu, bw) + r["ru"] / clk + link
        final = rec["final"] / (self.hw.tiers[_H].clock_mhz * 1e6)
        return {"attention": max(per_tier.values()) + final, "tiers": per_tier}

    def _migration_seconds(self, layers: list) -> float:
        """The policy's KV moves of one step through the PAM interface (one device per tier,
        its channels' interface instances), as the system model times them: each swap moves a
        token each way; the evictions move tokens down."""
        tok = 4 * self.model.config.head_dim          # K and V of one token of one KV head
        devices = {name: 1 for name in TIERS}
        ev_hd, ev_ds = (sum(r["evicted"][i] for r in layers) for i in (0, 1))
        sw_ds, sw_hd = (sum(r["swaps"][i] for r in layers) for i in (0, 1))

        def move(a, b, n_tok):
            n = interface_instances(a, b, devices)
            return interface_relayout_seconds(a, b, n_tok * tok, tok, n)["seconds"]

        return (move("hbm", "ddr", sw_hd + ev_hd) + move("ddr", "hbm", sw_hd)
                + move("ddr", "ssd", sw_ds + ev_ds) + move("ssd", "ddr", sw_ds))

    def timing(self, steps) -> dict:
        """Per-token seconds of the decode steps on PAM (the units' cycles at the tier clocks,
        the tiers' memories and links, the KV moves, the GEMMs on PAM's GPUs), tokens/s, and
        the system model's baselines at the same context."""
        recs = [self.records[s.pos] for s in steps if s.decode and s.pos in self.records]
        if not recs:
            return {}
        spec = model_spec(self.model.config)
        fc = fc_time(self.hw, spec, 1)
        per_step = []
        for layers in recs:
            att = sum(self._layer_seconds(r)["attention"] for r in layers)
            mig = self._migration_seconds(layers)
            per_step.append({"attention": att, "migration": max(0.0, mig - fc),
                             "time": fc + att + max(0.0, mig - fc)})
        t = float(np.mean([p["time"] for p in per_step]))
        ctx = float(np.mean([s.context for s in steps if s.decode and s.pos in self.records]))
        out = {"system": "PAM (this run: dense PAMattention, one device per tier)",
               "seconds_per_token": t, "tokens_per_s": 1.0 / t,
               "parts": {"gemm_gpu": fc,
                         "attention": float(np.mean([p["attention"] for p in per_step])),
                         "migration": float(np.mean([p["migration"] for p in per_step]))},
               "tier_tokens": recs[-1][0]["counts"], "context": ctx,
               "clock_mhz": {tier.name: tier.clock_mhz for tier in self.hw.tiers},
               "cycles_per_token": {u: float(np.mean([s.cycles.get(u, 0) for s in steps
                                                      if s.decode]))
                                    for u in ("pam_pu", "pam_ru")},
               "baselines": self._baselines(ctx)}
        base = out["baselines"]
        if base.get("PAM", {}).get("j_per_token") is not None:
            out["energy"] = {
                "j_per_token": base["PAM"]["j_per_token"], "power_w": base["PAM"]["power_w"],
                "baselines": {k: v["j_per_token"] for k, v in base.items()
                              if isinstance(v, dict) and k != "PAM"
                              and v.get("j_per_token") is not None},
                "source": "the PAM system model's energy (software/pam/energy.py: PAM §7.1 "
                          "hardware, all its devices, the units' activity models) for one "
                          "request at this run's context"}
        return out

    def _baselines(self, ctx: float) -> dict:
        """The system model's systems (PAM §7.1) for one request of this model at this context,
        tokens/s; empty with a note when the model is not in the workloads registry."""
        if MODEL_NAME not in wl.MODELS:
            return {"note": f"the PAM system model has no '{MODEL_NAME}' workload"}
        cfg = PamModelConfig(model=MODEL_NAME)
        lengths = {"ctx": ctx, "total": ctx, "out": 1.0}
        out = {"note": f"PAM system model (PAM §7.1 hardware, all its devices; LS-PIM and PAM "
                       f"with 8x sparse attention): {MODEL_NAME}, one request, context "
                       f"{ctx:.0f}"}
        for s in SYSTEMS:
            r = model_step(s, cfg, 1, lengths)
            tp = throughput(r)
            ok = math.isfinite(tp)
            e = step_energy(s, r, cfg, ctx) if ok else None
            out[s] = {"tokens_per_s": float(tp) if ok else None,
                      "seconds_per_token": float(r["time"]) if ok else None,
                      "j_per_token": e.j_per_token if e is not None else None,
                      "power_w": e.power_w if e is not None else None}
        return out

    def describe(self) -> dict:
        return {
            "pam_pu, pam_ru": "decode attention: PAMattention (PAM Alg. 1) over the HBM, DDR "
                              f"and SSD tiers, {':'.join(map(str, self.pus))} PUs, tiles of "
                              f"{self.tile}, {self.acc.name} accumulator; query head h reads KV "
                              "head h // 3",
            "placement": "PAM's policy (system model): importance eq. 7, new tokens into HBM "
                         "with evictions, Algorithm 2 swaps after each step; tier shares "
                         f"{'/'.join(f'{x:g}' for x in self.shares)} (assumed)",
            "host": "projections, FFN, norms, RoPE and the prompt's attention (PAM's GPUs)",
            "backend": self.backend if self.backend == "golden" else
            f"rtl (layers {sorted(self.rtl_layers) if self.rtl_layers is not None else 'all'}, "
            f"first {self.rtl_steps if self.rtl_steps is not None else 'all'} decode steps)",
            "not modelled": "PAM's 8x sparse attention, the greedy bank-group mapping (§6.1)",
        }
