"""The LLM path's pieces, each checked on its own against something it does not compute itself:
the dequantization against the GGUF block layouts written out here, the tokenizer against the
GGUF's own token strings, RoPE's pairing against a rotation by hand and against the model's own
text, and the reference decoder against the known answer of a factual prompt."""
import numpy as np
import pytest

from pimforge.base.errors import UserError
from pimforge.software.llm import forward
from pimforge.software.llm.forward import generate, rope, rope_tables
from pimforge.software.llm.gguf_model import load_model, read_header
from pimforge.software.llm.ops import Ops
from pimforge.software.llm.tokenizer import build_tokenizer

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer(read_header().metadata)


def _blocks(t, size):
    return np.asarray(t.data, np.uint8).reshape(-1, size)


def _q4_1(raw):
    """GGML Q4_1, 32 values a block: fp16 scale d, fp16 minimum m, 16 bytes whose low nibbles
    are values 0..15 and high nibbles values 16..31; value = d * q + m."""
    d = raw[:, 0:2].copy().view(np.float16).astype(np.float32)
    m = raw[:, 2:4].copy().view(np.float16).astype(np.float32)
    qs = raw[:, 4:20]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)
    return d * q + m


def _q8_0(raw):
    """GGML Q8_0, 32 values a block: fp16 scale d, 32 signed bytes; value = d * q."""
    d = raw[:, 0:2].copy().view(np.float16).astype(np.float32)
    q = raw[:, 2:34].copy().view(np.int8).astype(np.float32)
    return d * q


def test_dequantization_matches_the_block_layout(model):
    head = read_header()
    tensors = {t.name: t for t in head.reader.tensors}
    for name, layer, key in (("blk.0.attn_q.weight", 0, "attn_q"),
                             ("blk.1.ffn_down.weight", 1, "ffn_down")):
        t = tensors[name]
        assert t.tensor_type.name == "Q4_1"
        want = _q4_1(_blocks(t, 20)).reshape(model.layers[layer][key].shape)
        np.testing.assert_array_equal(model.layers[layer][key], want)
    t = tensors["token_embd.weight"]
    assert t.tensor_type.name == "Q8_0"
    rows = _q8_0(_blocks(t, 34)).reshape(model.embed.shape)
    np.testing.assert_array_equal(model.embed, rows)
    # tied embeddings: the output projection is the embedding
    assert model.output is None and model.lm_head is model.embed


def test_config_is_smollm2(model):
    c = read_header().config
    assert (c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.d_ffn, c.vocab) == \
        (30, 576, 9, 3, 64, 1536, 49152)
    assert c.rope_base == 100000.0 and abs(c.rms_eps - 1e-5) < 1e-12
    assert model.config.n_layers == 2


def test_tokenizer_round_trip(tok):
    texts = ["The capital of France is", "Hello, world!  Two  spaces\nand a newline",
             "naïve café 東京 🙂", "x = 12345 + 0.5;", "  leading spaces", ""]
    for t in texts:
        assert tok.decode(tok.encode(t)) == t


def test_tokenizer_pieces_are_the_gguf_tokens(tok):
    meta = read_header().metadata
    tokens = list(meta["tokenizer.ggml.tokens"])
    ids = tok.encode(PROMPT)
    # byte-level BPE spells a leading space as 'Ġ'; the pieces concatenate to the text
    assert "".join(tokens[i] for i in ids).replace("Ġ", " ") == PROMPT
    # smollm's pre-tokenizer splits digits one by one
    assert [tokens[i] for i in tok.encode("2025")] == ["2", "0", "2", "5"]
    # control tokens are matched whole, and left out of decoded text
    im = tokens.index("<|im_start|>")
    assert tok.encode("<|im_start|>user") [0] == im
    assert tok.decode(tok.encode("<|im_start|>user")) == "user"
    assert (tok.bos, tok.eos) == (1, 2)


def test_chat_template(tok):
    text = tok.chat("Hi")
    assert text.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")


def test_rope_rotates_interleaved_pairs():
    cos, sin = rope_tables(8, 100.0, 5)
    x = np.zeros((1, 8), np.float32)
    x[0, 2] = 1.0                      # pair 1's first element
    y = rope(x, cos[3], sin[3])
    ang = 3 * 100.0 ** (-2 / 8)        # position 3, pair 1: base^(-2*1/8)
    np.testing.assert_allclose(y[0, 2:4], [np.cos(ang), np.sin(ang)], rtol=1e-6)
    assert not np.any(y[0, [0, 1, 4, 5, 6, 7]])
    # position 0 is the identity
    np.testing.assert_array_equal(rope(x, cos[0], sin[0]), x)


def _rope_halves(x, cos, sin):
    """The other convention (Hugging Face's rotate_half): pair i is (i, i + hd/2)."""
    h = x.shape[1] // 2
    a, b = x[:, :h], x[:, h:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=1)


TEXT = ("The quick brown fox jumps over the lazy dog. Paris is the capital and largest city of "
        "France, on the river Seine.")


def _nll(model, ids) -> float:
    """Mean negative log-likelihood (nats a token) of ``ids`` under teacher forcing."""
    tr = generate(model, Ops(), ids[:1], len(ids) - 1, teacher=ids[1:])
    total = 0.0
    for n, lg in enumerate(tr.logits):
        lg = lg.astype(np.float64)
        total -= lg[ids[n + 1]] - lg.max() - np.log(np.exp(lg - lg.max()).sum())
    return total / len(tr.logits)


def test_rope_pairing_makes_the_text(full, tok, monkeypatch):
    """On the stored (permuted) Q and K rows, interleaved pairs answer the factual prompt with
    ' Paris' and read an English sentence far better than the halves convention on the same
    rows does (the margin is about four times smaller than the difference measured)."""
    paris = tok.encode(" Paris")
    assert len(paris) == 1
    assert generate(full, Ops(), tok.encode(PROMPT), 1).generated_ids[0] == paris[0]
    ids = tok.encode(TEXT)
    good = _nll(full, ids)
    monkeypatch.setattr(forward, "rope", _rope_halves)
    bad = _nll(full, ids)
    assert good < 3.5 and bad - good > 0.3, (good, bad)


def test_reference_answers_in_chat(full, tok):
    ids = tok.encode(tok.chat("What is the capital of France?"))
    tr = generate(full, Ops(), ids, 8, eos=tok.eos)
    assert "Paris" in tok.decode(tr.generated_ids)


def test_truncated_layers_are_checked():
    with pytest.raises(UserError, match="--layers"):
        load_model(n_layers=31)
