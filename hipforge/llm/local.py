"""A local checkpoint through transformers: the tokenizer's chat template, then generate()."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from hipforge.llm.request import LLMRequest, LLMResponse


class TransformersProvider:
    """`model` is a local directory or a hub id; it loads on the first call, then stays in memory.

    Calls are serialized: one generate() already uses every core (or the whole GPU).
    """

    name = "transformers"

    def __init__(self, model: str | Path, device: str | None = None, dtype: str = "auto") -> None:
        self.model = str(model)
        self.device = device
        self.dtype = dtype
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TransformersProvider(model={self.model!r}, device={self.device!r})"

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            tokenizer = AutoTokenizer.from_pretrained(self.model)
            model = AutoModelForCausalLM.from_pretrained(self.model, dtype=self.dtype).to(device).eval()
            self._loaded = (tokenizer, model)
        return self._loaded

    def complete(self, request: LLMRequest) -> LLMResponse:
        import torch

        with self._lock:
            start = time.perf_counter()
            tokenizer, model = self._load()
            chat = [{"role": t.role, "content": t.content} for t in request.turns()]
            prompt = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
            # The template already wrote any BOS token; do not let the tokenizer add a second one.
            inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(model.device)
            if request.seed is not None:
                torch.manual_seed(request.seed)
            pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
            # Greedy at temperature 0; unset the sampling knobs a checkpoint's generation_config may carry.
            sampling: dict[str, Any] = (
                {"do_sample": True, "temperature": request.temperature}
                if request.temperature > 0
                else {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
            )
            with torch.no_grad():
                output = model.generate(
                    **inputs,
                    **sampling,
                    max_new_tokens=request.max_output_tokens,
                    num_return_sequences=request.n,
                    pad_token_id=pad,
                )
            prompt_len = inputs["input_ids"].shape[1]
            new = output[:, prompt_len:]
            texts = tuple(tokenizer.batch_decode(new, skip_special_tokens=True))
            produced = int((new != pad).sum()) if pad is not None else int(new.numel())
            return LLMResponse(
                text=texts[0],
                texts=texts,
                input_tokens=prompt_len,
                output_tokens=produced,
                latency_s=time.perf_counter() - start,
                cost_usd=0.0,
                cached=False,
                model=self.model,
                provider=self.name,
            )

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        return await asyncio.to_thread(self.complete, request)
