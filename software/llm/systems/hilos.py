"""SmolLM2 (or any llama GGUF) on HILOS: decode attention near storage (HILOS §4.1, §4.4), with
the newest tokens' scores precomputed on the host (delayed KV writeback, §4.3).

What runs where:

* **The HILOS kernel** (``hilos_attention``: ``qk_gemv``, ``two_pass_softmax``, ``sv_gemv``)
  computes every decode step's attention, one job per KV head with its ``d_group`` queries
  (GQA as §4.4 maps it: SmolLM2's 9 query heads over 3 KV heads give d_group 3), through the
  golden model vectorized over the KV heads (:func:`~pimforge.sim.golden.hilos.fast.hilos_groups`,
  bit-exact with :func:`~pimforge.sim.golden.hilos.attention.hilos_group`) or, with
  ``backend="rtl"``, on the generated Verilog.  Q, K, V are rounded to fp16 from the decoder's
  float32, O comes back as fp16 and is widened to float32.  Block size and score format are the
  kernel config's defaults (:class:`~pimforge.hw.hilos.config.HilosAttentionConfig`: 128-token
  blocks, fp32 scores; ``score_fmt="fp16"`` gives the paper's storage format).
* **Delayed writeback** (§4.3): the prompt's KV is written to the SSDs at prefill; each
  generated token's KV entry is staged in host memory and spilled every ``spill_interval`` tokens
  (the HILOS system model's ``c``, :class:`~pimforge.software.hilos.config.HilosModelConfig`:
  16, one 4 KiB page of 256-byte entries).  The kernel reads K only for the stored tokens; the
  host scores the buffered ones (the current token included, whose K exists only on the host:
  1..c tokens) and sends those scalars, rounded to the score format, with the buffered V rows.
* **The host** (the GPU and CPU of the HILOS testbed) keeps everything else: the projections and
  the FFN, the norms, RoPE, and the prefill's attention (FlashAttention on the GPU, §6.1).

Time per decode step: the kernel's cycles from its cycle model
(:func:`~pimforge.hw.hilos.attention_timing.kernel_schedule` on the jobs each SmartSSD runs, the
KV heads spread over the devices) at the SmartSSD's clock, bounded below by its FPGA DRAM as
:meth:`~pimforge.software.devices.SmartSSD.kernel_time` bounds it; the other resources (weights
over the GPU link, the GPU, the SSDs' flash reads and page spills, the chassis link, the host
buffer's serial work) from the HILOS system model's step
(:func:`~pimforge.software.hilos.step.step_hilos`) at the step's context, batch 1, its host
buffer and chassis traffic at the model's average buffer of ``(c - 1) / 2`` tokens.  The
baselines are the same system model's FlexGen systems (§6.1) at the same points, and its own
HILOS estimate (the kernel from the calibrated per-job cycles instead of this run's).  Like
FlexGen, the model streams the weights to the GPU every step, which bounds a model this small:
HILOS removes KV traffic, and at short contexts there is little of it.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.errors import ToolError
from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import float_bits
from pimforge.hw.hilos.attention_timing import kernel_schedule
from pimforge.hw.hilos.config import SCORE_FMTS
from pimforge.sim.golden.fp import fast as ff
from pimforge.sim.golden.hilos.fast import hilos_groups
from pimforge.software import devices as dev
from pimforge.software import workloads as wl
from pimforge.software.hilos import attention as hatt
from pimforge.software.hilos.config import HilosModelConfig
from pimforge.software.hilos.energy import step_energy
from pimforge.software.hilos.step import step_flex_dram, step_flex_ssd, step_hilos
from pimforge.software.llm.ops import Ops

__all__ = ["HilosOps", "UNIT", "buffered_tokens", "model_spec"]

UNIT = "hilos_attention"


def buffered_tokens(decoded: int, spill: int) -> int:
    """Tokens in the host's writeback buffer at the ``decoded``-th decode step (1-based): the
    generated tokens since the last spill, this step's included (1..``spill``)."""
    return (decoded - 1) % spill + 1


def model_spec(cfg) -> wl.ModelSpec:
    """The system model's description (:class:`~pimforge.software.workloads.ModelSpec`) of a
    llama model read from its GGUF (gated FFN, tied embeddings unless the file has an output
    matrix)."""
    return wl.ModelSpec(cfg.name or "llama", cfg.n_layers, cfg.d_model, cfg.n_heads,
                        cfg.n_kv_heads, cfg.d_ffn, cfg.vocab, True, "the GGUF's metadata",
                        tied_embeddings=True, head_dim_override=cfg.head_dim)


