"""Fixtures of the LLM tests: the real weights truncated to 2 layers, the prompt's ids and the
reference's 4-token run, loaded once per test worker (session scope; nothing mutates them)."""
import pytest

from pimforge.software.llm.forward import generate
from pimforge.software.llm.gguf_model import load_model
from pimforge.software.llm.ops import Ops
from pimforge.software.llm.tokenizer import build_tokenizer

PROMPT = "The capital of France is"


@pytest.fixture(scope="session")
def model():
    return load_model(n_layers=2)


@pytest.fixture(scope="session")
def ids(model):
    return build_tokenizer(model.metadata).encode(PROMPT)


@pytest.fixture(scope="session")
def ref(model, ids):
    return generate(model, Ops(), ids, 4)


@pytest.fixture(scope="session")
def full():
    """The whole 30-layer model."""
    return load_model()
