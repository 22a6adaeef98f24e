"""Hermes (NDP-DIMMs beside a consumer GPU) running a llama model: what Hermes' workflow puts on
the NDP-DIMMs goes through the golden models of ``hermes_gemv`` and ``hermes_act``.

Where each operation runs (Hermes §IV-A2, Fig. 6a):

* **prefill** (the prompt and the step that yields the first token): on the GPU, "adhering to a
  traditional offloading strategy"; the decoder runs it on the host reference.  The KV cache it
  builds moves to the DIMMs (converted to fp16).
* **QKV generation** (``attn_q``, ``attn_k``, ``attn_v``) and the **MLP** (``ffn_gate``,
  ``ffn_up``, ``ffn_down``): the FC layers Hermes splits between the GPU's hot neurons and the
  DIMMs' cold ones.  SmolLM2-135M would fit the GPU whole (the system model's GPU share is 1),
  so to run the DIMMs' arithmetic every neuron is taken as cold: all of them stream through
  ``hermes_gemv`` (:func:`pimforge.sim.golden.hermes.fast.rows`, row mode, the paper's engine:
  fp16 weights and inputs, fp32 accumulator, beats of 64, four partials), spread over the DIMMs
  by neuron (neuron ``i`` on DIMM ``i mod J``), as Hermes-base runs a layer the GPU does not
  hold.
* **attention**: on the DIMMs (§IV-A2: "ideal for execution on NDP-DIMMs"), one KV head per DIMM:
  ``QK^T`` in row mode (the cached keys are the neurons, the group's 3 query heads the batch;
  the host folds ``1/sqrt(d)`` into q before rounding it to fp16), the softmax on ``hermes_act``
  (:func:`pimforge.sim.golden.hermes.fast.softmax`, the paper's 256 lanes, fp32 inside), and
  ``S.V`` in column mode (the cached values are the columns, the probabilities their x).
* **projection** (``attn_output``): "handled solely by the computation-efficient GPU"; here the
  host reference.  SwiGLU's SiLU has no unit on the DIMMs (``hermes_act`` does ReLU and
  softmax), so it runs on the host as well; the embedding, norms, RoPE, residuals and the LM head
  are the decoder's.

``sparse=True`` (§IV-C): the FFN runs row-sparse (``ffn_gate``, ``ffn_up``: the predicted-active
rows) and column-sparse (``ffn_down``: the same neurons as columns) from Hermes' lightweight
predictor (:mod:`pimforge.software.hermes.predictor`); the inactive neurons give 0.  SwiGLU is
not ReLU-sparse, so the monitor counts a neuron as *fired* when its ``|silu(g) u|`` is among the
``keep`` share of the layer's largest (nonzero) ones.  The monitor sees every neuron's activity
(the host's float32 dense FFN; the system model's
:func:`~pimforge.software.hermes.predictor.run_predictor` updates the states from the true
activity the same way), while the DIMMs compute only the predicted neurons.  The decoder's
prefill shows the system no activity, so the state table and the correlation tables come from an
offline profile (§IV-B's offline sampling): the host reference over :data:`CALIBRATION`; then
every decode token is predicted (``s1 + 6 s2 > 15``) and its states updated as the paper says.
In column mode each DIMM sums its own columns and merges the partial of the DIMMs before it (the
engine's merge input), so the result is that chain's.

Timing (:meth:`HermesOps.timing`) per decode token: each ``hermes_gemv`` job's cycles from the
exact cycle model with the DIMM's burst arrivals
(:func:`~pimforge.hw.hermes.gemv_timing.gemv_schedule`, on the DIMM with the most of the job's
neurons: the one the split job waits for), each softmax from
:func:`~pimforge.hw.hermes.act_timing.act_cycles`, at the NDP clock.  ``Step.cycles`` holds
those critical-path cycles (the DIMMs work in parallel), so the DIMMs' part of the time is
``cycles / clock`` (plus, sparse, the DIMM-link hops of the down projection's partials).  Then
the Hermes system model's links and GPU (:mod:`pimforge.software.hermes.config`): a
synchronisation (``SYNC_S`` and the activation over PCIe) per transfer, the projection and the
LM head on the RTX 4090's roofline.  Baselines: the system model's Accelerate, FlexGen and
Hermes-base on the same model.
"""
from __future__ import annotations

