"""``pimforge run llm``: a prompt decoded by the reference and by each chosen system, compared
step by step, with each system's modelled time per token.  :func:`check_request` validates a
request against the model's header before any weight is read; :func:`run_llm` does the work."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from pimforge.base.cliargs import check_int
from pimforge.base.errors import UserError
from pimforge.hw.papi.config import SCHEDULER_PRESETS, SchedulerConfig
from pimforge.software.llm import systems
from pimforge.software.llm.compare import MARGIN_THRESHOLD, compare_traces
from pimforge.software.llm.forward import generate
from pimforge.software.llm.gguf_model import load_model, read_header
from pimforge.software.llm.ops import Ops
from pimforge.software.llm.tokenizer import build_tokenizer

__all__ = ["MAX_TOKENS", "MAX_BATCH", "BACKENDS", "LlmRequest", "check_request", "read_teacher",
           "run_llm", "rates", "summary"]

MAX_TOKENS = 4096          # generated tokens of one run (far above a useful golden run)
# PAPI's batch of prompt copies: the scheduler's largest (its paper preset's running batch)
MAX_BATCH = SchedulerConfig(**SCHEDULER_PRESETS["paper"]).max_batch
BACKENDS = ("golden", "rtl")
SHOWN_STEPS = 12           # decode steps the summary lists per system (the report has all)


@dataclass
class LlmRequest:
    """A checked ``run llm`` request (:func:`check_request` fills in the model-dependent parts)."""
    prompt: str
    tokens: int = 16
    chat: bool = False
    systems: tuple = ("pam",)
    backend: str = "golden"
    rtl_layers: tuple = (0,)
    rtl_steps: int = 1
    teacher: list | None = None
    sparse: bool = False
    batch: int = 1
    model: str | None = None
    layers: int | None = None
    prompt_ids: list = field(default_factory=list)


def read_teacher(path) -> list:
    """The ``--teacher`` file: a JSON list of token ids."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"--teacher: '{path}' is not a readable file; give a JSON list of token "
                        f"ids")
    try:
        ids = json.loads(p.read_text())
    except (ValueError, UnicodeDecodeError, OSError) as e:
        raise UserError(f"--teacher: '{path}' is not JSON ({str(e).splitlines()[0][:80]}); "
                        f"give a JSON list of token ids")
    if not isinstance(ids, list) or not ids or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise UserError(f"--teacher: '{path}' must hold a non-empty JSON list of integer token "
                        f"ids")
    return ids


def check_request(req: LlmRequest) -> tuple:
    """Check ``req`` against the model's header (no weights read); returns the header and the
    tokenizer, and sets ``req.prompt_ids``."""
    check_int(req.tokens, "--tokens", 1, MAX_TOKENS)
    check_int(req.rtl_steps, "--rtl-steps", 1, MAX_TOKENS)
    check_int(req.batch, "--batch", 1, MAX_BATCH)
    if req.layers is not None:
        check_int(req.layers, "--layers", 1, None)
    if req.backend not in BACKENDS:
        raise UserError(f"--backend: unknown backend {req.backend!r}; allowed: "
                        f"{', '.join(BACKENDS)}")
    for s in req.systems:
        if s not in systems.SYSTEM_NAMES:
            raise UserError(f"--system: unknown system {s!r}; allowed: "
                            f"{', '.join(('reference',) + systems.SYSTEM_NAMES)}")
    if req.backend == "rtl":
        bad = [s for s in req.systems if s not in systems.RTL_SYSTEMS]
        if bad:
            raise UserError(f"--backend rtl: system {bad[0]} has no RTL path here; allowed "
                            f"with --backend rtl: {', '.join(systems.RTL_SYSTEMS)}")
    if req.sparse and "hermes" not in req.systems:
        raise UserError("--sparse: the predictor's sparsity is Hermes'; add hermes to --system")
    if req.batch > 1 and "papi" not in req.systems:
        raise UserError("--batch: the batch of prompt copies is PAPI's; add papi to --system")
    head = read_header(req.model)
    cfg = head.config
    n_layers = cfg.n_layers if req.layers is None else req.layers
    if req.layers is not None and not 1 <= req.layers <= cfg.n_layers:
        raise UserError(f"--layers: got {req.layers}; allowed: 1..{cfg.n_layers} (the model's "
                        f"layers)")
    for i in req.rtl_layers:
        if not 0 <= i < n_layers:
            raise UserError(f"--rtl-layers: layer {i} is out of range; allowed: 0..{n_layers - 1}")
    if req.rtl_steps > req.tokens:
        raise UserError(f"--rtl-steps: got {req.rtl_steps}; allowed: 1..{req.tokens} (--tokens)")
    tok = build_tokenizer(head.metadata, head.path)
    text = tok.chat(req.prompt) if req.chat else req.prompt
    ids = tok.encode(text)
    if not ids:
        raise UserError("--prompt: the prompt is empty; give some text")
    if req.teacher is not None:
        bad = [i for i in req.teacher if not 0 <= i < cfg.vocab]
        if bad:
            raise UserError(f"--teacher: token id {bad[0]} is out of range; allowed: "
                            f"0..{cfg.vocab - 1}")
        if len(req.teacher) < req.tokens - 1:
            raise UserError(f"--teacher: {len(req.teacher)} ids feed at most "
                            f"{len(req.teacher) + 1} steps; --tokens is {req.tokens}")
    if len(ids) + req.tokens > cfg.context:
        raise UserError(f"--prompt: {len(ids)} prompt tokens and --tokens {req.tokens} exceed "
                        f"the model's context of {cfg.context} tokens")
    req.prompt_ids = ids
    return head, tok


