"""Decoding: the llama forward pass one token at a time, with a system's
:class:`~pimforge.software.llm.ops.Ops`.

The prompt is prefilled on the host (the reference :class:`~pimforge.software.llm.ops.Ops`), as
every one of the papers leaves prefill to the GPU; that pass also yields the first generated
token.  Each later token is a decode step (``Step.decode``) through the system's operations,
which read the KV cache (the prompt's rows from the host, then the system's own).  The embedding lookup, the RMSNorms, RoPE,
the residual adds and the output projection (tied to the embedding) run on the host in float32.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pimforge.software.llm.ops import Ops, Step

__all__ = ["rope_tables", "rope", "rmsnorm", "Trace", "Decoder", "generate"]


def rope_tables(head_dim: int, base: float, positions: int):
    """cos and sin (positions, head_dim / 2), float32: pair i turns by ``pos * base^(-2i/hd)``."""
    inv = base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    ang = np.arange(positions, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotate the interleaved pairs (0, 1), (2, 3), ... of each head of ``x`` (heads, hd) by one
    position's ``cos``/``sin`` (hd / 2,): the layout llama.cpp's converter gives Q and K rows."""
    a, b = x[:, 0::2], x[:, 1::2]
    out = np.empty_like(x)
    out[:, 0::2] = a * cos - b * sin
    out[:, 1::2] = a * sin + b * cos
    return out


def rmsnorm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return (x / np.sqrt(np.mean(x * x, dtype=np.float32) + np.float32(eps)) * w).astype(np.float32)


@dataclass
class Trace:
    """One run: the ids fed, the chosen ids, and per generated step the logits (float32) and each
    layer's output (the residual stream, (layers, d))."""
    prompt_ids: list
    generated_ids: list = field(default_factory=list)
    logits: list = field(default_factory=list)
    layer_out: list = field(default_factory=list)
    steps: list = field(default_factory=list)      # the decode Steps, with their cycles


class Decoder:
    """The model and a system's operations, with the KV cache of one sequence."""

    def __init__(self, model, ops: Ops | None = None, max_positions: int = 4096):
        self.model, self.ops, self.host = model, ops or Ops(), Ops()
        c = model.config
        self.cos, self.sin = rope_tables(c.head_dim, c.rope_base, max_positions)
        self.scale = float(1.0 / np.sqrt(c.head_dim))
        self.k = [np.zeros((c.n_kv_heads, 0, c.head_dim), np.float32) for _ in range(c.n_layers)]
        self.v = [np.zeros((c.n_kv_heads, 0, c.head_dim), np.float32) for _ in range(c.n_layers)]
        self.pos = 0
        self.ops.prepare(model)
        self.host.prepare(model)

    def step(self, token: int, decode: bool):
        """Feed one token; returns the logits (vocab,), the layers' outputs and the Step.  A
        decode step runs on the system's operations, a prefill step on the host's."""
        m, c = self.model, self.model.config
        ops = self.ops if decode else self.host
        st = Step(self.pos, decode)
        h = m.embed[int(token)].astype(np.float32)
        outs = np.empty((c.n_layers, c.d_model), np.float32)
        cos, sin = self.cos[self.pos], self.sin[self.pos]
        for i, w in enumerate(m.layers):
            xn = rmsnorm(h, w["attn_norm"], c.rms_eps)
            q = ops.linear(st, i, "attn_q", w["attn_q"], xn).reshape(c.n_heads, c.head_dim)
            k = ops.linear(st, i, "attn_k", w["attn_k"], xn).reshape(c.n_kv_heads, c.head_dim)
            v = ops.linear(st, i, "attn_v", w["attn_v"], xn).reshape(c.n_kv_heads, c.head_dim)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            self.k[i] = np.concatenate([self.k[i], k[:, None, :]], axis=1)
            self.v[i] = np.concatenate([self.v[i], v[:, None, :]], axis=1)
            a = ops.attention(st, i, q, self.k[i], self.v[i], self.scale).reshape(-1)
            h = (h + ops.linear(st, i, "attn_output", w["attn_output"], a)).astype(np.float32)
            xn = rmsnorm(h, w["ffn_norm"], c.rms_eps)
            g = ops.linear(st, i, "ffn_gate", w["ffn_gate"], xn)
            u = ops.linear(st, i, "ffn_up", w["ffn_up"], xn)
            h = (h + ops.linear(st, i, "ffn_down", w["ffn_down"], ops.swiglu(st, i, g, u))
                 ).astype(np.float32)
            outs[i] = h
        logits = (m.lm_head @ rmsnorm(h, m.output_norm, c.rms_eps)).astype(np.float32)
        self.pos += 1
        return logits, outs, st


def generate(model, ops: Ops | None, prompt_ids, n_tokens: int, teacher=None, eos=None,
             progress=None) -> Trace:
    """Greedy decoding of ``n_tokens`` after ``prompt_ids``.  With ``teacher`` (a list of ids),
    step t feeds ``teacher[t - 1]`` instead of the previous choice (teacher forcing), and
    ``generated_ids`` are each step's top-1.  Without a teacher, ``eos`` ends the run early.
    ``progress(done, total)`` is called after each generated token."""
    dec = Decoder(model, ops, max_positions=len(prompt_ids) + n_tokens + 1)
    tr = Trace(prompt_ids=list(prompt_ids))
    for t in prompt_ids[:-1]:
        dec.step(t, decode=False)
    token = prompt_ids[-1]
    for n in range(n_tokens):
        logits, outs, st = dec.step(token, decode=n > 0)
        top = int(np.argmax(logits))
        tr.generated_ids.append(top)
        tr.logits.append(logits)
        tr.layer_out.append(outs)
        tr.steps.append(st)
        if progress:
            progress(n + 1, n_tokens)
        if teacher is not None:
            if n < len(teacher):
                token = int(teacher[n])
        else:
            if eos is not None and top == eos:
                break
            token = top
    return tr