import math

import numpy as np

from pimforge.base.errors import UserError
from pimforge.hw.hermes.act_timing import act_cycles
from pimforge.hw.hermes.config import DDR4_3200, NDP_CLOCK_MHZ, act_preset, gemv_preset
from pimforge.hw.hermes.dimm import beat_arrivals, neuron_addresses
from pimforge.hw.hermes.gemv_timing import GemvJob, gemv_schedule
from pimforge.sim.golden.hermes import fast
from pimforge.software import workloads as wl
from pimforge.software.hermes import predictor as hp
from pimforge.software.hermes.config import (
    DIMM_LINK, GPU, HOST_LINK, KERNEL_S, SYNC_S, HermesModelConfig
)
from pimforge.software.energy import EnergyResult, add_counts, scale_counts
from pimforge.software.hermes.energy import ENERGY_NODE, act_counts, energy_result, gemv_counts
from pimforge.software.hermes.step import baseline_step
from pimforge.software.llm.forward import Decoder
from pimforge.software.llm.ops import Ops
from pimforge.software.llm.tokenizer import build_tokenizer

__all__ = ["HermesOps", "NDP_LINEARS", "KEEP", "BASELINES", "CALIBRATION", "calibration_ids",
           "model_spec"]

NDP_LINEARS = ("attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up", "ffn_down")
KEEP = 0.5                      # sparse: the share of FFN neurons the monitor counts as fired
BASELINES = ("Accelerate", "FlexGen", "Hermes-base")
LINKS = "GPU <-> DIMM transfers (PCIe + sync)"
BURST_ELEMS = 32                # a 64-byte DRAM burst of fp16
F16 = np.float16
BYTES = wl.BYTES_FP16


def _pad(a, unit):
    pad = (-a.shape[-1]) % unit
    return np.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, pad)]) if pad else a


def _link(nbytes: float) -> float:
    """One GPU <-> DIMM transfer of ``nbytes``: the synchronisation and PCIe (eq. 3)."""
    return SYNC_S + nbytes / HOST_LINK.effective


def _gpu(flops: float, nbytes: float) -> float:
    return GPU.time(flops, nbytes) + KERNEL_S


def model_spec(config) -> wl.ModelSpec:
    """The system model's view of a llama model (:class:`~pimforge.software.workloads.ModelSpec`)
    from its :class:`~pimforge.software.llm.gguf_model.LlamaConfig`."""
    return wl.ModelSpec(config.name or "llama", config.n_layers, config.d_model, config.n_heads,
                        config.n_kv_heads, config.d_ffn, config.vocab, True,
                        "the GGUF's metadata", tied_embeddings=True,
                        head_dim_override=config.head_dim)


CALIBRATION = ("Paris is the capital and the largest city of France. The river Seine runs "
               "through it, and millions of people visit its museums, parks and cafes every "
               "year. Scientists measure, engineers build, and children learn to read.")


def calibration_ids(model) -> list:
    """:data:`CALIBRATION`'s token ids in ``model``'s vocabulary."""
    return build_tokenizer(model.metadata).encode(CALIBRATION)


class _Profile(Ops):
    """The host reference that records the monitor's firing of every FFN neuron."""

    def __init__(self, monitor):
        self.monitor, self.fired = monitor, {}

    def prepare(self, model) -> None:
        super().prepare(model)
        self.fired = [[] for _ in range(model.config.n_layers)]

    def swiglu(self, step, layer: int, g, u):
        h = super().swiglu(step, layer, g, u)
        self.fired[layer].append(self.monitor(h))
        return h


