"""extract_code on the messy answers models actually give."""

from __future__ import annotations

import pytest

from hipforge.llm import extract_code

MODEL_NEW = '''import torch
from torch.utils.cpp_extension import load_inline

source = """
__global__ void relu(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0 ? x[i] : 0;
}
"""


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.relu()'''

KERNEL = """#include <hip/hip_runtime.h>

__global__ void relu(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}"""

F = "```"

CASES: dict[str, tuple[str, str, str]] = {
    "fenced with prose around": (
        f"Here is the optimized version:\n\n{F}python\n{MODEL_NEW}\n{F}\n\nThis fuses the ReLU.",
        "python",
        MODEL_NEW,
    ),
    "py tag, trailing spaces on fences": (f"{F}py   \n{MODEL_NEW}\n{F}   \n", "python", MODEL_NEW),
    "uppercase tag with attributes": (f"{F}Python title=model_new.py\n{MODEL_NEW}\n{F}", "python", MODEL_NEW),
    "usage snippet first, ModelNew second": (
        f"Use it like:\n{F}python\nm = ModelNew()\ny = m(x)\n{F}\nFull code:\n{F}python\n{MODEL_NEW}\n{F}",
        "python",
        MODEL_NEW,
    ),
    "hip block then python block, python asked": (
        f"{F}cpp\n{KERNEL}\n{F}\nand the module:\n{F}python\n{MODEL_NEW}\n{F}",
        "python",
        MODEL_NEW,
    ),
    "hip block then python block, hip asked": (
        f"{F}cpp\n{KERNEL}\n{F}\nand the module:\n{F}python\n{MODEL_NEW}\n{F}",
        "hip",
        KERNEL,
    ),
    "untagged fence": (f"Answer:\n{F}\n{MODEL_NEW}\n{F}\nDone.", "python", MODEL_NEW),
    "unterminated fence (answer cut off)": (f"Sure!\n{F}python\n{MODEL_NEW}\n", "python", MODEL_NEW),
    "untagged unterminated fence": (f"Sure!\n{F}\n{MODEL_NEW}", "python", MODEL_NEW),
    "bare code, no fence": (MODEL_NEW, "python", MODEL_NEW),
    "bare code with prose before and after": (
        f"Here's my solution.\n\n{MODEL_NEW}\n\nThis keeps the GEMM in PyTorch and fuses the rest.",
        "python",
        MODEL_NEW,
    ),
    "stray closing fence only": (f"{MODEL_NEW}\n{F}\n", "python", MODEL_NEW),
    "stray closing fence then prose": (f"{MODEL_NEW}\n{F}\nHope this helps!", "python", MODEL_NEW),
    "think block with a draft": (
        f"<think>\nmaybe:\n{F}python\nclass ModelNew: pass\n{F}\n</think>\n{F}python\n{MODEL_NEW}\n{F}",
        "python",
        MODEL_NEW,
    ),
    "fence indented in a list item": (
        "1. The code:\n\n   "
        + f"{F}python\n"
        + "\n".join("   " + line if line else "" for line in MODEL_NEW.split("\n"))
        + f"\n   {F}",
        "python",
        MODEL_NEW,
    ),
    "tilde fences": (f"~~~python\n{MODEL_NEW}\n~~~", "python", MODEL_NEW),
    "four backticks around text holding a fence": (
        "````python\ndoc = '''\n```\n'''\nclass ModelNew: pass\n````",
        "python",
        "doc = '''\n```\n'''\nclass ModelNew: pass",
    ),
    "windows line endings": (
        f"Here:\r\n{F}python\r\n{MODEL_NEW.replace(chr(10), chr(13) + chr(10))}\r\n{F}\r\n",
        "python",
        MODEL_NEW,
    ),
    "bare hip kernel with prose": (f"The kernel:\n{KERNEL}\nLaunch it with 256 threads.", "hip", KERNEL),
    "bash block is not the answer": (
        f"{F}bash\npip install torch\n{F}\n{F}\n{MODEL_NEW}\n{F}",
        "python",
        MODEL_NEW,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_extract_code(name: str) -> None:
    text, language, expected = CASES[name]
    assert extract_code(text, language) == expected


def test_no_code_at_all() -> None:
    assert extract_code("") == ""
    assert extract_code("   \n") == ""


def test_a_syntax_error_is_not_cut_away() -> None:
    broken = MODEL_NEW.replace("def forward(self, x):", "def forward(self, x)")
    # Trailing-prose trimming must not "repair" the code by dropping the broken ModelNew.
    assert extract_code(f"{broken}\n\nThat's it.") == f"{broken}\n\nThat's it."


def test_requested_marker_wins() -> None:
    text = f"{F}python\ndef helper():\n    return 1\n{F}\n{F}python\ndef get_inputs():\n    return []\n{F}"
    assert extract_code(text, marker="get_inputs") == "def get_inputs():\n    return []"
