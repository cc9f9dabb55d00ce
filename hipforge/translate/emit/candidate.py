"""The candidate module: KernelBench's HIP format (load_inline with CXX=hipcc, a ModelNew)."""

from __future__ import annotations

import hashlib

from hipforge.translate.emit.reference_init import ReferenceInit
from hipforge.translate.kernels.common import (
    BLOCK_ARG_REDUCE,
    BLOCK_REDUCE,
    BROADCAST_INDEX,
    GROUP_REDUCE,
    PROLOGUE,
    WELFORD,
)
from hipforge.translate.kernels.gemm_mma import MMA_HELPERS
from hipforge.translate.plan import Program


def hip_source(program: Program) -> str:
    text = "".join(k.source for k in program.kernels)
    helpers = [BLOCK_REDUCE] if "hf_combine<" in text or "hf_block_" in text else []
    helpers += [GROUP_REDUCE] if "hf_group_reduce<" in text else []
    helpers += [BLOCK_ARG_REDUCE] if "hf_block_arg_reduce<" in text else []
    helpers += [WELFORD] if "hf_group_welford(" in text else []
    helpers += [BROADCAST_INDEX] if "hf_bcast" in text or "hf_divmod(" in text else []
    helpers += [MMA_HELPERS] if "hf_tf32_split(" in text else []
    return "\n".join([PROLOGUE, *helpers, *(k.source for k in program.kernels)])


def module_source(program: Program, arg_names: list[str], reference: ReferenceInit, doc: str) -> str:
    """The candidate: the reference's imports and support code, the HIP extension, and ModelNew built by the
    reference's own __init__ (same weights, same random draws) with the translated forward."""
    hip = hip_source(program)
    ext = "hipforge_tr_" + hashlib.sha256(hip.encode()).hexdigest()[:12]
    functions = [k.name for k in program.kernels]
    imports = ["import os", "import torch", "import torch.nn as nn"]
    imports += ["import torch.nn.functional as F"] if program.uses_functional else []
    imports += ["from torch.utils.cpp_extension import load_inline"]
    imports += [i for i in reference.imports if i not in imports]
    lines = [*imports, "", *(f"{code}\n\n" for code in reference.support), 'os.environ["CXX"] = "hipcc"', "",
             f'HIP_SOURCE = r"""\n{hip}"""', "",
             f"hip_ext = load_inline(name={ext!r}, cpp_sources=HIP_SOURCE, functions={functions!r}, verbose=False)",
             "", "", f"class ModelNew({reference.bases}):", f'    """{doc}"""', "",
             *(f"    {line}".rstrip() for code in reference.body for line in [*code.splitlines(), ""]),
             f"    def forward(self, {', '.join(arg_names)}):",
             *(f"        {line}" for line in program.forward)]
    return "\n".join(lines) + "\n"