class HermesOps(Ops):
    """Hermes' NDP-DIMMs under a llama model (module docstring).  ``sparse``: the predictor's
    row/column-sparse FFN; ``keep``: the share of neurons counted as fired; ``dimms``: NDP-DIMMs
    (the system model's 8)."""
    name = "hermes"

    def __init__(self, backend: str = "golden", rtl_layers=None, rtl_steps=None,
                 sparse: bool = False, keep: float = KEEP, dimms: int | None = None):
        if backend == "rtl":
            raise UserError("--backend rtl: the RTL layer-steps are supported on pam, hilos; "
                            "hermes runs golden (its fast RTL engine is smaller than the paper's)")
        if backend != "golden":
            raise UserError(f"--backend must be golden or rtl, not {backend!r}")
        if not 0.0 < keep <= 1.0:
            raise UserError(f"hermes: keep must be in (0, 1], not {keep}")
        self.sparse, self.keep = bool(sparse), float(keep)
        self.dimms = int(dimms or HermesModelConfig().dimms)
        self.gemv = gemv_preset("hermes")
        self.act = act_preset("hermes")
        self.unit = max(BURST_ELEMS, self.gemv.beat_elems)
        self._cyc = {}

    # -- setup
    def prepare(self, model) -> None:
        super().prepare(model)
        self.cfg = model.config
        self.spec = model_spec(model.config)
        self._w = {}
        self._parts = {}            # decode position -> {part: seconds}
        self._acts = {}             # decode position -> {action: count} (the energy)
        self._pred = None           # (states, tables), from the offline profile
        self._now = {}              # layer -> this token's fired neurons
        self._active = {}           # layer -> this token's predicted-active neurons
        self._xn = {}               # layer -> this token's FFN input (the accuracy check)
        self.stats = hp.PredictorStats()
        self.active_share = []      # per decode (layer, token): active / d_ffn
        self.active_log = {}        # (position, layer) -> the predicted-active neurons

    def _weights(self, layer: int, name: str, w):
        """One matrix's fp16 neurons as the DIMMs hold them, cached: its rows (padded with zeros
        to whole bursts and beats) prepared for row mode
        (:class:`~pimforge.sim.golden.hermes.fast.RowMatrix`), or for a column-sparse
        ``ffn_down`` its columns (float16)."""
        key = (layer, name)
        if key not in self._w:
            if name == "ffn_down" and self.sparse:
                self._w[key] = _pad(np.asarray(w.T).astype(F16), self.unit)
            else:
                self._w[key] = fast.RowMatrix(self.gemv, _pad(np.asarray(w).astype(F16),
                                                              self.unit))
        return self._w[key]

    def _on_ndp(self, step) -> bool:
        return step.decode

    def _add(self, step, part: str, seconds: float) -> None:
        if step.decode:
            d = self._parts.setdefault(step.pos, {})
            d[part] = d.get(part, 0.0) + seconds

    def _count(self, step, counts: dict) -> None:
        """Add a decode step's actions: the units' activity, DRAM bits and link bits."""
        if step.decode:
            self._acts[step.pos] = add_counts(self._acts.get(step.pos, {}), counts)

    def _xfer(self, step, nbytes: float) -> None:
        """One GPU <-> DIMM transfer: its time and its bits over PCIe."""
        self._add(step, LINKS, _link(nbytes))
        self._count(step, {"link:pcie:bit": 8 * nbytes})

    def _gpu_part(self, step, part: str, flops: float, nbytes: float) -> None:
        self._add(step, part, _gpu(flops, nbytes))
        self._count(step, {"gpu:flop:e5m10": flops, "dram:gddr6:bit": 8 * nbytes})

    # -- cycle models
    def _gemv_cycles(self, mode: str, batch: int, neurons, length: int) -> int:
        """The exact cycle model of one job: the ``neurons`` (indices in the DIMM's layout)
        of ``length`` fp16 each, with the DIMM's burst arrivals."""
        n = len(neurons)
        if n == 0:
            return 0
        key = (mode, batch, length, n, neurons[-1] - neurons[0] == n - 1 and neurons[0] == 0)
        if key[-1] and key in self._cyc:
            return self._cyc[key]
        E = self.gemv.beat_elems
        addrs = neuron_addresses(np.asarray(neurons), length * 2)
        arr = tuple(1 + a for a in beat_arrivals(DDR4_3200, addrs, E * 2, NDP_CLOCK_MHZ))
        job = GemvJob(mode, batch, n, length // E, False, arr)
        s = gemv_schedule(self.gemv, [job])[0]
        cyc = (s["outputs"][-1] + 1) if s["outputs"] else s["end"]
        if key[-1]:
            self._cyc[key] = cyc
        return cyc

    def _busiest(self, active) -> np.ndarray:
        """Neuron ``i`` on DIMM ``i mod J``: the local indices of the DIMM with the most active
        neurons (the first of them), the one a split job waits for."""
        dimm = active % self.dimms
        j = int(np.argmax(np.bincount(dimm, minlength=self.dimms))) if len(active) else 0
        return active[dimm == j] // self.dimms

    def _split_cycles(self, step, mode: str, batch: int, active, length: int) -> int:
        """A job split over the DIMMs: the busiest DIMM's cycles, charged to the step."""
        c = self._gemv_cycles(mode, batch, self._busiest(active), length)
        step.add_cycles("hermes_gemv", c)
        return c

    def _seconds(self, cycles: float) -> float:
        return cycles / (NDP_CLOCK_MHZ * 1e6)

    # -- the predictor (sparse)
    def _monitor(self, h) -> np.ndarray:
        """Fired: among the ``keep`` share of the largest nonzero ``|h|``."""
        a = np.abs(np.asarray(h, np.float32))
        k = max(1, round(self.keep * a.size))
        top = np.argpartition(-a, k - 1)[:k]
        fired = np.zeros(a.size, bool)
        fired[top] = True
        return fired & (a > 0)

    def _start_predictor(self) -> None:
        """The offline profile: the host reference over :data:`CALIBRATION`, the monitor's
        firing per layer and token; states from the frequencies, tables from the correlations."""
        prof = _Profile(self._monitor)
        ids = calibration_ids(self.model)
        dec = Decoder(self.model, prof, max_positions=len(ids) + 1)
        for t in ids:
            dec.step(t, decode=True)
        F = [np.array(f, bool) for f in prof.fired]
        states = [hp.init_state(f.mean(0)) for f in F]
        tables = [None] + [hp.top2_correlated(F[i - 1], F[i]) for i in range(1, len(F))]
        self._pred = (states, tables)

    def _predict(self, layer: int) -> np.ndarray:
        if self._pred is None:
            self._start_predictor()
        states, tables = self._pred
        s2 = None if layer == 0 else self._now[layer - 1][tables[layer]].sum(axis=1)
        return np.flatnonzero(hp.predict(states[layer], s2))

    # -- operations
    def linear(self, step, layer: int, name: str, w, x):
        if name not in NDP_LINEARS or not self._on_ndp(step):
            if step.decode and name == "attn_output":
                self._gpu_part(step, "projection (GPU)", 2.0 * w.size, w.size * BYTES)
            return super().linear(step, layer, name, w, x)
        d_out, d_in = w.shape
        sparse = self.sparse and step.decode and name.startswith("ffn_")
        wn = self._weights(layer, name, w)
        x16 = _pad(np.asarray(x, np.float32).astype(F16)[None, :], self.unit)
        if sparse and name == "ffn_down":
            return self._down_cols(step, layer, wn, x, d_out)
        if sparse:
            if name == "ffn_gate":
                self._active[layer] = self._predict(layer)
                self.active_log[(step.pos, layer)] = self._active[layer]
                self._xn[layer] = np.asarray(x, np.float32)
            idx = self._active[layer]
        else:
            idx = np.arange(d_out)
        y = np.zeros(d_out, np.float32)
        if len(idx):
            y[idx] = wn(x16, None if len(idx) == d_out else idx)[:, 0].astype(np.float32)
        cyc = self._split_cycles(step, "rows", 1, idx, wn.d)
        part = "QKV (DIMMs)" if name.startswith("attn_") else "MLP (DIMMs)"
        self._add(step, part, self._seconds(cyc))
        self._count(step, add_counts(gemv_counts("hermes", "rows", d_in, d_out, 1, len(idx)),
                                     {"dram:ddr4:bit": len(idx) * d_in * 16}))
        if name in ("attn_q", "ffn_gate"):          # the block's input to the DIMMs
            self._xfer(step, d_in * BYTES)
        if name in ("attn_v", "ffn_up"):            # its outputs back to the host
            rows = self.cfg.d_model + 2 * self.cfg.n_kv_heads * self.cfg.head_dim \
                if name == "attn_v" else 2 * d_out
            self._xfer(step, rows * BYTES)
        if name == "ffn_down":
            self._xfer(step, d_out * BYTES)
        return y

    def _down_cols(self, step, layer: int, cols16, h, d_out: int):
        """The column-sparse down projection: each DIMM's active columns from +0, merged with
        the partial of the DIMMs before it (module docstring)."""
        idx = self._active[layer]
        y, parts = self.column_chain(cols16, np.asarray(h, np.float32).astype(F16), idx)
        worst = self._split_cycles(step, "cols", 1, idx, cols16.shape[1])
        out = np.zeros(d_out, np.float32) if y is None else y[0, :d_out].astype(np.float32)
        hop = d_out * BYTES / DIMM_LINK.effective
        self._add(step, "MLP (DIMMs)", self._seconds(worst) + max(0, len(parts) - 1) * hop)
        d_in = cols16.shape[0]
        self._count(step, add_counts(gemv_counts("hermes", "cols", d_in, d_out, 1, len(idx)),
                                     {"dram:ddr4:bit": len(idx) * d_out * 16,
                                      "link:dimm:bit": max(0, len(parts) - 1) * d_out * 16}))
        self._xfer(step, d_out * BYTES)
        return out

    def column_chain(self, cols16, h16, idx) -> tuple:
        """Column mode over the DIMMs: DIMM ``j`` sums its columns of ``idx`` (``cols16`` the
        fp16 columns, ``h16`` the fp16 inputs) and merges the fp16 result of the DIMMs before
        it.  Returns (y float16 (1, d_out) or None when no column is active, the columns of
        each DIMM that has some)."""
        y, parts = None, []
        for j in range(self.dimms):
            mine = idx[idx % self.dimms == j]
            if len(mine):
                y = fast.cols(self.gemv, cols16[mine], h16[mine][:, None], y)
                parts.append(mine)
        return y, parts

    def swiglu(self, step, layer: int, g, u):
        h = super().swiglu(step, layer, g, u)
        if not self.sparse:
            return h
        # the monitor sees every neuron's activity, as the system model's predictor runs
        # (software/hermes/predictor.py run_predictor): the host's float32 dense FFN
        w, xn = self.model.layers[layer], self._xn[layer]
        fired = self._monitor(super().swiglu(step, layer, w["ffn_gate"] @ xn, w["ffn_up"] @ xn))
        pred = np.zeros(h.size, bool)
        pred[self._active[layer]] = True
        self.stats.add(pred, fired)
        self._now[layer] = fired
        states = self._pred[0]
        states[layer] = hp.update_state(states[layer], fired)
        self.active_share.append(len(self._active[layer]) / h.size)
        return h

    def attention(self, step, layer: int, q, k, v, scale: float):
        if not self._on_ndp(step):
            return super().attention(step, layer, q, k, v, scale)
        hkv, n, hd = k.shape
        grp = q.shape[0] // hkv
        if n > self.act.max_len:
            raise UserError(f"hermes: a context of {n} tokens exceeds hermes_act's softmax "
                            f"buffer of {self.act.max_len} elements")
        q16 = _pad((np.asarray(q, np.float32) * np.float32(scale)).astype(F16)
                   .reshape(hkv, grp, hd), self.unit)
        k16 = _pad(np.asarray(k, np.float32).astype(F16), self.unit)
        v16 = _pad(np.asarray(v, np.float32).astype(F16), self.unit)
        s = fast.rows(self.gemv, k16, q16)                                  # (hkv, n, grp)
        p = fast.softmax(s.transpose(0, 2, 1), self.act.lanes, self.act.acc,
                         self.act.partials)                                 # (hkv, grp, n)
        o = fast.cols(self.gemv, v16, p.transpose(0, 2, 1))                 # (hkv, grp, hd')
        # one KV head per DIMM (in parallel, ``rounds`` of them each): QK^T, the group's
        # softmaxes and S.V
        keys = np.arange(n)
        qk = self._gemv_cycles("rows", grp, keys, k16.shape[-1])
        sm = act_cycles(self.act, "softmax", n)
        sv = self._gemv_cycles("cols", grp, keys, v16.shape[-1])
        rounds = math.ceil(hkv / self.dimms)
        step.add_cycles("hermes_gemv", rounds * (qk + sv))
        step.add_cycles("hermes_act", rounds * grp * sm)
        self._add(step, "attention (DIMMs)", rounds * self._seconds(qk + grp * sm + sv))
        one = add_counts(gemv_counts("hermes", "rows", hd, n, grp, n),
                         scale_counts(act_counts("softmax", n), grp),
                         gemv_counts("hermes", "cols", n, hd, grp, n))
        self._count(step, add_counts(scale_counts(one, hkv),
                                     {"dram:ddr4:bit": n * 2 * hkv * hd * 16}))
        self._xfer(step, q.size * BYTES)
        return o[..., :hd].reshape(hkv * grp, hd).astype(np.float32)

    # -- reports
    def describe(self) -> dict:
        d = {"hermes_gemv": "decode: attn_q/k/v, ffn_gate/up/down (row mode"
                            + (", the FFN row/column-sparse from the predictor" if self.sparse
                               else ", dense") + ") and attention's QK^T (rows) and S.V (cols), "
                            "paper engine (256 multipliers, fp16 in, fp32 acc), "
                            f"{self.dimms} DIMMs",
             "hermes_act": "decode: the attention softmax (256 lanes, fp32 inside)",
             "host (GPU)": "prefill, attn_output (the projection), SwiGLU's SiLU, embedding, "
                           "norms, RoPE, residuals, LM head",
             "note": "SmolLM2 fits the GPU whole; every QKV/MLP neuron is taken as cold (on "
                     "the DIMMs) so that the DIMMs' arithmetic runs"}
        if self.sparse:
            d["predictor"] = (f"Hermes §IV-C state + correlation tables; fired = the top "
                              f"{self.keep:.0%} |silu(g) u| of a layer")
        return d

    def timing(self, steps: list) -> dict:
        dec = [s for s in steps if s.decode and s.pos in self._parts]
        if not dec:
            return {}
        c, L = self.cfg, self.cfg.n_layers
        parts = {}
        for s in dec:
            for k_, v_ in self._parts[s.pos].items():
                parts[k_] = parts.get(k_, 0.0) + v_ / len(dec)
        head = c.vocab * c.d_model
        parts["LM head (GPU)"] = _gpu(2.0 * head, head * BYTES)
        per_token = sum(parts.values())
        cycles = {}
        for s in dec:
            for u, n in s.cycles.items():
                cycles[u] = cycles.get(u, 0) + n / len(dec)
        mcfg = HermesModelConfig(input_len=max(1, min(4096, steps[0].pos + 1)),
                                 output_len=max(1, min(4096, len(steps))), dimms=self.dimms,
                                 prefill=False)
        base, base_j = {}, {}
        for name in BASELINES:
            run = baseline_step(name, self.spec, 1, mcfg)
            base[name] = {"s_per_token": run.step,
                          "tokens_per_s": run.tokens_per_s(mcfg.output_len, False)}
            base_j[name] = energy_result(name, self.spec, 1, mcfg, run).j_per_token
        acts = {}
        for s in dec:
            acts = add_counts(acts, scale_counts(self._acts.get(s.pos, {}), 1.0 / len(dec)))
        acts = add_counts(acts, {"gpu:flop:e5m10": 2.0 * head, "dram:gddr6:bit": 8 * head * BYTES,
                                 "static:rtx4090": per_token,
                                 "static:ddr4_dimm": self.dimms * per_token})
        own = EnergyResult("Hermes", acts, per_token, ENERGY_NODE)
        out = {}
        if self.sparse:
            out["predictor"] = dict(self.stats.as_dict(), keep=self.keep,
                                    active_share=float(np.mean(self.active_share)))
        return {**out, "system": "Hermes (RTX 4090 + NDP-DIMMs, every QKV/MLP neuron on the DIMMs)",
                "clock_mhz": NDP_CLOCK_MHZ, "dimms": self.dimms, "layers": L,
                "cycles_per_token": cycles, "parts_s": parts, "s_per_token": per_token,
                "tokens_per_s": 1.0 / per_token, "baselines": base,
                "energy": {"j_per_token": own.j_per_token, "power_w": own.power_w,
                           "breakdown_j": own.breakdown(), "baselines": base_j,
                           "source": "this run's actions: hermes_gemv and hermes_act activity "
                                     "models on its jobs, DDR4 and GDDR6 bits, PCIe and "
                                     "DIMM-link bits, the GPU's and DIMMs' static power "
                                     "(software/hermes/energy.py's table entries)"},
                "baseline_note": "the Hermes system model (software/hermes/step.py) on this "
                                 "model, batch 1, decode only; Hermes itself and Hermes-host "
                                 "need ReLU activation traces, which a SwiGLU model lacks"}
