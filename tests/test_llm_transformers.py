"""TransformersProvider on a tiny random Qwen2 with a locally trained tokenizer (nothing downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hipforge.llm import LLMRequest, TransformersProvider

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    corpus = [
        "__global__ void relu(float* x) { x[threadIdx.x] = 0; }",
        "write a kernel",
        "user assistant system",
    ]
    core.train_from_iterator(corpus * 20, trainers.BpeTrainer(vocab_size=300, special_tokens=specials))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHAT_TEMPLATE
    )
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=256,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    path = tmp_path_factory.mktemp("tiny-qwen2")
    Qwen2ForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_generates_with_the_chat_template(tiny_checkpoint: Path) -> None:
    provider = TransformersProvider(tiny_checkpoint, device="cpu")
    request = LLMRequest(prompt="write a kernel", system="You write HIP.", max_output_tokens=6)
    first = provider.complete(request)
    assert first.provider == "transformers" and first.model == str(tiny_checkpoint) and first.cost_usd == 0.0
    # "<|im_start|>system\nYou write HIP.<|im_end|>\n<|im_start|>user\n..." is more than a handful of tokens
    assert first.input_tokens is not None and first.input_tokens > 10
    assert first.output_tokens is not None and 0 < first.output_tokens <= 6 and first.latency_s > 0
    assert provider.complete(request).text == first.text  # greedy at temperature 0


def test_seeded_sampling_is_reproducible_and_n_gives_n(tiny_checkpoint: Path) -> None:
    provider = TransformersProvider(tiny_checkpoint, device="cpu")
    request = LLMRequest(prompt="write a kernel", temperature=1.0, seed=11, n=3, max_output_tokens=8)
    first = provider.complete(request)
    assert len(first.texts) == 3 and provider.complete(request).texts == first.texts
