"""A checkpoint's report end to end: the `checkpoints` row resolves to a tiny Qwen2 built here, which answers
through transformers and the LLM translator; what it writes (no ModelNew, at this size) is reported as declined."""

from __future__ import annotations

from pathlib import Path

from hipforge.bench.models import TokenCap, checkpoint_key, make_translator, resolve_model
from hipforge.bench.report import level_rows, load_report_tasks, report_config, run_report, task_row
from hipforge.execution.config import EvalConfig
from hipforge.execution.executor import LocalExecutor
from hipforge.llm import LLMRequest
from hipforge.train.base_model import TinyQwen2, build_tiny
from tests import stored


def test_a_tiny_checkpoint_answers_and_is_scored(tmp_path: Path, warehouse) -> None:
    _, tasks = load_report_tasks("", [1], 1, "cpu", only=["elementwise/relu"])
    build_tiny([t.source for t in tasks] * 4, tmp_path / "ckpt", TinyQwen2(vocab_size=300))
    stored.checkpoint(warehouse, "ck-tiny", path=str(tmp_path / "ckpt"))
    spec = resolve_model(checkpoint_key("ck-tiny"), warehouse)
    assert spec.kind == "transformers" and spec.model == str(tmp_path / "ckpt")

    translator = make_translator(spec, max_output_tokens=12)
    executor = LocalExecutor(report_config(EvalConfig(cache_dir=str(tmp_path / "cache"))))
    outcomes = run_report(tasks, translator, executor)
    capped = translator.client
    assert isinstance(capped, TokenCap) and capped.cap == 12
    answer = capped.complete(LLMRequest(prompt="__global__ void", max_output_tokens=100))
    assert 0 < answer.output_tokens <= 12  # the cap reached the model
    (outcome,) = outcomes
    assert outcome.candidate is None and outcome.result is None and "ModelNew" in outcome.declined
    (strict, loose) = level_rows([task_row(outcome)])
    assert strict["tasks"] == 1 and strict["compiled"] == 0.0 and loose["correct"] == 0.0
