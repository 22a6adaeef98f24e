"""The tokenizer, built from the GGUF's own metadata with ``tokenizers``.

SmolLM2's GGUF says ``tokenizer.ggml.model = gpt2`` (a byte-level BPE over
``tokenizer.ggml.tokens`` and ``merges``) and ``pre = smollm``: digits split one by one, then
GPT-2's byte-level regex, no prefix space.  Tokens of type 3 (control, such as ``<|im_start|>``)
are special: they are matched whole in the text and left out of decoded text.  The chat template
(``tokenizer.chat_template``, Jinja) renders a conversation into a prompt.
"""
from __future__ import annotations

import jinja2

try:    # pinned in requirements.lock; a missing package is a user error with the pip command
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
except ImportError:
    Tokenizer = None

from pimforge.base.errors import UserError
from pimforge.software.llm.gguf_model import INSTALL_HINT

__all__ = ["PRE_TOKENIZERS", "TextTokenizer", "build_tokenizer"]

PRE_TOKENIZERS = ("smollm", "gpt2", "default")   # tokenizer.ggml.pre values read here
_CONTROL = 3                                        # llama.cpp's token type of control tokens


class TextTokenizer:
    """Encode and decode text, render chat prompts; ``bos``/``eos`` are token ids."""

    def __init__(self, tok, bos: int, eos: int, template: str | None):
        self._tok, self.bos, self.eos, self.template = tok, bos, eos, template

    def encode(self, text: str) -> list:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids, skip_special: bool = True) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=skip_special)

    def chat(self, user: str) -> str:
        """The prompt of one user message under the model's chat template, ready for the
        assistant's reply."""
        if not self.template:
            raise UserError("--chat: the model's GGUF has no tokenizer.chat_template")
        env = jinja2.Environment(autoescape=False)
        return env.from_string(self.template).render(
            messages=[{"role": "user", "content": user}], add_generation_prompt=True,
            bos_token="", eos_token="")


def build_tokenizer(meta: dict, path: str = "") -> TextTokenizer:
    """The tokenizer of a GGUF's ``tokenizer.*`` metadata (as :func:`~pimforge.software.llm.gguf_model.load_model` keeps it)."""
    if Tokenizer is None:
        raise UserError(f"--model: the package 'tokenizers' is not installed; install it with: "
                        f"{INSTALL_HINT}")
    kind = meta.get("tokenizer.ggml.model")
    pre = meta.get("tokenizer.ggml.pre", "default")
    if kind != "gpt2" or pre not in PRE_TOKENIZERS:
        raise UserError(f"--model: {path}: tokenizer {kind!r} with pre-tokenizer {pre!r} is not "
                        f"supported; allowed: model 'gpt2' (byte-level BPE) with pre-tokenizer "
                        f"{', '.join(PRE_TOKENIZERS)}")
    if not meta.get("tokenizer.ggml.tokens"):
        raise UserError(f"--model: {path}: the GGUF has no tokenizer.ggml.tokens")
    tokens = list(meta["tokenizer.ggml.tokens"])
    # a vocabulary of bytes alone needs no merges (and GGUF then stores none)
    merges = [tuple(m.split(" ", 1)) for m in meta.get("tokenizer.ggml.merges") or []]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.pre_tokenizer = (pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                  byte_level])
                         if pre == "smollm" else byte_level)
    tok.decoder = decoders.ByteLevel()
    types = list(meta.get("tokenizer.ggml.token_type") or [])
    special = [AddedToken(tokens[i], special=True, normalized=False)
               for i, t in enumerate(types) if t == _CONTROL]
    tok.add_special_tokens(special)
    return TextTokenizer(tok, int(meta.get("tokenizer.ggml.bos_token_id", 1)),
                         int(meta.get("tokenizer.ggml.eos_token_id", 2)),
                         meta.get("tokenizer.chat_template"))