def _fp16(x) -> np.ndarray:
    """float32 values rounded to fp16, as float32 (what the kernel reads)."""
    with np.errstate(over="ignore"):
        return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)


class HilosOps(Ops):
    """HILOS (HILOS §4): decode attention on the near-storage kernel, the rest on the host.

    ``backend`` "golden" or "rtl" (``rtl_layers`` and the first ``rtl_steps`` decode steps run
    on the Verilog and must match the golden model bit for bit); ``score_fmt`` "fp32" or
    "fp16"; ``spill_interval``, ``smartssds`` and ``gpu`` default to the HILOS system model's
    configuration (§6.1)."""

    name = "hilos"

    def __init__(self, backend: str = "golden", rtl_layers=None, rtl_steps=None,
                 score_fmt: str = "fp32", spill_interval=None, smartssds=None, gpu=None):
        mc = HilosModelConfig()
        self.backend = backend
        self.rtl_layers = set(rtl_layers or []) if backend == "rtl" else set()
        self.rtl_steps = (1 if rtl_steps is None else int(rtl_steps)) if backend == "rtl" else 0
        self.score_fmt = score_fmt
        self.spill = int(spill_interval or mc.spill_interval)
        self.devices = int(smartssds or mc.smartssds)
        self.gpu = dev.GPUS[gpu or mc.gpu]
        self.kcfg = None
        self.rtl_checked = []            # (pos, layer) of every layer-step the RTL matched

    def prepare(self, model) -> None:
        super().prepare(model)
        c = model.config
        self.kcfg = hatt.kernel_config(c.group, c.head_dim, score_fmt=self.score_fmt,
                                       scale=1.0 / np.sqrt(c.head_dim))
        self.spec = model_spec(c)
        self.prefill_end = None          # positions written to the SSDs at prefill
        self.split = {}                  # decode pos -> (stored tokens, buffered tokens)

    # --- the kernel ----------------------------------------------------------------------------
    def attention(self, step, layer, q, k, v, scale):
        if not step.decode:
            return super().attention(step, layer, q, k, v, scale)
        if self.prefill_end is None:
            # the prefill (on the host) wrote every position before the first decode step
            self.prefill_end = step.pos
        hkv, n, d = k.shape
        g = q.shape[0] // hkv
        c = min(buffered_tokens(step.pos - self.prefill_end + 1, self.spill), n - 1)
        n_k = n - c
        self.split[step.pos] = (n_k, c)
        q32, k32, v32 = _fp16(q), _fp16(k), _fp16(v)
        qg = q32.reshape(hkv, g, d)
        # §4.3 step 2: the host scores the buffered keys (float64 on the fp16 values), rounded
        # once to the score format it sends
        host = np.einsum("hgd,hnd->hgn", qg.astype(np.float64), k32[:, n_k:]) * scale
        fmt = SCORE_FMTS[self.score_fmt]
        pre = float_bits(fmt, host)
        res = hilos_groups(ff.to_bits(FP16, qg.astype(np.float16)),
                           ff.to_bits(FP16, k32[:, :n_k].astype(np.float16)),
                           ff.to_bits(FP16, v32.astype(np.float16)), self.kcfg.block, None,
                           self.kcfg.scale, fmt, self.kcfg.mask_value, pre)
        o16 = res["O"].reshape(hkv * g, d)
        self._add_cycles(step, n_k, n)
        if layer in self.rtl_layers and step.pos - self.prefill_end < self.rtl_steps:
            self._check_rtl(step, layer, q32, k32[:, :n_k], v32, host.reshape(hkv * g, c),
                            o16)
        return ff.to_float(FP16, o16).astype(np.float32)

    def _device_jobs(self, hkv: int) -> list:
        """KV heads per SmartSSD (batch 1: the heads spread round-robin, §4.1)."""
        return [hkv // self.devices + (i < hkv % self.devices)
                for i in range(min(hkv, self.devices))]

    def _add_cycles(self, step, n_k: int, n: int) -> None:
        jobs = self._device_jobs(self.model.config.n_kv_heads)
        # the devices run their jobs in parallel: the layer waits for the busiest one
        step.add_cycles(UNIT, kernel_schedule(self.kcfg, [(n_k, n)] * max(jobs))["cycles"])

    def _check_rtl(self, step, layer, q, k, v, pre, o16) -> None:
        r = hatt.hilos_attention(q, k, v, None, pre, self.kcfg.block, self.score_fmt,
                                 self.kcfg.scale, backend="rtl")
        got = ff.to_bits(FP16, r.o)
        if not np.array_equal(got, o16):
            raise ToolError(f"hilos: the RTL's attention output differs from the golden model "
                            f"at position {step.pos}, layer {layer}")
        self.rtl_checked.append((step.pos, layer))

    # --- reports -------------------------------------------------------------------------------
    def describe(self) -> dict:
        c = self.kcfg
        where = "Verilog (RTL == golden asserted)" if self.backend == "rtl" else "golden model"
        return {
            "hilos_attention": f"decode attention, d_group {c.d_group}, block {c.block}, "
                               f"{self.score_fmt} scores ({where}"
                               + (f" on layers {sorted(self.rtl_layers)}, first "
                                  f"{self.rtl_steps} decode step(s); golden elsewhere"
                                  if self.backend == "rtl" else "") + "; HILOS §4.4)",
            "host": f"projections, FFN, norms, RoPE, prefill attention; the scores of the "
                    f"1..{self.spill} buffered newest tokens (delayed writeback, §4.3)",
            "timing": f"kernel cycle model at {dev.SMARTSSD.clock_mhz:g} MHz on "
                      f"{self.devices} SmartSSDs, the HILOS system model's links and memories "
                      f"({self.gpu.name}), batch 1",
        }

    def _kernel_seconds(self, pos: int, cycles: int) -> float:
        """A step's kernel time: the cycles at the SmartSSD clock, or its FPGA DRAM streaming
        the busiest device's K rows (stored tokens) and V rows (all), if that is longer."""
        sd, c = dev.SMARTSSD, self.model.config
        n_k, b = self.split[pos]
        jobs = max(self._device_jobs(c.n_kv_heads))
        dram = c.n_layers * jobs * (2 * n_k + b) * c.head_dim * 2 / (sd.dram_bw * sd.dram_eff)
        return max(cycles / (sd.clock_mhz * 1e6), dram)

    def timing(self, steps: list) -> dict:
        dec = [s for s in steps if s.decode and s.pos in self.split]
        if not dec:
            return {}
        m, gpu = self.spec, self.gpu
        per, base = [], {"FLEX(DRAM)": [], "FLEX(SSD)": [], "FLEX(16 SSDs)": [],
                         f"HILOS({self.devices}) model": []}
        energy = {k: [] for k in base}
        parts_sum = {}
        for s in dec:
            st = step_hilos(m, gpu, 1, s.context, 1, self.devices, c=self.spill)
            steps = {"FLEX(DRAM)": step_flex_dram(m, gpu, 1, s.context, 1),
                     "FLEX(SSD)": step_flex_ssd(m, gpu, 1, s.context, 1),
                     "FLEX(16 SSDs)": step_flex_ssd(m, gpu, 1, s.context, 1, True),
                     f"HILOS({self.devices}) model": st}
            for key, stk in steps.items():
                e = step_energy(stk)
                if e is not None:
                    energy[key].append(e.j_per_token)
            parts = dict(st.parts, kernel=self._kernel_seconds(s.pos, s.cycles.get(UNIT, 0)))
            t = max(parts.values()) + sum(st.serial.values())
            per.append(t)
            for key, val in list(parts.items()) + list(st.serial.items()):
                parts_sum[key] = parts_sum.get(key, 0.0) + val
            for key, stk in steps.items():
                base[key].append(stk.step)
        s_tok = float(np.mean(per))
        own = f"HILOS({self.devices}) model"
        j_tok = float(np.mean(energy[own])) if energy[own] else float("nan")
        cycles = float(np.mean([s.cycles.get(UNIT, 0) for s in dec]))
        return {
            "s_per_token": s_tok, "tokens_per_s": 1.0 / s_tok,
            "kernel_cycles_per_token": cycles,
            "clock_mhz": dev.SMARTSSD.clock_mhz,
            "breakdown_s": {k: v / len(dec) for k, v in parts_sum.items()},
            "baselines": {k: 1.0 / float(np.mean(v)) for k, v in base.items()},
            "energy": {"j_per_token": j_tok, "power_w": j_tok / s_tok,
                       "baselines": {k: float(np.mean(v)) for k, v in energy.items()
                                     if v and k != own},
                       "source": "the HILOS system model's energy (software/hilos/energy.py, "
                                 "Table 3 accelerator power) at each decode step's context"},
            "decode_steps": len(dec), "smartssds": self.devices,
            "spill_interval": self.spill, "gpu": gpu.name, "batch": 1,
        }
