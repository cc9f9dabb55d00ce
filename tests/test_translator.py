"""The offline translator on the reference library: every translated task is correct on the cpu
backend at smoke scale (kernels generated for the full-size task), reductions at both wavefront
sizes; declined tasks name what is unsupported; output is deterministic and warp-width agnostic.

About 80 builds (every translation at wavefront 64, reductions again at 32, 7 parameter variants),
~5-10 s each on two cores: ~5.5 min cold; builds are cached by source, so reruns are quicker.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from hipforge.agents.base import AgentTask, Candidate, Declined
from hipforge.agents.translator.offline import OfflineTranslator
from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate_many
from hipforge.tasks import LADDER, SmokeRung, smoke_scale
from hipforge.tasks.library import LibraryTask, load_library
from hipforge.translate import GenParams, generate

DECLINE = re.compile(r"^unsupported (op|fusion|model|input dtype|parameter dtype|parameter shape): \S")
WARP_LINE = re.compile(r"__shfl|\blane\b|\bwaves?\b|warp", re.I)
GRID_SAMPLE_TASK = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Bilinear sampling of a feature map at given grid points."""

    def forward(self, x, grid):
        return F.grid_sample(torch.relu(x), grid, align_corners=False)


def get_inputs():
    return [torch.randn(2, 3, 8, 8), torch.rand(2, 4, 4, 2) * 2 - 1]


def get_init_inputs():
    return []
