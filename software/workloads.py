"""Workloads of the system model: the LLMs the papers evaluate and request-length generators for
their datasets.

Every number carries its source next to it.  ``PAM`` is the PAM paper (MICRO'25), ``HILOS`` the
HILOS paper (ASPLOS'26); a model's public config (its model card) is named where the papers do
not list the figure.  Values the papers do not give are marked ``assumed`` and are listed by
:func:`assumptions` (and in the ``reproduce`` reports).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimforge.base.errors import UserError

__all__ = ["ModelSpec", "MODELS", "Dataset", "DATASETS", "get_model", "get_dataset", "assumptions",
           "BYTES_FP16"]

BYTES_FP16 = 2   # PAM §7.1 and HILOS §6.1: weights and KV cache in 16-bit floating point


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer.

    Members
    -------
    layers, hidden, heads, kv_heads, ffn : as in the papers' tables.
    head_dim : ``hidden / heads`` unless the model says otherwise.
    vocab : vocabulary size (embedding and LM head).
    gated_ffn : three FFN matrices (SwiGLU) instead of two.
    experts, active_experts, moe_every : mixture of experts (``moe_every`` = 2: every other layer).
    tied_embeddings : the LM head shares the embedding matrix.
    source : where the figures come from.
    """

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    gated_ffn: bool
    source: str
    experts: int = 1
    active_experts: int = 1
    moe_every: int = 1
    tied_embeddings: bool = False
    head_dim_override: int = 0

    @property
    def head_dim(self) -> int:
        return self.head_dim_override or self.hidden // self.heads

    @property
    def d_group(self) -> int:
        """Query heads per KV head (GQA group size; 1 = multi-head attention)."""
        return self.heads // self.kv_heads

    @property
    def attn_params(self) -> int:
        """Q, K, V and output projections of one layer."""
        q = self.hidden * self.heads * self.head_dim
        kv = 2 * self.hidden * self.kv_heads * self.head_dim
        return 2 * q + kv

    @property
    def ffn_matrix_params(self) -> int:
        """One expert's FFN."""
        return (3 if self.gated_ffn else 2) * self.hidden * self.ffn

    def _moe_layers(self) -> int:
        return self.layers // self.moe_every if self.experts > 1 else 0

    @property
    def params(self) -> int:
        """All weights (every expert)."""
        moe = self._moe_layers()
        dense = self.layers - moe
        emb = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return (self.layers * self.attn_params + dense * self.ffn_matrix_params
                + moe * self.experts * self.ffn_matrix_params + emb)

    @property
    def active_params(self) -> int:
        """Weights one token touches (active experts only)."""
        moe = self._moe_layers()
        dense = self.layers - moe
        emb = self.vocab * self.hidden
        return (self.layers * self.attn_params + dense * self.ffn_matrix_params
                + moe * self.active_experts * self.ffn_matrix_params + emb)

    @property
    def weight_bytes(self) -> int:
        return self.params * BYTES_FP16

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of one token over all layers (fp16)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * BYTES_FP16

    @property
    def x_bytes_per_token(self) -> int:
        """HILOS X-cache: the pre-projection activation of one token over all layers (fp16)."""
        return self.layers * self.hidden * BYTES_FP16

    def decode_flops(self) -> float:
        """FLOPs of the weight GEMMs for one token (2 per multiply-accumulate)."""
        return 2.0 * self.active_params

    def attention_flops(self, context: float) -> float:
        """FLOPs of attention over ``context`` tokens for one token: QK^T and S.V, every
        query head and layer (2 per multiply-accumulate)."""
        return 4.0 * self.layers * self.heads * self.head_dim * context


_OPT_SRC = "HILOS Table 2; OPT (Zhang et al., 2022) vocabulary 50,272, two FFN matrices"
_HERMES = "Hermes §V-A workload; "
_QWEN = ("LoL-PIM Table 1 (layers, heads, d_h 128, SwiGLU, no GQA: KV heads = heads); "
         "Qwen1.5 model card (Bai et al., 2023) for ")
