"""A system's decoding against the reference's, step by step.

Step 0's token comes from the prompt's prefill, which runs on the host for every system (as the
papers leave prefill to the GPU), so it agrees by construction; the steps after it are decode
steps on the system's units (``decode`` in each row).  Two runs are comparable at a step while they were fed the same tokens: always under teacher
forcing, and in free-running generation up to the first step where their top-1 choices differ
(that step included, since its input still agreed).  At a comparable step the report gives the
top-1 agreement, the reference's top-2 logit margin, the largest logit error and each layer's
output error (the residual stream's largest difference, relative to the reference's largest
magnitude).

A disagreement is *explained* when the reference's margin at that step is under
:data:`MARGIN_THRESHOLD`: the two logits are then closer than the systems' measured logit errors
can resolve (the docs' LLM page, and ``tests/software/llm/test_agreement.py``, say how it was
chosen).
"""
from __future__ import annotations

import numpy as np

__all__ = ["MARGIN_THRESHOLD", "margin", "compare_traces"]

# Logit units.  Every system's largest logit error on the real model stays well under half of
# this (the LLM page lists them), so a top-1 flip at a margin of at least this much is a bug,
# not rounding.
MARGIN_THRESHOLD = 1.0


def margin(logits) -> float:
    """The top-1 logit minus the top-2."""
    top = np.partition(np.asarray(logits, np.float64), -2)[-2:]
    return float(top[1] - top[0])


def _layer_errors(out, ref) -> list:
    out = np.asarray(out, np.float64)
    ref = np.asarray(ref, np.float64)
    scale = np.maximum(np.abs(ref).max(axis=1), 1e-30)
    return [float(x) for x in np.abs(out - ref).max(axis=1) / scale]


def compare_traces(ref, run, teacher: bool, threshold: float = MARGIN_THRESHOLD) -> dict:
    """Per-step comparison of ``run`` (a :class:`~pimforge.software.llm.forward.Trace`) with the
    reference's ``ref``; ``teacher`` says both were teacher-forced with the same ids."""
    steps, divergence = [], None
    comparable = True
    for n, ids in enumerate(run.generated_ids):
        row = {"step": n, "id": int(ids), "decode": bool(run.steps[n].decode)}
        if comparable and n < len(ref.generated_ids):
            rid = int(ref.generated_ids[n])
            m = margin(ref.logits[n])
            err = float(np.abs(run.logits[n].astype(np.float64) - ref.logits[n]).max())
            row.update(ref_id=rid, agree=rid == int(ids), ref_margin=m, max_logit_error=err,
                       layer_error=_layer_errors(run.layer_out[n], ref.layer_out[n]))
            if rid != int(ids) and divergence is None:
                divergence = {"step": n, "ref_margin": m, "explained": m < threshold,
                              "reason": (f"the reference's top-2 margin {m:.3f} is under the "
                                         f"threshold {threshold}: a near-tie" if m < threshold
                                         else f"the reference's top-2 margin {m:.3f} is at least"
                                              f" the threshold {threshold}: not a near-tie")}
                comparable = teacher
        steps.append(row)
    compared = [s for s in steps if "agree" in s and s["decode"]]
    strong = [s for s in compared if s["ref_margin"] >= threshold]
    return {
        "steps": steps, "divergence": divergence, "threshold": threshold,
        "compared_steps": len(compared),          # decode steps compared (not the prefill's)
        "agree_steps": sum(s["agree"] for s in compared),
        "strong_steps": len(strong),
        "strong_disagreements": [s["step"] for s in strong if not s["agree"]],
        "max_logit_error": max((s["max_logit_error"] for s in compared), default=None),
    }
