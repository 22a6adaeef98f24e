"""Checks shared by the LLM tests (tests/software/llm/): the teacher-forcing contract."""
import numpy as np

from pimforge.software.llm.compare import MARGIN_THRESHOLD, margin
from pimforge.software.llm.forward import generate
from pimforge.software.llm.ops import Ops


def teacher_forced_errors(ref, tr) -> list:
    """Each step's largest logit error of ``tr``, a run teacher-forced with the reference run
    ``ref``'s own ids.  Asserts the contract: top-1 equal at every step whose reference top-2
    margin is at least the threshold, and step 0 (the host's prefill) exact."""
    errs = []
    for n in range(len(ref.logits)):
        if margin(ref.logits[n]) >= MARGIN_THRESHOLD:
            assert tr.generated_ids[n] == ref.generated_ids[n], n
        errs.append(float(np.abs(tr.logits[n].astype(np.float64) - ref.logits[n]).max()))
    assert errs[0] == 0.0
    return errs


def full_model_errors(full, ids, ops, n: int = 8) -> list:
    """:func:`teacher_forced_errors` of ``ops`` on the whole model over ``n`` tokens."""
    ref = generate(full, Ops(), ids, n)
    return teacher_forced_errors(ref, generate(full, ops, ids, n, teacher=ref.generated_ids))
