"""``--model PATH.gguf``: any llama-architecture GGUF runs through the same code.  The model here
is written by ``gguf``'s own writer: a tiny random llama (2 layers, d_model 128, 2 query heads
over 1 KV head of 64, SwiGLU of 256, a byte-level vocabulary of 257 tokens, untied output
weights, Q8_0 and F32 tensors), decoded on the reference and on every system."""
import json

import gguf
import numpy as np
import pytest

from pimforge import api, cli
from pimforge.software.llm.gguf_model import load_model
from pimforge.software.llm.systems import SYSTEM_NAMES

D, HEADS, KV, FFN, LAYERS = 128, 2, 1, 256, 2


def _byte_tokens():
    """GPT-2's byte-to-character map: the 256 single-byte tokens of a byte-level BPE."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars, n = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    return [chars[b] for b in range(256)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("own") / "tiny-llama.gguf"
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny random llama")
    w.add_block_count(LAYERS)
    w.add_context_length(256)
    w.add_embedding_length(D)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    tokens = _byte_tokens() + ["<|endoftext|>"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([1] * 256 + [3])
    w.add_token_merges([])
    w.add_bos_token_id(256)
    w.add_eos_token_id(256)
    vocab, hd = len(tokens), D // HEADS

    def mat(rows, cols, scale):
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)

    q8 = gguf.GGMLQuantizationType.Q8_0
    w.add_tensor("token_embd.weight", gguf.quants.quantize(mat(vocab, D, 1.0), q8),
                 raw_dtype=q8)
    w.add_tensor("output.weight", mat(vocab, D, 0.1))
    w.add_tensor("output_norm.weight", np.ones(D, np.float32))
    for i in range(LAYERS):
        for name, shape in (("attn_q", (D, D)), ("attn_k", (KV * hd, D)),
                            ("attn_v", (KV * hd, D)), ("attn_output", (D, D)),
                            ("ffn_gate", (FFN, D)), ("ffn_up", (FFN, D)),
                            ("ffn_down", (D, FFN))):
            w.add_tensor(f"blk.{i}.{name}.weight", mat(*shape, 1 / np.sqrt(shape[1])))
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(D, np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(D, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


def test_reads_the_architecture(tiny):
    m = load_model(tiny)
    c = m.config
    assert (c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.d_ffn, c.vocab) == \
        (LAYERS, D, HEADS, KV, D // HEADS, FFN, 257)
    assert m.output is not None and m.lm_head is m.output        # untied
    assert m.quant["token_embd.weight"] == "Q8_0"


def test_decodes_on_the_units(tiny, tmp_path, capsys):
    report = tmp_path / "r.json"
    code = cli.main(["run", "llm", "--model", tiny, "--prompt", "hello pimforge", "--tokens",
                     "4", "--system", "pam,hilos,hermes,lolpim,papi", "--report", str(report)])
    err = capsys.readouterr().err
    assert code == 0, err
    r = json.loads(report.read_text())
    assert len(r["prompt_ids"]) == len("hello pimforge")        # one token a byte, no merges
    for name in SYSTEM_NAMES:
        s = r["systems"][name]
        assert s["compared_steps"] == 3 and s["strong_disagreements"] == []
        assert s["max_logit_error"] < 0.5


def test_same_model_through_the_api(tiny):
    rep = api.run_llm("abc", systems=(), tokens=2, model=tiny)
    assert len(rep["reference"]["generated_ids"]) == 2
