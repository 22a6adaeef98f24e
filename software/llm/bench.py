"""``pimforge bench --only llm``: wall time of SmolLM2-135M on this machine, on the host
reference and on each system's golden models, and of one RTL layer-step.  Wall-clock figures
live here, in the benchmark's JSON, never in tests."""
from __future__ import annotations

import time

import numpy as np

from pimforge.software.llm import systems
from pimforge.software.llm.forward import generate
from pimforge.software.llm.gguf_model import load_model
from pimforge.software.llm.ops import Ops
from pimforge.software.llm.tokenizer import build_tokenizer

__all__ = ["LLM_BENCH_PROMPT", "LLM_BENCH_TOKENS", "LLM_AIMS", "measure"]


# a paragraph whose tokens, with the chat template, bring the decode steps' context up to 128
LLM_BENCH_PROMPT = (
    "Processing-in-memory puts arithmetic next to the memory arrays, so that the weights and the "
    "key-value cache of a large language model need not cross a narrow bus for every generated "
    "token. Explain, in a few sentences, why decoding one token at a time is limited by memory "
    "bandwidth rather than by arithmetic, and what that means for the design of an accelerator "
    "that serves long contexts. Mention the key-value cache and the weights.")
LLM_BENCH_TOKENS = 9          # 8 decode steps after the prefill's token
LLM_AIMS = {"reference_tokens_per_s": 10.0, "golden_tokens_per_s": 1.0, "rtl_layer_step_s": 60.0}


def _timed_generate(model, ops, ids, n):
    """generate() with each token's wall time (from the progress callback)."""
    marks = [time.perf_counter()]
    tr = generate(model, ops, ids, n,
                              progress=lambda *_: marks.append(time.perf_counter()))
    return tr, np.diff(marks)


def measure(progress=print) -> dict:
    """Wall time a token of SmolLM2-135M (30 layers) on the host reference and on each system's
    golden models at a context of about 128 tokens, and one RTL layer-step of PAM and HILOS,
    against the aims in :data:`LLM_AIMS`; the benchmark's report (``pimforge bench --only
    llm`` adds the machine and writes it)."""
    model = load_model()
    tok = build_tokenizer(model.metadata)
    ids = tok.encode(tok.chat(LLM_BENCH_PROMPT))
    results = {}
    progress(f"reference, {len(ids)} prompt tokens")
    _, dt = _timed_generate(model, Ops(), ids, LLM_BENCH_TOKENS)
    results["reference"] = {"tokens_per_s": round(1 / float(np.mean(dt[1:])), 2),
                            "prefill_s": round(float(dt[0]), 2),
                            "aim_tokens_per_s": LLM_AIMS["reference_tokens_per_s"]}
    for name in systems.SYSTEM_NAMES:
        progress(f"{name} golden")
        _, dt = _timed_generate(model, systems.make_ops(name), ids, LLM_BENCH_TOKENS)
        results[name] = {"tokens_per_s": round(1 / float(np.mean(dt[1:])), 3),
                         "s_per_token": round(float(np.mean(dt[1:])), 3),
                         "context": len(ids) + LLM_BENCH_TOKENS,
                         "aim_tokens_per_s": LLM_AIMS["golden_tokens_per_s"]}
    small = load_model(n_layers=1)
    for name in systems.RTL_SYSTEMS:
        progress(f"{name}: one RTL layer-step")
        ops = systems.make_ops(name, backend="rtl", rtl_layers=[0], rtl_steps=1)
        _, dt = _timed_generate(small, ops, ids, 2)
        results[f"{name}_rtl"] = {"layer_step_s": round(float(dt[1]), 2),
                                  "aim_s": LLM_AIMS["rtl_layer_step_s"]}
    return {"benchmark": "SmolLM2-135M on the units", "prompt_tokens": len(ids),
            "results": results}
