"""A shape-checked chain of operator steps, rendered as a KernelBench module.

Shapes are checked twice: at the module's own sizes and at the sizes smoke scaling gives it (the
sizes it first runs at), so a chain that only fits at one scale never reaches the sandbox.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hipforge.tasks.smoke import smoke_scale
from hipforge.tasks.source import size_constants
from hipforge.tasks.synth.operators import Operator
from hipforge.tasks.synth.steps import Context, Env, Shape, ShapeError, Step, Tensor

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
BATCHES = (8, 16, 32)
# Input dims per layout: (constant, choices); the second one is the channel/feature constant.
STARTS: dict[str, tuple[tuple[str, tuple[int, ...]], ...]] = {
    "feat": (("batch_size", BATCHES), ("in_features", (256, 512, 1024, 2048))),
    "seq": (("batch_size", BATCHES), ("in_features", (64, 128, 256, 512)), ("seq_len", (64, 128, 256))),
    "image": (
        ("batch_size", BATCHES),
        ("in_channels", (3, 16, 32, 64)),
        ("height", (32, 64, 128)),
        ("width", (32, 64, 128)),
    ),
    "volume": (
        ("batch_size", (4, 8, 16)),
        ("in_channels", (3, 8, 16)),
        ("depth", (8, 16)),
        ("height", (16, 32, 64)),
        ("width", (16, 32, 64)),
    ),
}
INPUT_ORDER = {"seq": ("batch_size", "seq_len", "in_features")}  # (B, N, F), though F is named first
MAX_ELEMENTS = 2**26  # per tensor at full scale (256 MB of float32)


@dataclass(frozen=True)
class Chain:
    layout: str  # of the model's first input
    inputs: tuple[tuple[str, tuple[str, ...]], ...]  # model inputs: (variable, dim constants)
    steps: tuple[Step, ...]
    env: dict[str, int | float]  # every module-level constant, in definition order

    @property
    def operators(self) -> tuple[str, ...]:
        return tuple(step.op for step in self.steps)

    @property
    def output(self) -> Tensor:
        return self.steps[-1].out

    def shapes(self, env: Env | None = None) -> dict[str, Shape]:
        """Each variable's shape under the given constants (default: the module's own), or ShapeError."""
        env = self.env if env is None else env
        shapes = {var: tuple(int(env[d]) for d in dims) for var, dims in self.inputs}
        for step in self.steps:
            shapes[step.out.var] = step.rule([shapes[v] for v in step.reads], env)
        return shapes

    def init_args(self) -> list[str]:
        text = "\n".join(line for step in self.steps for line in step.layers)
        return [name for name in self.env if re.search(rf"\b{name}\b", text)]

    def render(self, doc: str) -> str:
        args = self.init_args()
        lines = [
            HEADER,
            "",
            "class Model(nn.Module):",
            docstring(doc, "    "),
            "",
            f"    def __init__({', '.join(['self', *args])}):",
            "        super().__init__()",
        ]
        lines += [f"        {line}" for step in self.steps for line in step.layers]
        lines += ["", f"    def forward({', '.join(['self', *(var for var, _ in self.inputs)])}):"]
        lines += [f"        {s.out.var} = {s.expr.format(*s.reads)}" for s in self.steps]
        lines += [f"        return {self.output.var}", "", ""]
        lines += [f"{name} = {value!r}" for name, value in self.env.items()]
        randn = [f"torch.randn({', '.join(dims)})" for _, dims in self.inputs]
        lines += [
            "",
            "",
            "def get_inputs():",
            f"    return [{', '.join(randn)}]",
            "",
            "",
            "def get_init_inputs():",
            f"    return [{', '.join(args)}]",
            "",
        ]
        return "\n".join(lines)

    def smoke_env(self) -> dict[str, int | float]:
        """The constants after the first smoke rung, the scale the sandbox tries first."""
        return {**self.env, **size_constants(smoke_scale(self.render("smoke probe")).source)}


def docstring(doc: str, indent: str) -> str:
    body = doc.replace("\\", "\\\\").replace('"""', "'''").strip().splitlines()
    if len(body) == 1:
        return f'{indent}"""{body[0]}"""'
    return "\n".join(
        [f'{indent}"""{body[0]}', *(f"{indent}{ln}" if ln else "" for ln in body[1:]), f'{indent}"""']
    )


def build_chain(rng: random.Random, ops: Sequence[Operator], layout: str) -> Chain | None:
    """Apply the operators in order to a fresh input of the layout; None if any step cannot fit."""
    env: dict[str, int | float] = {name: rng.choice(menu) for name, menu in STARTS[layout]}
    dims = INPUT_ORDER.get(layout, tuple(name for name, _ in STARTS[layout]))
    x = Tensor("x", layout, STARTS[layout][1][0])  # type: ignore[arg-type]
    inputs: list[tuple[str, tuple[str, ...]]] = [("x", dims)]
    shapes = {"x": tuple(int(env[d]) for d in dims)}
    earlier: list[tuple[Tensor, Shape]] = [(x, shapes["x"])]
    steps: list[Step] = []
    for index, op in enumerate(ops, 1):
        if x.layout not in op.layouts:
            return None
        step = op.sample(rng, x, shapes[x.var], Context(index, dict(env), tuple(earlier)))
        if step is None:
            return None
        env.update(step.constants)
        if step.new_input:
            inputs.append(step.new_input)
            shapes[step.new_input[0]] = tuple(int(env[d]) for d in step.new_input[1])
        try:
            shape = step.rule([shapes[v] for v in step.reads], env)
        except ShapeError:
            return None
        if math.prod(shape) > MAX_ELEMENTS:
            return None
        steps.append(step)
        x, shapes[step.out.var] = step.out, shape
        earlier.append((x, shape))
    chain = Chain(layout, tuple(inputs), tuple(steps), env)
    try:
        chain.shapes(chain.smoke_env())
    except ShapeError:
        return None
    return chain
