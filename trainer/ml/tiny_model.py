"""A tiny causal LM built locally from a config, for tests, the demo and the benchmark.

Nothing here downloads anything: the weights come from a seeded initialisation and the
tokenizer is a byte-level vocabulary (one token per byte, no merges) built in memory, so
any UTF-8 text round-trips and ``AutoTokenizer.from_pretrained(dir)`` loads it offline.
"""

from __future__ import annotations

from pathlib import Path

from trainer.ml.digest import weights_sha256

__all__ = ["SPECIAL_TOKENS", "build_tiny_base_model", "weights_sha256"]

# Ids 0..255 are the bytes themselves; the specials follow, so token id == byte value.
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>")
_N_BYTES = 256
# Wider than the usual 0.02 so the (frozen) output layer can express confident
# predictions: a LoRA on the attention layers can then visibly fit a toy dataset.
INIT_RANGE = 0.1


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map, the alphabet of the ByteLevel pre-tokenizer."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = printable[:]
    extra = 0
    for b in range(_N_BYTES):
        if b not in printable:
            printable.append(b)
            chars.append(_N_BYTES + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars, strict=True)}


def _build_tokenizer(model_max_length: int):  # -> PreTrainedTokenizerFast
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    byte_chars = _bytes_to_unicode()
    vocab = {byte_chars[b]: b for b in range(_N_BYTES)}
    vocab.update({tok: _N_BYTES + i for i, tok in enumerate(SPECIAL_TOKENS)})
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    # use_regex=False: no word splitting is needed when every byte is already a token.
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    pad, bos, eos = SPECIAL_TOKENS
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=pad,
        bos_token=bos,
        eos_token=eos,
        model_max_length=model_max_length,
    )


def build_tiny_base_model(
    out_dir: str | Path,
    seed: int = 0,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    max_positions: int = 512,
) -> Path:
    """Build a seeded tiny Llama-architecture causal LM and its tokenizer into ``out_dir``.

    The directory is an ordinary Hugging Face model directory (``config.json``,
    ``model.safetensors``, ``tokenizer.json`` ...). The same seed and sizes give
    byte-identical weight files; the global torch RNG state is left as it was.

    Returns:
        The model directory.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pad, bos, eos = (_N_BYTES + i for i in range(len(SPECIAL_TOKENS)))
    config = LlamaConfig(
        vocab_size=_N_BYTES + len(SPECIAL_TOKENS),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=max_positions,
        pad_token_id=pad,
        bos_token_id=bos,
        eos_token_id=eos,
        tie_word_embeddings=False,
        initializer_range=INIT_RANGE,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.save_pretrained(out)
    _build_tokenizer(max_positions).save_pretrained(out)
    return out