'''


@pytest.fixture(scope="module")
def translated() -> dict[str, tuple[LibraryTask, Candidate | Declined]]:
    translator = OfflineTranslator()
    return {t.name: (t, translator.translate(AgentTask(t.name, t.name, t.source))) for t in load_library()}


def _evaluate(items: list[tuple[LibraryTask, Candidate]], wavefront: int,
              rung: SmokeRung = LADDER[0]) -> dict[str, str]:
    """Verdict (with the message when not correct) per task, on the smoke-scaled task source."""
    config = EvalConfig(backend="cpu", wavefront=wavefront, timed_trials=3, gate=False, time_compiled_ref=False)
    pairs = [(cand.source, smoke_scale(task.source, rung).source) for task, cand in items]
    verdicts = {}
    for i, result in evaluate_many(pairs, config, parallel=2):
        ok = result.verdict.value == "correct"
        verdicts[items[i][0].name] = "correct" if ok else f"{result.verdict.value}: {result.message[:400]}"
    return verdicts


def _report(translated: dict, verdicts: dict[str, str], wavefront: int) -> None:
    counts: Counter[tuple[str, str]] = Counter()
    for task, outcome in translated.values():
        counts[task.category, "declined" if isinstance(outcome, Declined) else "translated"] += 1
        counts[task.category, "correct"] += verdicts.get(task.name) == "correct"
    for category in sorted({c for c, _ in counts}):
        print(f"[wavefront {wavefront}] {category:12s} translated {counts[category, 'translated']:2d}  "
              f"correct {counts[category, 'correct']:2d}  declined {counts[category, 'declined']:2d}")


def test_every_translation_is_correct_at_wavefront_64(translated):
    items = [(task, out) for task, out in translated.values() if isinstance(out, Candidate)]
    assert len(items) >= 40
    verdicts = _evaluate(items, 64)
    _report(translated, verdicts, 64)
    assert {name: v for name, v in verdicts.items() if v != "correct"} == {}


def test_reductions_are_correct_at_wavefront_32(translated):
    items = [(task, out) for task, out in translated.values()
             if isinstance(out, Candidate) and out.params["strategy"] in ("reduction", "scan")]
    assert len(items) >= 10
    verdicts = _evaluate(items, 32)
    _report({t.name: (t, c) for t, c in items}, verdicts, 32)
    assert {name: v for name, v in verdicts.items() if v != "correct"} == {}


def test_rows_longer_than_a_block_at_wavefront_32(translated):
    """Sizes shrunk only to ~1000: row loops, scan chunks and partial sums run several rounds."""
    names = ["reductions/softmax", "reductions/cumsum", "reductions/argmax_dim", "reductions/row_mean", "losses/mse"]
    verdicts = _evaluate([translated[name] for name in names], 32, SmokeRung(threshold=1000, floor=600))
    assert verdicts == dict.fromkeys(names, "correct")


def test_mutated_params_stay_correct(translated):
    """What an optimizer may change: other blocks, scalar-only, more work per thread, other GEMM tiles."""
    variants = {
        "elementwise/bias_add_nchw": dict(vector_width=1, block_size=128),
        "elementwise/gelu_tanh": dict(elems_per_thread=4, block_size=512, fast_math=True),
        "reductions/layernorm": dict(block_size=64, unroll=1),
        "losses/mse": dict(block_size=1024, elems_per_thread=8),
        "gemm/matmul_transposed_b": dict(gemm_tile="64x64x16/4x4", split_k=2),
        "gemm/bmm": dict(gemm_tile="128x64x8/8x4"),
        "conv/depthwise_conv2d": dict(block_size=128, elems_per_thread=2),
    }
    items = []
    for name, changes in variants.items():
        task = translated[name][0]
        out = OfflineTranslator().with_params(**changes).translate(AgentTask(name, name, task.source))
        assert isinstance(out, Candidate) and all(out.params[k] == v for k, v in changes.items())
        items.append((task, out))
    verdicts = _evaluate(items, 32)
    assert {name: v for name, v in verdicts.items() if v != "correct"} == {}


def test_declined_tasks_name_what_is_unsupported(translated):
    declined = {task.name: out.reason for task, out in translated.values() if isinstance(out, Declined)}
    for name, reason in sorted(declined.items()):
        print(f"declined {name}: {reason}")
    assert all(DECLINE.match(reason) for reason in declined.values()), declined
    # a size used as a number (math.sqrt(q.shape[-1])) is read at run time, not frozen at the full size
    assert "blocks/attention_scores" not in declined
    assert "losses/cross_entropy" not in declined  # int64 class indices travel as exact floats


def test_unsupported_op_is_declined_with_its_name():
    out = OfflineTranslator().translate(AgentTask("t", "grid_sample", GRID_SAMPLE_TASK))
    assert isinstance(out, Declined) and out.agent == "offline-translator"
    assert out.reason.startswith("unsupported op: torch.nn.functional.grid_sample at node grid_sample"), out.reason


def test_no_hard_coded_warp_width(translated):
    """Lane and wavefront arithmetic goes through warpSize (64 on AMD, 32 on NVIDIA)."""
    for task, out in translated.values():
        if isinstance(out, Candidate):
            assert_no_hard_coded_warp_width(task.name, out.source)


def assert_no_hard_coded_warp_width(name: str, source: str) -> None:
    """A candidate's HIP (comments aside) takes no % or & of a literal warp width, names no 16, 32 or 64 on
    a line about lanes, waves or warps, and shuffles only with warpSize."""
    hip = re.sub(r"//[^\n]*", "", source.split('r"""', 1)[1].split('"""', 1)[0])
    assert not re.search(r"[%&]\s*(31|32|63|64)\b", hip), name
    for line in hip.splitlines():
        if WARP_LINE.search(line):
            assert not re.search(r"\b(16|32|64)\b", line), (name, line)
    if "__shfl" in hip:
        assert "warpSize" in hip, name


def test_source_is_deterministic_and_params_are_recorded(translated):
    task = next(t for t, _ in translated.values() if t.name == "reductions/softmax")
    first = OfflineTranslator().translate(AgentTask("t", task.name, task.source))
    again = OfflineTranslator().translate(AgentTask("t", task.name, task.source))
    assert isinstance(first, Candidate) and first.source == again.source
    wide = OfflineTranslator().with_params(block_size=512, unroll=2)
    other = wide.translate(AgentTask("t", task.name, task.source))
    assert other.source != first.source and "red[513]" in other.source
    assert other.params["block_size"] == 512 and other.params["strategy"] == "reduction"
    assert generate(task.source, GenParams(block_size=512, unroll=2)).source == other.source


def test_params_are_validated():
    with pytest.raises(ValueError):
        GenParams(block_size=100)
    with pytest.raises(ValueError):
        OfflineTranslator().with_params(vector_width=3)
