"""LoL-PIM: the decoder's GEMVs and attention on one AiMX module of GDDR6-AiM channels, every PIM
command dispatched on the module from the request's T_cur (LoL-PIM §4.3, §5, §6, Table 5).

**Where things run.**  On the PIM units: every weight GEMV (Q, K, V, output projection, FFN gate,
up and down), QK^T and SV.  On the module's Extra Processing Unit / host (§2, §4.3: the EPU in
the PIM Controller Hub computes the softmax over the token-parallel scores): the softmax, the
sums of a GEMV's partial outputs over its GB chunks, RMSNorm, RoPE, SwiGLU, the residuals, the
embedding and the LM head (host reference, float32; the softmax in float64).

**The units.**  Each PIM command comes out of the DPA dispatcher's golden model
(:func:`pimforge.sim.golden.lolpim.dispatcher.dispatch`): the host keeps one DPA program per
operation (a straight program for a GEMV; for attention, one Dyn-Loop per query head over the
request's 256-token KV chunks, ``LB = ceil(T_cur / 256)``, with Dyn-Modi making the DOT-PROD row
virtual, §5.2), and for each layer-step it starts a run with the configuration buffer's
``t_cur = step.context``, ``layer``, ``request 0``.  Virtual KV rows go through the request's
Va2Pa table, which the host fills lazily, one physical row per new 256-token chunk, from a free
list whose rows are not contiguous (§5.4).  The commands are then executed on the AiM ping-pong
PU's golden model (:mod:`pimforge.sim.golden.lolpim.fast`, bit-exact with
:mod:`pimforge.sim.golden.lolpim.pingpong` and so with the RTL): WR-INP fills the next GB set,
DOT-PROD is one all-bank MAC command over the row it names, RD-OUT drains the accumulation.

**The layout** (AiM's GEMV mapping, :mod:`pimforge.hw.lolpim.perf`, on the module's 16 channels
driven in lockstep, 256 PUs).  A weight matrix's rows are split over the channels (tensor
parallel inside the module, as the system model's ``fc_token_s``); in a channel row ``r`` lies in
bank ``r mod 16``, rows one after another in 2 KB pages.  Inputs enter the GB in 1,024-element
chunks (bf16); each chunk's partial outputs (bf16, AiM's 2-byte output registers) are summed on
the EPU in float32.  The KV cache follows ITPP (§4.3): a 256-token chunk of K puts token ``t`` on
PU ``t mod 256`` (the query broadcast to all channels, the scores token-parallel), K of the 3 KV
heads in columns 0-11 of the chunk's row; V^T is split by the head dimension (PU ``64 g + d``
holds V^T row d of KV head g, 256 tokens in columns 16-31), each channel's GB holding the scores
of its head (three passes: the query heads of a group).  Queries are scaled by 1/sqrt(d_h)
(a power of two, exact) before bf16.

**Timing.**  Per decode step, the PU's exact cycle model
(:func:`~pimforge.hw.lolpim.pingpong_timing.schedule`, GDDR6 banks) on each invocation's
program, ping-pong on (LoL-PIM) and off (AiMX); the
dispatcher's cycle model (:func:`pimforge.hw.lolpim.dispatcher_timing.run_slots`); the dispatcher
runs ahead of the PU (one command a cycle), so only its first-command latency adds.  Per token:
those at the 1 GHz PU clock, plus from the LoL-PIM system model the LM head on the module's
channels (:func:`pimforge.software.lolpim.pim.fc_token_s`) and the host-PIM synchronisation; one
module holds the whole model, so no HUB or node link is crossed.  Beside it, the system model's
own estimate of SmolLM2-135M at batch 1 for LoL-PIM, the AiMX PIM baseline and the GPU baselines
(:mod:`pimforge.software.lolpim.pim`, :mod:`pimforge.software.lolpim.gpu`).
"""
from __future__ import annotations

import numpy as np