MODELS = {m.name: m for m in (
    ModelSpec("OPT-13B", 40, 5120, 40, 40, 20480, 50272, False, _HERMES + "OPT (Zhang et al., "
              "2022) Table 1: 40 layers, hidden 5,120, 40 heads, FFN 4 x hidden; vocabulary "
              "50,272", tied_embeddings=True),
    ModelSpec("LLaMA2-13B", 40, 5120, 40, 40, 13824, 32000, True, _HERMES + "LLaMA 2 model "
              "card (Touvron et al., 2023): 40 layers, hidden 5,120, 40 heads (MHA), FFN 13,824, "
              "vocabulary 32,000, gated FFN (ReLU in the SparseLLM ReluLLaMA variant)"),
    ModelSpec("LLaMA2-70B", 80, 8192, 64, 8, 28672, 32000, True, _HERMES + "LLaMA 2 model card: "
              "80 layers, hidden 8,192, 64 heads, 8 KV heads (GQA), FFN 28,672, vocabulary "
              "32,000, gated FFN"),
    ModelSpec("Falcon-40B", 60, 8192, 128, 8, 32768, 65024, False, _HERMES + "Falcon-40B "
              "model card (Almazrouei et al., 2023): 60 layers, hidden 8,192, 128 heads of 64, "
              "8 KV groups, FFN 4 x hidden (GELU; ReLU in SparseLLM's ReluFalcon), vocabulary "
              "65,024"),
    ModelSpec("OPT-30B", 48, 7168, 56, 56, 28672, 50272, False, _OPT_SRC.replace(
        "HILOS Table 2", "HILOS Table 2 (hidden 7,168, 64 heads in the table; OPT-30B's model "
        "card has 56 heads of 128)"), tied_embeddings=True),
    ModelSpec("OPT-66B", 64, 9216, 72, 72, 36864, 50272, False, _OPT_SRC, tied_embeddings=True),
    ModelSpec("OPT-175B", 96, 12288, 96, 96, 49152, 50272, False,
              _OPT_SRC + "; PAM §7.1", tied_embeddings=True),
    ModelSpec("LLaMA-65B", 80, 8192, 64, 64, 22016, 32000, True, "PAPI §7.1; LLaMA (Touvron "
              "et al., 2023) Table 2: 80 layers, hidden 8,192, 64 heads; model card: FFN "
              "22,016 (SwiGLU), vocabulary 32,000"),
    ModelSpec("GPT-3-66B", 64, 9216, 72, 72, 36864, 50272, False, "PAPI §7.1 ('GPT-3 66B "
              "[32]', [32] = OPT): OPT-66B's shape, " + _OPT_SRC, tied_embeddings=True),
    ModelSpec("GPT-3-175B", 96, 12288, 96, 96, 49152, 50257, False, "PAPI §5.1 (h = 12,288) "
              "and §7.1; GPT-3 (Brown et al., 2020) Table 2.1: 96 layers, 96 heads of 128, "
              "FFN 4 x hidden; vocabulary 50,257", tied_embeddings=True),
    ModelSpec("Qwen2.5-32B", 64, 5120, 40, 8, 27648, 152064, True,
              "HILOS Table 2; PAM §7.1; Qwen2.5 model card: vocabulary 152,064, SwiGLU"),
    ModelSpec("LLaMA3-70B", 80, 8192, 64, 8, 28672, 128256, True,
              "PAM §7.1; LLaMA 3 model card (Dubey et al., 2024): 80 layers, hidden 8,192, 64 "
              "heads, 8 KV heads, FFN 28,672, vocabulary 128,256, SwiGLU"),
    ModelSpec("Mixtral-8x7B", 32, 4096, 32, 8, 14336, 32000, True,
              "HILOS Table 2 (two active experts, §6.1); Mixtral model card: vocabulary 32,000",
              experts=8, active_experts=2),
    ModelSpec("GLaM-143B", 32, 4096, 32, 32, 16384, 256000, False,
              "HILOS Table 2 (two active experts, §6.1); assumed from GLaM (Du et al., 2022): "
              "MoE every other layer, vocabulary 256K, which gives ~143B parameters",
              experts=64, active_experts=2, moe_every=2),
    ModelSpec("Qwen1.5-1.8B", 24, 2048, 16, 16, 5504, 151936, True, _QWEN + "1.8B: hidden "
              "2,048, FFN 5,504, vocabulary 151,936 (Table 1 lists d_h 64; the model card's "
              "2,048 / 16 heads = 128 is used)"),
    ModelSpec("Qwen1.5-7B", 32, 4096, 32, 32, 11008, 151936, True, _QWEN + "7B: hidden 4,096, "
              "FFN 11,008, vocabulary 151,936"),
    ModelSpec("Qwen1.5-14B", 40, 5120, 40, 40, 13696, 152064, True, _QWEN + "14B: hidden "
              "5,120, FFN 13,696, vocabulary 152,064"),
    ModelSpec("Qwen1.5-72B", 80, 8192, 64, 64, 24576, 152064, True, _QWEN + "72B: hidden "
              "8,192, FFN 24,576, vocabulary 152,064"),
    ModelSpec("SmolLM2-135M", 30, 576, 9, 3, 1536, 49152, True, "the model `pimforge run llm` "
              "decodes (its GGUF's llama.* metadata): 30 layers, hidden 576, 9 heads of 64, 3 KV "
              "heads, SwiGLU FFN 1,536, vocabulary 49,152, tied embeddings",
              tied_embeddings=True),
)}


