"""The correctness contract of the LLM path, across all five systems (each system's own test
file checks its units; this one checks the contract through :func:`api.run_llm`'s report).

* **Teacher forcing.**  Fed the reference's own continuation, each system's top-1 equals the
  reference's at every decode step whose reference top-2 margin is at least
  :data:`~pimforge.software.llm.compare.MARGIN_THRESHOLD`.
* **The threshold.**  It is justified only if every system's logit error stays well under it:
  a top-1 flip needs the error to reach half the margin (each of the two logits moves by at most
  the error), so the test asserts ``max logit error < threshold / 2``.  The largest error
  measured on the full model (LoL-PIM's bf16) sets how much room is left; the LLM page lists them.
* **Free running** matches up to the first step under the threshold; the report says where and
  why it diverges.

The default run uses the real weights truncated to 2 layers, 4 tokens; the full 30-layer model
runs on PAM and HILOS for 8 tokens, and on all five systems under ``PIMFORGE_LONG``.
"""
import pytest

from pimforge import api
from pimforge.software.llm.compare import MARGIN_THRESHOLD
from pimforge.software.llm.systems import SYSTEM_NAMES

PROMPT = "What is the capital of France?"


def _contract(rep, teacher: bool):
    for name, r in rep["systems"].items():
        assert r["compared_steps"] > 0, name
        assert r["strong_disagreements"] == [], (name, r["steps"])
        assert r["max_logit_error"] < MARGIN_THRESHOLD / 2, (name, r["max_logit_error"])
        d = r["divergence"]
        if teacher:
            assert r["compared_steps"] == len(r["steps"]) - 1     # every decode step compared
        elif d is not None:
            # free running: it may only part at a near-tie, and then nothing after is compared
            assert d["explained"], (name, d)
            assert all("agree" not in s for s in r["steps"][d["step"] + 1:]), name
        else:
            assert r["generated_ids"] == rep["reference"]["generated_ids"], name


@pytest.fixture(scope="module")
def reference_ids():
    rep = api.run_llm(PROMPT, systems=(), tokens=4, chat=True, layers=2)
    return rep["reference"]["generated_ids"]


def test_every_system_teacher_forced_2_layers(reference_ids):
    rep = api.run_llm(PROMPT, systems=SYSTEM_NAMES, tokens=4, chat=True, layers=2,
                      teacher=reference_ids[:-1])
    _contract(rep, teacher=True)
    for name, r in rep["systems"].items():
        assert r["generated_ids"] == reference_ids, name


def test_free_running_2_layers():
    rep = api.run_llm(PROMPT, systems=SYSTEM_NAMES, tokens=4, chat=True, layers=2)
    _contract(rep, teacher=False)


def test_full_model_pam_and_hilos():
    """The 30-layer model for 8 tokens: the answer, on the units."""
    rep = api.run_llm(PROMPT, systems=("pam", "hilos"), tokens=8, chat=True)
    assert "Paris" in rep["reference"]["text"]
    _contract(rep, teacher=False)
    for name, r in rep["systems"].items():
        assert "Paris" in r["text"], (name, r["text"])


@pytest.mark.slow
def test_full_model_every_system_teacher_forced():
    ref = api.run_llm(PROMPT, systems=(), tokens=16, chat=True)["reference"]["generated_ids"]
    rep = api.run_llm(PROMPT, systems=SYSTEM_NAMES, tokens=len(ref), chat=True,
                      teacher=ref[:-1])
    _contract(rep, teacher=True)