from pimforge.base.errors import UserError
from pimforge.hw.lolpim.aim import AIM_CLOCK_MHZ, GDDR6
from pimforge.hw.lolpim.config import DispatcherConfig, pingpong_preset
from pimforge.hw.lolpim.dispatcher_timing import FIRST_COMMAND_LATENCY, run_slots
from pimforge.hw.lolpim.dpa import OPS, STATUS, loop_bound, word
from pimforge.hw.lolpim.pingpong_timing import Tile, schedule
from pimforge.sim.golden.lolpim.dispatcher import dispatch
from pimforge.sim.golden.lolpim import pingpong as golden
from pimforge.sim.golden.lolpim.fast import (
    bf16_bits, bf16_round, lane_major, lane_order, run_values
)
from pimforge.software import workloads as wl
from pimforge.software.llm.ops import LINEARS, Ops
from pimforge.software.lolpim.config import GPU_GDDR, GPU_HBM, HOST_SYNC_S, NODE
from pimforge.software.lolpim.energy import run_energy
from pimforge.software.lolpim.gpu import gpu_batch
from pimforge.software.lolpim.pim import fc_token_s, pim_batch

__all__ = ["LolpimOps", "CHUNK_TOKENS", "KV_BASE", "VERIFY_CHANNELS", "model_spec",
           "GemvLayout", "KvCache", "gemv_program", "attention_program", "commands_to_program",
           "golden_channel"]

CH = NODE.channels_per_module            # 16 channels of one AiMX module (Table 5)
BANKS = NODE.banks                       # 16 PUs per channel
PUS = CH * BANKS                         # 256 PUs driven in lockstep
CHUNK_TOKENS = 256                       # §5.1: a KV chunk of 256 tokens, one row per PU
SHIFT = 8                                # LB = ceil(T_cur / 2**8)
K_COL, V_COL = 0, 16                     # columns of a KV chunk's row: K (3 heads x 4), V^T (16)
KV_BASE = 4096                           # first physical row of the KV region (weights below)
VERIFY_CHANNELS = (0, CH - 1)           # channels ``verify=True`` runs on the golden model


def model_spec(config) -> wl.ModelSpec:
    """The system model's description of a llama model
    (:class:`~pimforge.software.llm.gguf_model.LlamaConfig`)."""
    return wl.ModelSpec(config.name or "llama", config.n_layers, config.d_model, config.n_heads,
                        config.n_kv_heads, config.d_ffn, config.vocab, True, "GGUF metadata",
                        tied_embeddings=True, head_dim_override=config.head_dim)