def _progress(label: str):
    if not sys.stderr.isatty():
        return None

    def show(done, total):
        end = "\n" if done == total else ""
        print(f"\r  {label}: token {done}/{total}", end=end, file=sys.stderr, flush=True)
    return show


def _decode(model, ops, req, tok, label):
    t0 = time.perf_counter()
    tr = generate(model, ops, req.prompt_ids, req.tokens, teacher=req.teacher,
                  eos=None if req.teacher is not None else tok.eos, progress=_progress(label))
    return tr, time.perf_counter() - t0


def _rtl_checked(ops) -> list:
    """The layer-steps a system ran on the Verilog (each asserted equal to its golden model)."""
    return list(getattr(ops, "rtl_runs", None) or getattr(ops, "rtl_checked", None) or [])


def run_llm(req: LlmRequest, tok, model=None) -> dict:
    """Decode ``req`` on the reference and each system; returns the report (a JSON-able dict).
    ``model`` reuses loaded weights (else they are read from ``req.model``)."""
    model = model or load_model(req.model, req.layers)
    teacher = req.teacher is not None
    ref, ref_s = _decode(model, Ops(), req, tok, "reference")
    report = {
        "model": {"path": model.path, "name": model.config.name,
                  "layers": model.config.n_layers},
        "prompt": req.prompt, "chat": req.chat, "prompt_ids": list(req.prompt_ids),
        "teacher": req.teacher, "threshold": MARGIN_THRESHOLD,
        "reference": {"generated_ids": ref.generated_ids, "text": tok.decode(ref.generated_ids),
                      "wall_s": ref_s},
        "systems": {},
    }
    for name in req.systems:
        ops = systems.make_ops(name, backend=req.backend, rtl_layers=list(req.rtl_layers),
                               rtl_steps=req.rtl_steps, sparse=req.sparse, batch=req.batch)
        tr, wall = _decode(model, ops, req, tok, name)
        res = compare_traces(ref, tr, teacher)
        res.update(generated_ids=tr.generated_ids, text=tok.decode(tr.generated_ids),
                   wall_s=wall, placement=ops.describe(), timing=ops.timing(tr.steps),
                   backend=req.backend, rtl_layer_steps=len(_rtl_checked(ops)))
        report["systems"][name] = res
    return report


def _rate(v):
    """tokens/s of a timing or baseline entry: a number, or a dict with ``tokens_per_s``."""
    if isinstance(v, dict):
        v = v.get("tokens_per_s")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def rates(timing: dict) -> tuple:
    """A system's modelled tokens/s and its baselines' (``{name: tokens/s}``, the entries that
    are rates) from its ``timing`` dict."""
    base = {k: _rate(v) for k, v in (timing.get("baselines") or {}).items()}
    return _rate(timing), {k: v for k, v in base.items() if v is not None}


def _fmt_rate(x) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.2f}"


def _fmt_joules(j: float) -> str:
    for scale, unit in ((1.0, "J"), (1e-3, "mJ"), (1e-6, "uJ")):
        if abs(j) >= scale:
            return f"{j / scale:.3g} {unit}"
    return f"{j / 1e-9:.3g} nJ"


def summary(report: dict) -> str:
    """The text ``run llm`` prints."""
    lines = [f"model {Path(report['model']['path']).name} ({report['model']['layers']} layers), "
             f"{len(report['prompt_ids'])} prompt tokens"
             + (", teacher-forced" if report["teacher"] is not None else ""),
             f"reference: {report['reference']['text']!r}"]
    for name, r in report["systems"].items():
        lines.append(f"{name} ({r['backend']}): {r['text']!r}")
        d = r["divergence"]
        err = r["max_logit_error"]
        lines.append(f"  top-1 agrees on {r['agree_steps']}/{r['compared_steps']} compared decode "
                     f"steps; max logit error {err:.4f}" if err is not None
                     else "  nothing compared")
        rows = [st for st in r["steps"] if st.get("decode") and "agree" in st]
        if rows:
            shown = "  ".join(f"{st['ref_margin']:.2f}/{st['max_logit_error']:.3f}/"
                              f"{max(st['layer_error']):.1e}" + ("" if st["agree"] else " (differs)")
                              for st in rows[:SHOWN_STEPS])
            more = f"  ... ({len(rows)} in --report)" if len(rows) > SHOWN_STEPS else ""
            lines.append("  per decode step, reference margin / max logit error / worst layer "
                         f"error: {shown}{more}")
        if d is not None:
            lines.append(f"  first differs at step {d['step']}: {d['reason']}")
        if r["strong_disagreements"]:
            lines.append(f"  DISAGREES at margin >= {r['threshold']} on steps "
                         f"{r['strong_disagreements']}")
        own, base = rates(r.get("timing") or {})
        if own is not None:
            text = ", ".join(f"{k} {_fmt_rate(v)}" for k, v in base.items())
            lines.append(f"  modelled: {_fmt_rate(own)} tokens/s on "
                         f"{systems.TITLES.get(name, name)}'s hardware"
                         + (f"; baselines: {text}" if text else ""))
        energy = (r.get("timing") or {}).get("energy")
        if energy and energy.get("j_per_token") == energy.get("j_per_token"):
            text = ", ".join(f"{k} {_fmt_joules(v)}" for k, v in energy.get("baselines", {}).items())
            lines.append(f"  energy: {_fmt_joules(energy['j_per_token'])} per token "
                         f"({_fmt_rate(energy['power_w'])} W)"
                         + (f"; baselines: {text}" if text else ""))
        if r["backend"] == "rtl":
            lines.append(f"  RTL: {r['rtl_layer_steps']} layer-step(s) on the Verilog, each "
                         f"equal to the golden model bit for bit")
        lines.append(f"  the run took {r['wall_s']:.1f} s on this machine")
    return "\n".join(lines)