@dataclass(frozen=True)
class Dataset:
    """Request lengths of one dataset.

    ``kind`` is ``lognormal`` (online dialogue: mean total length ``mean_total``, split into
    input and output in the ratio ``mean_in : mean_out``) or ``uniform`` (offline: total length
    uniform in ``lo..hi``, ``out_frac`` of it generated) or ``fixed`` (every request ``mean_in``
    in, ``mean_out`` out).
    """

    name: str
    kind: str
    mean_in: float
    mean_out: float
    source: str
    mean_total: float = 0.0
    sigma: float = 0.0
    lo: int = 0
    hi: int = 0
    out_frac: float = 0.0

    def sample(self, n: int, seed: int = 0) -> tuple:
        """``n`` requests: (input lengths, output lengths) as int64 arrays, deterministic for a
        seed."""
        rng = np.random.default_rng(seed)
        if self.kind == "fixed":
            return (np.full(n, int(self.mean_in), np.int64), np.full(n, int(self.mean_out), np.int64))
        if self.kind == "lognormal":
            mu = np.log(self.mean_total) - self.sigma ** 2 / 2     # E[total] = mean_total
            total = rng.lognormal(mu, self.sigma, n).clip(16, 32768)
            frac_out = self.mean_out / (self.mean_in + self.mean_out)
        else:
            total = rng.uniform(self.lo, self.hi, n)
            frac_out = self.out_frac
        out = np.maximum(1, np.rint(total * frac_out)).astype(np.int64)
        inp = np.maximum(1, np.rint(total).astype(np.int64) - out)
        return inp, out


_ONLINE = ("PAM §7.1: the online dialogue sets average 183 input and 299 output tokens")
_SIGMA = ("assumed lognormal spread sigma = 0.8 (the papers give means only)")
DATASETS = {d.name: d for d in (
    Dataset("ShareGPT", "lognormal", 183, 299, f"PAM §7.2: 534-token average context; {_ONLINE}; "
            f"{_SIGMA}", mean_total=534, sigma=0.8),
    Dataset("WildChat", "lognormal", 183, 299, f"PAM §7.2: 738-token average context; {_ONLINE}; "
            f"{_SIGMA}", mean_total=738, sigma=0.8),
    Dataset("HumanEval", "lognormal", 183, 299, f"{_ONLINE}; assumed: the set's own average is "
            f"not given, so the overall 183 + 299 = 482; {_SIGMA}", mean_total=482, sigma=0.8),
    Dataset("Arxiv_sum", "uniform", 0, 0, "PAM §7.1: offline sets run 1,500-8,000 tokens; assumed "
            "uniform, 10% of it generated (a summary)", lo=1500, hi=8000, out_frac=0.1),
    Dataset("Write_doc", "uniform", 0, 0, "PAM §7.1: offline sets run 1,500-8,000 tokens; assumed "
            "uniform, 50% of it generated (document writing)", lo=1500, hi=8000, out_frac=0.5),
)}


def get_model(name: str) -> ModelSpec:
    if name not in MODELS:
        raise UserError(f"unknown model '{name}'; allowed: {', '.join(MODELS)}")
    return MODELS[name]


def get_dataset(name: str) -> Dataset:
    if name not in DATASETS:
        raise UserError(f"unknown dataset '{name}'; allowed: {', '.join(DATASETS)}")
    return DATASETS[name]


def assumptions() -> list:
    """(parameter, value, why) for the workload figures the papers do not give."""
    return [
        ("request length distribution (online sets)", "lognormal, sigma 0.8",
         "PAM gives only the means (183/299 tokens; contexts 534 and 738)"),
        ("HumanEval mean length", "482 tokens (183 in + 299 out)",
         "PAM gives no per-set figure for HumanEval"),
        ("input/output split of ShareGPT and WildChat", "183 : 299 of the mean total",
         "PAM gives the split only for the online sets together"),
        ("offline length distribution", "uniform 1,500-8,000 tokens",
         "PAM gives the range only"),
        ("offline output share", "Arxiv_sum 10%, Write_doc 50%",
         "PAM does not say how many tokens the offline tasks generate"),
        ("GLaM-143B layout", "MoE every other layer, vocabulary 256K",
         "HILOS Table 2 lists 32 layers and 64 experts only; GLaM (Du et al., 2022)"),
        ("OPT-30B heads", "56 heads of 128 (model card)",
         "HILOS Table 2 lists 64 heads, which does not divide hidden 7,168 into 128-wide heads"),
    ]
