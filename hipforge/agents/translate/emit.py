"""The candidate module: KernelBench's HIP format (load_inline with CXX=hipcc, a ModelNew)."""

from __future__ import annotations

import hashlib

from hipforge.agents.translate.graph import StateSpec
from hipforge.agents.translate.hip_common import (
    BLOCK_ARG_REDUCE,
    BLOCK_REDUCE,
    BROADCAST_INDEX,
    GROUP_REDUCE,
    PROLOGUE,
    WELFORD,
)
from hipforge.agents.translate.plan import Program

REGISTER = '''

def _register(root: nn.Module, dotted: str, shape: tuple, buffer: bool) -> None:
    """A parameter or buffer under the reference's state_dict name: the reference weights load into it."""
    *path, leaf = dotted.split(".")
    for part in path:
        if part not in root._modules:
            root.add_module(part, nn.Module())
        root = root._modules[part]
    if buffer:
        root.register_buffer(leaf, torch.zeros(shape))
    else:
        root.register_parameter(leaf, nn.Parameter(torch.zeros(shape)))
'''


def hip_source(program: Program) -> str:
    text = "".join(k.source for k in program.kernels)
    helpers = [BLOCK_REDUCE] if "hf_combine<" in text or "hf_block_" in text else []
    helpers += [GROUP_REDUCE] if "hf_group_reduce<" in text else []
    helpers += [BLOCK_ARG_REDUCE] if "hf_block_arg_reduce<" in text else []
    helpers += [WELFORD] if "hf_group_welford(" in text else []
    helpers += [BROADCAST_INDEX] if "hf_bcast" in text or "hf_divmod(" in text else []
    return "\n".join([PROLOGUE, *helpers, *(k.source for k in program.kernels)])


def module_source(program: Program, arg_names: list[str], state: list[StateSpec], doc: str) -> str:
    hip = hip_source(program)
    ext = "hipforge_tr_" + hashlib.sha256(hip.encode()).hexdigest()[:12]
    functions = [k.name for k in program.kernels]
    imports = ["import os", "", "import torch", "import torch.nn as nn"]
    if program.uses_functional:
        imports.append("import torch.nn.functional as F")
    registers = [f"_register(self, {s.name!r}, {s.shape_expr}, {s.buffer})" for s in state]
    lines = [*imports, "from torch.utils.cpp_extension import load_inline", "", 'os.environ["CXX"] = "hipcc"', "",
             f'HIP_SOURCE = r"""\n{hip}"""', "",
             f"hip_ext = load_inline(name={ext!r}, cpp_sources=HIP_SOURCE, functions={functions!r}, verbose=False)"]
    if state:
        lines.append(REGISTER.rstrip("\n"))
    lines += ["", "", "class ModelNew(nn.Module):", f'    """{doc}"""', "",
              "    def __init__(self, *init_inputs):", "        super().__init__()",
              *(f"        {r}" for r in registers), "",
              f"    def forward(self, {', '.join(arg_names)}):",
              *(f"        {line}" for line in program.forward)]
    return "\n".join(lines) + "\n"
