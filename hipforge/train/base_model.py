"""The base model: a hub id or local path (production: Qwen/Qwen2.5-Coder-14B-Instruct), or the embedded
default, a tiny Qwen2 built from its config with random weights and a tokenizer trained on our corpus."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hipforge.train.tokenizer import train_tokenizer

EMBEDDED = "embedded:tiny-qwen2"
PRODUCTION = "Qwen/Qwen2.5-Coder-14B-Instruct"


@dataclass(frozen=True)
class TinyQwen2:
    """A Qwen2 built from config with random weights: the embedded tiny one by default, any size by field."""

    hidden_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    intermediate_size: int = 256
    vocab_size: int = 2048  # of the tokenizer trained for it (a small corpus may give fewer)
    model_vocab: int = 0  # the embedding's rows; 0: as many as the tokenizer has
    max_position_embeddings: int = 4096
    seed: int = 0
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = True
    pretokenize: str = "words"  # the tokenizer's (hipforge.train.tokenizer.PRETOKENIZERS)


# Qwen2.5-Coder-14B's architecture (its config.json), for runs at the seed's size without its weights
CODER_14B = TinyQwen2(hidden_size=5120, num_hidden_layers=48, num_attention_heads=40, num_key_value_heads=8,
                      intermediate_size=13824, model_vocab=152064, max_position_embeddings=32768, rope_theta=1e6,
                      tie_word_embeddings=False)


def corpus_id(texts: Sequence[str], spec: TinyQwen2 = TinyQwen2()) -> str:
    """Names a built tiny model: the same corpus and config give the same model."""
    digest = hashlib.sha256(repr(asdict(spec)).encode())
    for text in texts:
        digest.update(text.encode() + b"\x00")
    return digest.hexdigest()[:12]


def build_tiny(corpus: Iterable[str], out_dir: Path, spec: TinyQwen2 = TinyQwen2()) -> dict[str, Any]:
    """Train the tokenizer, build the model from config (random init), save both; returns a summary."""
    tokenizer = train_tokenizer(corpus, spec.vocab_size, spec.pretokenize)
    model = build_model(spec, tokenizer)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return {"parameters": sum(p.numel() for p in model.parameters()), "vocab": len(tokenizer), **asdict(spec)}


def build_model(spec: TinyQwen2, tokenizer: Any, device: str = "cpu", dtype: str = "fp32") -> Any:
    """The Qwen2 of that spec with random weights, built on the device in that dtype (a 14B model never passes
    through host memory)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=max(spec.model_vocab, len(tokenizer)), hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size, num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads, num_key_value_heads=spec.num_key_value_heads,
        max_position_embeddings=spec.max_position_embeddings, rope_theta=spec.rope_theta,
        tie_word_embeddings=spec.tie_word_embeddings, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, bos_token_id=None,
    )
    torch.manual_seed(spec.seed)
    torch_dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
    with torch.device(device):
        model = Qwen2ForCausalLM._from_config(config, dtype=torch_dtype)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def load(name_or_path: str | Path, device: str = "cpu", dtype: str = "auto") -> tuple[Any, Any]:
    """(model, tokenizer) from a hub id or a local directory; the tokenizer gets a pad token if it has none."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if str(name_or_path) == EMBEDDED:
        raise ValueError(f"{EMBEDDED} must be built first (build_tiny); pass the directory it was saved to")
    torch_dtype = {"auto": "auto", "bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
    tokenizer = AutoTokenizer.from_pretrained(name_or_path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(name_or_path, dtype=torch_dtype).to(device)
    return model, tokenizer
