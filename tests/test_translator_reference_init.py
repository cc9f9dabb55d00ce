"""ModelNew is built by the reference's own class code (its __init__, helper methods, the module-level
helpers they use), so it draws the same random weights as the reference under a seed, at any size, and
models whose weights are not a function of the init inputs (fixed layer sizes, Sequential stacks,
helper blocks) translate."""

from __future__ import annotations

import torch

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.translate import generate
from hipforge.translate.emit.reference_init import reference_init

STACK = '''import torch
import torch.nn as nn

HIDDEN = 24  # a module constant the class reads
unused_size = 4096  # only get_inputs reads it


def make_block(width):
    return nn.Sequential(nn.Linear(width, HIDDEN), nn.GELU())


class Block(nn.Module):
    def __init__(self, width):
        super(Block, self).__init__()
        self.body = make_block(width)
        self.gate = nn.Parameter(torch.randn(HIDDEN) * 0.1)

    def forward(self, x):
        return self.body(x) * torch.sigmoid(self.gate)


class Model(nn.Module):
    """A stack whose layer sizes are not init inputs."""
    expansion = 2

    def __init__(self, width, depth):
        super(Model, self).__init__()
        self.blocks = self._stack(width, depth)
        self.head = nn.Linear(HIDDEN, 10 * self.expansion)

    def _stack(self, width, depth):
        return nn.Sequential(Block(width), *[Block(HIDDEN) for _ in range(depth - 1)])

    def forward(self, x):
        return torch.tanh(self.head(self.blocks(x)))


def get_inputs():
    return [torch.randn(unused_size // 512, 16)]


def get_init_inputs():
    return [16, 3]
'''


def _build(parts, seed: int) -> torch.nn.Module:
    namespace: dict = {}
    class_body = "\n".join("    " + line for code in parts.body for line in code.splitlines())
    exec("\n".join([*parts.imports, *parts.support, f"class Built({parts.bases}):", class_body]), namespace)
    torch.manual_seed(seed)
    return namespace["Built"](16, 3)


def test_the_class_code_draws_the_reference_weights_under_a_seed():
    parts = reference_init(STACK)
    assert not any("unused_size" in code for code in parts.support)  # problem sizes stay behind
    assert [code.split("(")[0] for code in parts.support] == ["HIDDEN = 24  # a module constant the class reads",
                                                              "def make_block", "class Block"]
    assert not any("def forward" in code or "Model" in code for code in parts.body)
    namespace: dict = {}
    exec(STACK, namespace)
    torch.manual_seed(7)
    reference = namespace["Model"](16, 3).state_dict()
    built = _build(parts, 7).state_dict()
    assert list(built) == list(reference)
    assert all(torch.equal(built[k], reference[k]) for k in reference)


def test_a_stack_with_fixed_sizes_translates_and_is_correct():
    source = generate(STACK).source
    assert "self.blocks[0].body[0].weight" in source and "def _stack(self, width, depth):" in source
    # no second size: this stack's HIDDEN is an architecture constant of its own, which the resizer moves
    config = EvalConfig(backend="cpu", timed_trials=1, gate=False, time_compiled_ref=False, second_size=False)
    result = evaluate(source, STACK, config)
    assert result.verdict.value == "correct", (result.message[:600], result.compile_log[-1500:])