class GemvLayout:
    """One weight matrix (out, in) in AiM's GEMV mapping over the module's channels: the
    bf16 values lane-major (groups, lanes, PUs, columns) float32
    (:mod:`~pimforge.sim.golden.lolpim.fast`) and the pages they fill."""

    def __init__(self, w, pu, page_elems: int, base: int):
        R, C = w.shape
        L = pu.lanes
        self.R, self.C, self.base, self.L = R, C, base, L
        self.rch = -(-R // CH)                       # rows per channel
        self.G = -(-self.rch // BANKS)
        self.cols_pad = -(-C // L) * L
        self.chunk = min(pu.gb_elems, page_elems)
        self.steps = [min(self.chunk, self.cols_pad - c) // L
                      for c in range(0, self.cols_pad, self.chunk)]
        self.page = page_elems
        self.per_page = page_elems // self.cols_pad if self.cols_pad <= page_elems else 0
        self.ppr = -(-self.cols_pad // page_elems)
        wp = np.zeros((CH * self.G * BANKS, self.cols_pad), np.float32)
        rows = np.arange(R)
        ch, local = rows // self.rch, rows % self.rch
        wp[(ch * self.G + local // BANKS) * BANKS + local % BANKS, :C] = bf16_round(w)
        # (groups, PUs = channel * 16 + bank, columns, lanes), then lane-major
        self.data = lane_major(wp.reshape(CH, self.G, BANKS, self.cols_pad // L, L).transpose(
            1, 0, 2, 3, 4).reshape(self.G, PUS, self.cols_pad // L, L)).transpose(1, 0, 2, 3
                                                                                  ).copy()
        self.pages = (-(-self.G // self.per_page) if self.per_page else self.G * self.ppr)
        r = np.arange(self.G * BANKS)
        ok = (r < self.rch)[None, :] & (np.arange(CH)[:, None] * self.rch + r[None, :] < R)
        self.out_index = np.where(ok, np.arange(CH)[:, None] * self.rch + r[None, :], -1)

    def address(self, c: int, g: int) -> tuple:
        """(row, col) of group ``g``'s data for chunk ``c``."""
        if self.per_page:
            return self.base + g // self.per_page, (g % self.per_page) * self.cols_pad // self.L
        return self.base + g * self.ppr + c * self.chunk // self.page, \
            (c * self.chunk % self.page) // self.L

    def fetch(self, row: int, col: int, steps: int) -> np.ndarray:
        """The (lanes, PUs, steps) columns a DOT-PROD at (row, col) reads."""
        p, L = row - self.base, self.L
        if self.per_page:
            g = p * self.per_page + col * L // self.cols_pad
            e0 = col * L - (g % self.per_page) * self.cols_pad
        else:
            g, e0 = p // self.ppr, (p % self.ppr) * self.page + col * L
        return self.data[g, :, :, e0 // L:e0 // L + steps]

    def outputs(self, drains: np.ndarray) -> np.ndarray:
        """y (R,) float32 from the drains (chunks * groups, PUs) in program order: the EPU sums
        the chunks' partials in float32, chunk after chunk."""
        d = drains.reshape(len(self.steps), self.G, PUS)
        y = d[0]
        for c in range(1, len(self.steps)):
            y = y + d[c]
        # PU = ch * 16 + b of group g holds local row g * 16 + b of channel ch
        y = y.reshape(self.G, CH, BANKS).transpose(1, 0, 2).reshape(CH, self.G * BANKS)
        out = np.zeros(self.R, np.float32)
        ok = self.out_index >= 0
        out[self.out_index[ok]] = y[ok]
        return out


def gemv_program(cfg: DispatcherConfig, mat: GemvLayout) -> tuple:
    """The DPA program of y = W x (``program`` dict, MAC steps per word index): per GB chunk a
    WR-INP (col = the chunk), then per group of 16 rows a DOT-PROD and a RD-OUT."""
    words, steps = [], {}
    for c, n in enumerate(mat.steps):
        words.append(word(cfg, "wr_inp", row=0, col=c))
        for g in range(mat.G):
            row, col = mat.address(c, g)
            steps[len(words)] = n
            words += [word(cfg, "dot_prod", row=row, col=col), word(cfg, "rd_out")]
    return dict(enumerate(words)), steps


def attention_program(cfg: DispatcherConfig, heads: int, group: int, head_dim: int,
                      lanes: int) -> tuple:
    """The DPA program of one layer's attention for a request: per query head h, WR-INP of q_h
    (row = h) and a Dyn-Loop over the KV chunks of {Dyn-Modi (row, coef 1), DOT-PROD over the
    K columns of KV head h // group, RD-OUT}; then per pass j of a group, a Dyn-Loop of
    {Dyn-Modi (col, coef 1), WR-INP of the scores' chunk (row = heads + j), Dyn-Modi (row),
    DOT-PROD over V^T} and one RD-OUT.  Returns (program, MAC steps per word, first SV word)."""
    kcols = head_dim // lanes
    words, steps = [], {}
    for h in range(heads):
        words += [word(cfg, "wr_inp", row=h, col=0), word(cfg, "dyn_loop", le=3, shift=SHIFT),
                  word(cfg, "dyn_modi", target=0, coef=1)]
        steps[len(words)] = kcols
        words += [word(cfg, "dot_prod", row=0, col=K_COL + kcols * (h // group)),
                  word(cfg, "rd_out")]
    sv = len(words)
    for j in range(group):
        words += [word(cfg, "dyn_loop", le=4, shift=SHIFT),
                  word(cfg, "dyn_modi", target=1, coef=1),
                  word(cfg, "wr_inp", row=heads + j, col=0),
                  word(cfg, "dyn_modi", target=0, coef=1)]
        steps[len(words)] = CHUNK_TOKENS // lanes
        words += [word(cfg, "dot_prod", row=0, col=V_COL), word(cfg, "rd_out")]
    return dict(enumerate(words)), steps, sv


def commands_to_program(commands, steps: dict) -> tuple:
    """The PU program of a command stream: (WR-INP commands in order, tiles, DOT-PROD commands
    in order).  A DOT-PROD is one MAC tile of its word's steps; it opens a row when its row
    differs from the previous tile's, releases its GB set when a WR-INP (or the end) comes
    before the next DOT-PROD, and drains when a RD-OUT follows it."""
    loads, tiles, dots = [], [], []
    for c in commands:
        op = c["op"]
        if op == OPS["wr_inp"]:
            loads.append(c)
            if tiles:
                tiles[-1]["release"] = True
        elif op == OPS["dot_prod"]:
            act = not dots or dots[-1]["row"] != c["row"]
            tiles.append({"steps": steps[c["pc"]], "release": False, "drain": False, "act": act})
            dots.append(c)
        elif op == OPS["rd_out"]:
            tiles[-1]["drain"] = True
    if tiles:
        tiles[-1]["release"] = True
    return loads, [Tile(**t) for t in tiles], dots


class KvCache:
    """One request's KV cache in the banks: per layer, each physical row (a 256-token chunk)
    as lane-major (lanes, PUs, 32 columns) bf16 values, and the Va2Pa table the host fills
    lazily."""

    def __init__(self, cfg: DispatcherConfig, layers: int, lanes: int):
        self.cfg, self.layers, self.L = cfg, layers, lanes
        self.reset()

    def reset(self):
        self.rows = [dict() for _ in range(self.layers)]
        self.va2pa, self.count = {}, [0] * self.layers
        # the free list: rows spread over the KV region, not contiguous (Fig. 6d)
        span = (1 << self.cfg.row_bits) - KV_BASE
        self.free = [KV_BASE + (k * 37) % span for k in range(min(span, self.cfg.vrows))]

    def _row(self, layer: int, v: int) -> np.ndarray:
        key = v                                  # request 0: Va2Pa entry request * vrows + v
        if key not in self.va2pa:
            if v >= self.cfg.vrows or not self.free:
                raise UserError(f"lolpim: the context exceeds the Va2Pa table's {self.cfg.vrows}"
                                f" chunks of {CHUNK_TOKENS} tokens")
            self.va2pa[key] = (1, self.free.pop(0))
        prow = self.va2pa[key][1]
        if prow not in self.rows[layer]:
            self.rows[layer][prow] = np.zeros((self.L, PUS, V_COL + CHUNK_TOKENS // self.L),
                                              np.float32)
        return self.rows[layer][prow]

    def write(self, layer: int, k, v):
        """Write the tokens of k, v (Hkv, N, hd) not yet in the banks (bf16)."""
        n = k.shape[1]
        if n < self.count[layer]:
            self.reset()
        hkv, hd = k.shape[0], k.shape[2]
        L, pos = self.L, lane_order(self.L)      # lane l sits at position bitrev(l)
        t0 = self.count[layer]
        while t0 < n:                            # chunk by chunk
            t1 = min(n, (t0 // CHUNK_TOKENS + 1) * CHUNK_TOKENS)
            row = self._row(layer, t0 // CHUNK_TOKENS)
            tl = np.arange(t0, t1) % CHUNK_TOKENS    # K: token t on PU t mod 256
            kt = bf16_round(k[:, t0:t1]).transpose(1, 0, 2).reshape(t1 - t0, -1, L)
            row[:, tl, K_COL:K_COL + hkv * hd // L] = lane_major(kt)
            vt = bf16_round(v[:, t0:t1]).transpose(1, 0, 2).reshape(t1 - t0, -1)
            row[pos[tl % L][:, None], np.arange(hkv * hd)[None, :], (V_COL + tl // L)[:, None]] = vt
            t0 = t1
        self.count[layer] = n

    def fetch(self, layer: int, prow: int, col: int, steps: int) -> np.ndarray:
        return self.rows[layer][prow][:, :, col:col + steps]


def golden_channel(cfg, ch: int, loads, tiles, bank) -> np.ndarray:
    """Channel ``ch``'s drained outputs (n_drains, banks) as bf16 bits from the golden model
    :func:`pimforge.sim.golden.lolpim.pingpong.run_program`, for a lane-major module program
    (the arguments of :func:`~pimforge.sim.golden.lolpim.fast.run_values`)."""
    pos = lane_order(cfg.lanes)
    sl = slice(ch * cfg.banks, (ch + 1) * cfg.banks)

    def conv(x):            # lane-major (lanes, [banks,] steps) -> (steps, [banks,] lanes) bits
        x = np.moveaxis(np.asarray(x)[pos], 0, -1)
        return bf16_bits(np.swapaxes(x[sl], 0, 1) if x.ndim == 3 else x)
    gb = []
    for x in loads:
        if np.asarray(x).ndim == 3:           # a GB per bank: one channel's banks share one
            c = conv(x)
            if not (c == c[:, :1]).all():
                raise ValueError("golden_channel: the banks of a channel load different GBs")
            c = c[:, 0]
        else:
            c = conv(x)
        gb.append(c)
    return golden.run_program(cfg, gb, tiles, [conv(x) for x in bank])


class LolpimOps(Ops):
    """SmolLM2 (any llama GGUF) on LoL-PIM: see the module docstring.  ``verify``: every PU
    program also runs, for the channels :data:`VERIFY_CHANNELS` (``True``) or the channels
    given, on the golden model (:mod:`pimforge.sim.golden.lolpim.pingpong`), and the run
    asserts equal bits."""

    name = "lolpim"

    def __init__(self, backend: str = "golden", rtl_layers=None, rtl_steps=None,
                 pingpong: bool = True, verify=False):
        if backend != "golden":
            raise UserError(f"--backend {backend}: lolpim runs on the golden models only; "
                            "the RTL backend is supported on pam, hilos")
        self.pu = pingpong_preset("aim" if pingpong else "aim_serial")
        self.serial = pingpong_preset("aim_serial")
        self.disp = DispatcherConfig()
        self.page = GDDR6.page_elems
        self.verify = VERIFY_CHANNELS if verify is True else tuple(verify or ())
        self._cycles = {}

    # ------------------------------------------------------------------ setup
    def prepare(self, model) -> None:
        """Lay the weights out in the banks (once per model) and start a new request: an
        empty KV cache and Va2Pa table (every decoder run prepares its ops)."""
        if getattr(self, "model", None) is model:
            self.kv.reset()
            return
        super().prepare(model)
        c = model.config
        if c.head_dim % self.pu.lanes or c.n_kv_heads * c.head_dim > PUS or \
                c.n_kv_heads * c.head_dim // self.pu.lanes > V_COL - K_COL:
            raise UserError(f"lolpim: the KV layout needs head_dim a multiple of "
                            f"{self.pu.lanes} and n_kv_heads * head_dim <= {PUS}")
        self.cfg = c
        self.mats = []
        for w in model.layers:
            base, mats = 0, {}
            for name in LINEARS:
                mats[name] = GemvLayout(w[name], self.pu, self.page, base)
                base += mats[name].pages
            if base > KV_BASE:
                raise UserError(f"lolpim: a layer's weights need {base} rows per bank, the "
                                f"weight region holds {KV_BASE}")
            self.mats.append(mats)
        self.programs = {n: gemv_program(self.disp, m) for n, m in self.mats[0].items()}
        self.attn = attention_program(self.disp, c.n_heads, c.group, c.head_dim, self.pu.lanes)
        self.kv = KvCache(self.disp, c.n_layers, self.pu.lanes)

    # ------------------------------------------------------------------ the dispatcher
    def run_dispatcher(self, step, layer: int, program: dict) -> list:
        """The PIM commands of one run of ``program`` for this layer-step (the dispatcher's
        golden model, T_cur = the step's context); on a decode step, its cycles."""
        run = {"t_cur": step.context, "request": 0, "layer": layer, "layers": layer + 1,
               "length": len(program)}
        out = dispatch(self.disp, program, run, self.kv.va2pa)
        if out.code != STATUS["ok"]:
            code = {v: k for k, v in STATUS.items()}[out.code]
            raise RuntimeError(f"lolpim_dispatcher: run stopped with {code} at word "
                               f"{out.index}")
        if step.decode:
            self._add_cycles(step, program, run)
        return out.commands

    def _add_cycles(self, step, program, run):
        key = ("disp", id(program), loop_bound(run["t_cur"], SHIFT))
        if key not in self._cycles:
            self._cycles[key] = run_slots(self.disp, program, run)[0]
        step.add_cycles("lolpim_dispatcher", self._cycles[key])
        step.add_cycles("dispatcher_latency", FIRST_COMMAND_LATENCY)

    def _pu_cycles(self, step, key, loads, tiles):
        if not step.decode:
            return
        if key not in self._cycles:
            beats = [n for n in loads]
            self._cycles[key] = (schedule(self.pu, beats, tiles, GDDR6)["cycles"],
                                 schedule(self.serial, beats, tiles, GDDR6)["cycles"])
        on, off = self._cycles[key]
        step.add_cycles("lolpim_pingpong", on)
        step.add_cycles("aimx_serial", off)

    def _run(self, what: str, loads, tiles, bank) -> np.ndarray:
        out, ok = run_values(self.pu.partials, loads, tiles, bank)
        if not ok:
            raise RuntimeError(f"lolpim: {what} overflowed fp32 on the PU")
        if self.verify:
            for ch in self.verify:
                ref = golden_channel(self.pu, ch, loads, tiles, bank)
                got = bf16_bits(out[:, ch * BANKS:(ch + 1) * BANKS])
                if not np.array_equal(ref, got):
                    raise AssertionError(f"lolpim: {what}: channel {ch} differs from the "
                                         "golden model")
        return out

    # ------------------------------------------------------------------ the operations
    def linear(self, step, layer: int, name: str, w, x):
        mat = self.mats[layer][name]
        program, steps = self.programs[name]
        cmds = self.run_dispatcher(step, layer, program)
        wr, tiles, dots = commands_to_program(cmds, steps)
        xp = np.zeros(mat.cols_pad, np.float32)
        xp[:mat.C] = bf16_round(np.asarray(x, np.float32))
        xl = lane_major(xp.reshape(-1, mat.L))
        s0 = mat.chunk // mat.L
        loads = [xl[:, c["col"] * s0:c["col"] * s0 + mat.steps[c["col"]]] for c in wr]
        bank = [mat.fetch(d["row"], d["col"], t.steps) for d, t in zip(dots, tiles)]
        out = self._run(f"{name} of layer {layer}", loads, tiles, bank)
        self._pu_cycles(step, ("fc", name), [x.shape[-1] for x in loads], tiles)
        return mat.outputs(out)

    def attention(self, step, layer: int, q, k, v, scale: float):
        c, L = self.cfg, self.pu.lanes
        n = k.shape[1]
        self.kv.write(layer, k, v)
        program, steps, sv = self.attn
        cmds = self.run_dispatcher(step, layer, program)
        qk = [x for x in cmds if x["pc"] < sv]
        svc = [x for x in cmds if x["pc"] >= sv]
        # QK^T: the scaled query (a power of two: exact), broadcast to every channel's GB
        qs = bf16_round(np.asarray(q, np.float32) * np.float32(scale))
        wr, tiles, dots = commands_to_program(qk, steps)
        loads = [lane_major(qs[x["row"]].reshape(-1, L)) for x in wr]
        bank = [self.kv.fetch(layer, d["row"], d["col"], t.steps) for d, t in zip(dots, tiles)]
        s = self._run(f"QK^T of layer {layer}", loads, tiles, bank)
        lb = loop_bound(n, SHIFT)
        s = s.reshape(c.n_heads, lb * CHUNK_TOKENS)[:, :n].astype(np.float64)
        self._pu_cycles(step, ("qk", lb), [x.shape[-1] for x in loads], tiles)
        # the EPU's softmax over the token-parallel scores (float64), rounded to bf16 for the GB
        p = np.exp(s - s.max(axis=1, keepdims=True))
        p = bf16_round((p / p.sum(axis=1, keepdims=True)).astype(np.float32))
        pp = np.zeros((c.n_heads, lb * CHUNK_TOKENS), np.float32)
        pp[:, :n] = p
        # SV: pass j loads into channel ch (PUs of KV head g = PU // head_dim) query head
        # g * group + j's scores of chunk col
        wr, tiles, dots = commands_to_program(svc, steps)
        pu_head = np.arange(PUS) // c.head_dim
        live = pu_head < c.n_kv_heads
        loads = []
        for x in wr:
            j, ck = x["row"] - c.n_heads, x["col"]
            chunk = pp[np.minimum(pu_head, c.n_kv_heads - 1) * c.group + j,
                       ck * CHUNK_TOKENS:(ck + 1) * CHUNK_TOKENS] * live[:, None]
            loads.append(lane_major(chunk.reshape(PUS, -1, L)))
        bank = [self.kv.fetch(layer, d["row"], d["col"], t.steps) for d, t in zip(dots, tiles)]
        o = self._run(f"SV of layer {layer}", loads, tiles, bank)
        self._pu_cycles(step, ("sv", lb), [x.shape[-1] for x in loads], tiles)
        # drain j: PU g * head_dim + d holds output d of query head g * group + j
        o = o[:, :c.n_kv_heads * c.head_dim].reshape(c.group, c.n_kv_heads, c.head_dim)
        return o.transpose(1, 0, 2).reshape(c.n_heads, c.head_dim).astype(np.float32)

    # ------------------------------------------------------------------ reports
    def describe(self) -> dict:
        return {
            "lolpim_pingpong (AiM PU golden, bf16 products, fp32 tree and partials, bf16 out)":
                "attn_q/k/v, attn_output, ffn_gate/up/down GEMVs; QK^T and SV (LoL-PIM §4.3, §6)",
            "lolpim_dispatcher (DPA golden)":
                "every PIM command, from T_cur: Dyn-Loop over 256-token KV chunks, Dyn-Modi "
                "rows through the request's lazily filled Va2Pa table (§5)",
            "EPU / host": "softmax (float64), chunk partial sums (float32), RMSNorm, RoPE, "
                          "SwiGLU, residuals, embedding, LM head",
        }

    def timing(self, steps: list) -> dict:
        """Per-token seconds of the decode steps: the units' cycles at the 1 GHz PU clock plus
        the system model's LM head and host sync; and the system model's estimate for LoL-PIM,
        AiMX and the GPU baselines at batch 1 and the same context."""
        dec = [s for s in steps if s.decode and s.cycles]
        if not dec:
            return {}
        c = self.cfg
        m = model_spec(c)
        clock = AIM_CLOCK_MHZ * 1e6
        cyc = {u: float(np.mean([s.cycles.get(u, 0) for s in dec]))
               for u in ("lolpim_pingpong", "aimx_serial", "lolpim_dispatcher",
                         "dispatcher_latency")}
        _, lm_on = fc_token_s(m, 1, True)
        _, lm_off = fc_token_s(m, 1, False)
        lat = cyc["dispatcher_latency"] / clock
        on = cyc["lolpim_pingpong"] / clock + lat + lm_on + HOST_SYNC_S
        off = cyc["aimx_serial"] / clock + lat + lm_off + HOST_SYNC_S
        ctx = np.array([int(np.mean([s.context for s in dec]))])
        model = {
            "LoL-PIM(123)": pim_batch(m, ctx, 1, 1, "itpp", True, name="LoL-PIM(123)"),
            "LoL-PIM(1)": pim_batch(m, ctx, 1, 1, "itpp", False, name="LoL-PIM(1)"),
            "PIM (AiMX)": pim_batch(m, ctx, 1, NODE.modules, "hfa", False, name="PIM"),
            "GPU-HBM": gpu_batch(GPU_HBM, m, ctx, 1, 1, name="GPU-HBM"),
            "GPU-GDDR": gpu_batch(GPU_GDDR, m, ctx, 1, 1, name="GPU-GDDR"),
        }
        return {
            "clock_mhz": AIM_CLOCK_MHZ,
            "cycles_per_token": cyc,
            "energy": run_energy(m, model, on),
            "seconds_per_token": on,
            "tokens_per_s": 1.0 / on,
            "breakdown_s": {"PU (lolpim_pingpong, ping-pong)": cyc["lolpim_pingpong"] / clock,
                            "dispatcher first-command latency": lat,
                            "LM head (system model)": lm_on, "host sync (system model)":
                                HOST_SYNC_S},
            "aimx_serial_units": {"seconds_per_token": off, "tokens_per_s": 1.0 / off},
            "context": int(ctx[0]),
            "system_model_tokens_per_s": {k: r.tokens_per_s for k, r in model.items()},
            "baselines": {"AiMX, no ping-pong (units)": 1.0 / off,
                          **{k: model[k].tokens_per_s for k in ("PIM (AiMX)", "GPU-HBM",
                                                                "GPU-GDDR")}},
            "modelled": "one AiMX module (16 GDDR6-AiM channels in lockstep, 256 PUs) holds "
                        "the model; PU cycles from the exact cycle model on each invocation's "
                        "program; the dispatcher issues ahead of the PU (its first-command "
                        "latency counted); softmax on the EPU not timed (§4.3: overlapped); "
                        "LM head and host sync from the LoL-PIM system model; baselines from "
                        "the system model at batch 1",
        }
