"""Python API: everything the CLI does, as functions.

>>> from pimforge import api
>>> cfg = api.config("fp_add", preset="fp32", overrides={"pipeline_depth": 3})
>>> api.generate("fp_add", cfg, "build/fp_add")          # writes fp_add.v and fp_add.json
>>> result = api.run_bench("fp_add", cfg, seed=1)          # cocotb + Verilator, checked vs golden
>>> result.passed, result.phases[0].cycles
>>> res = api.pam_attention(q, k, v, split=(2, 1, 1), acc="fp32")   # PAM Alg. 1, golden model
>>> res.o, res.heads[0].lse, res.max_rel_err
>>> res = api.hilos_attention(q, k, v, mask=m, precomputed=p)       # HILOS kernel, golden model
>>> res = api.hermes_gemv(w, x, active=idx, mode="rows")            # Hermes GEMV engine
>>> res.o, res.rel_err
>>> res = api.pam_migrate([(5, 3, 7), (9, 0, 1)], api.config("pam_interface"))  # PAM interface
>>> res.o, res.cycles, res.bandwidth_fraction
>>> rep = api.run_llm("The capital of France is", systems=("pam", "hilos"), tokens=8)
>>> rep["systems"]["pam"]["text"], rep["systems"]["pam"]["timing"]   # SmolLM2-135M on PAM
"""
from __future__ import annotations

import json

import numpy as np

from pimforge.base.config import config_layers, config_line
from pimforge.base.files import check_out_dir, write_outputs
from pimforge.hw.core.elaborate import elaborate as _elaborate
from pimforge.registry import get_unit, units
from pimforge.sim.harness.runner import BenchResult, run_unit
from pimforge.software.hermes.gemv import HermesGemvResult, hermes_gemv  # Hermes GEMV engine
from pimforge.software.hilos.attention import HilosAttentionResult, hilos_attention  # HILOS kernel
from pimforge.software.llm import run as _llm
from pimforge.software.pam.attention import PamAttentionResult, pam_attention  # PAM Alg. 1 flow
from pimforge.software.pam.migrate import MigrateResult, pam_migrate  # PAM interface migration

__all__ = ["units", "config", "generate", "elaborate", "run_bench", "BenchResult", "pam_attention",
           "PamAttentionResult", "hilos_attention", "HilosAttentionResult", "hermes_gemv",
           "HermesGemvResult", "pam_migrate", "MigrateResult", "run_llm"]


def config(unit: str, preset: str | None = None, config_file=None, overrides=None, sets=None):
    """Build a validated config: defaults <- preset <- YAML file <- overrides dict <- ``--set`` list."""
    u = get_unit(unit)
    return u.config(preset, *config_layers(u.config_cls, config_file, overrides, sets, unit=unit))


def elaborate(unit: str, cfg=None, flat: bool = False) -> tuple:
    """``(verilog_text, manifest_dict, component)`` of a unit's config (default config if none).

    The Verilog is hierarchical (each distinct float operator a module, instantiated by the
    top) unless ``flat`` (see :mod:`pimforge.hw.core.elaborate`)."""
    u = get_unit(unit)
    return _elaborate(u, cfg if cfg is not None else u.default_config(), flat)


def generate(unit: str, cfg=None, out="build/generated", flat: bool = False,
             filelist: bool = False) -> list:
    """Write ``out/<top>.v`` and ``out/<top>.json`` (the manifest) all-or-nothing; with
    ``filelist``, also ``out/<top>.f``, a plain filelist naming the Verilog by absolute path."""
    text, manifest, comp = elaborate(unit, cfg, flat)
    files = {f"{comp.top}.v": text, f"{comp.top}.json": json.dumps(manifest, indent=2) + "\n"}
    if filelist:
        out = check_out_dir(out)
        files[f"{comp.top}.f"] = f"{(out / f'{comp.top}.v').resolve()}\n"
    return write_outputs(out, files)


def run_bench(unit: str, cfg=None, sim: str = "verilator", seed: int = 1, job=None, **bench_kw) -> BenchResult:
    """Run the unit's cocotb bench on its generated Verilog and check it against the golden model.

    ``job`` replaces the unit's own stimulus (see :mod:`pimforge.sim.harness.job`); otherwise the
    unit's bench builds one from ``seed`` and ``bench_kw`` (e.g. ``n_random``).
    """
    u = get_unit(unit)
    cfg = cfg if cfg is not None else u.default_config()
    if job is None:
        job = u.bench(cfg, np.random.default_rng(seed), seed=seed, **bench_kw)
    return run_unit(u, cfg, job, sim=sim, seed=seed, label=f"{unit} {config_line(cfg)}")


def run_llm(prompt: str, systems=("pam",), tokens: int = 16, chat: bool = False,
            backend: str = "golden", rtl_layers=(0,), rtl_steps: int = 1, teacher=None,
            sparse: bool = False, batch: int = 1, model=None, layers=None) -> dict:
    """``pimforge run llm`` as a function: the report (a JSON-able dict) of a prompt decoded by
    the host reference and each of ``systems``, compared step by step, with each system's
    modelled time per token.  ``model`` is a GGUF path (default SmolLM2-135M-Instruct)."""
    req = _llm.LlmRequest(prompt=prompt, tokens=tokens, chat=chat, systems=tuple(systems),
                          backend=backend, rtl_layers=tuple(rtl_layers), rtl_steps=rtl_steps,
                          teacher=list(teacher) if teacher is not None else None, sparse=sparse,
                          batch=batch, model=model, layers=layers)
    _, tok = _llm.check_request(req)
    return _llm.run_llm(req, tok)
