"""What the LLM agents tell the model: the KernelBench HIP format with a worked example, and feedback."""

from __future__ import annotations

from hipforge.agents.base import Feedback
from hipforge.agents.summarizer.offline import Failure, key_line
from hipforge.execution.profile.signals import Profile
from hipforge.execution.verdict import EvalResult

# The exact shape our backends accept (tests/corpus/honest/relu.py): load_inline over a HIP source that
# defines the kernel and a host wrapper, CXX=hipcc, ModelNew calling the bound function.
EXAMPLE_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
'''

EXAMPLE_KERNEL = '''import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

RELU_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

torch::Tensor relu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu: float32 only");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int n = xc.numel();
    hipLaunchKernelGGL(relu_kernel, dim3((n + 255) / 256), dim3(256), 0, 0,
                       xc.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

relu_module = load_inline(
    name="relu_hip",
    cpp_sources=RELU_SOURCE,
    functions=["relu"],
    verbose=False,
)


class ModelNew(nn.Module):
    """ReLU in one HIP kernel."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_module.relu(x)
'''

RULES = """Rules:
- Answer with ONE complete Python file and nothing else: no markdown fences, no explanation.
- Define `ModelNew` with the same constructor arguments and forward signature as `Model`.
- Build the HIP source with torch.utils.cpp_extension.load_inline(cpp_sources=..., functions=[...]) and set
  os.environ["CXX"] = "hipcc"; the source includes <torch/extension.h> and <hip/hip_runtime.h>.
- The target is AMD MI350X (gfx950): wavefronts are 64 lanes; use warpSize, never a hard-coded 32.
- Keep heavy ops (convolution, GEMM) as the reference's modules if you like, and fuse the cheap elementwise
  ops around them into your kernel; keep parameters exactly as the reference creates them (no nn.init).
- Never call the reference Model, never patch timers or torch, cache results, mutate inputs, use other
  streams, threads, processes or the network, or lower the precision of an fp32 task."""

TRANSLATOR_SYSTEM = f"""You write HIP kernels for AMD GPUs in KernelBench's HIP format.
Given a PyTorch reference module `Model`, write `ModelNew`: the same computation, with the work done in
your own HIP kernel(s).

{RULES}

Example reference:
{EXAMPLE_TASK}
Example answer:
{EXAMPLE_KERNEL}"""


def task_prompt(task_source: str, lessons: str = "") -> str:
    lessons_part = f"\n\n{lessons.strip()}" if lessons.strip() else ""
    return f"Reference to translate:\n{task_source.rstrip()}{lessons_part}\n\nWrite ModelNew now."


def tail(text: str, max_chars: int) -> str:
    """The end of a log: compilers and tracebacks put the decisive line last."""
    text = text.strip()
    return text if len(text) <= max_chars else "..." + text[-max_chars:]


def feedback_from(source: str, result: EvalResult, log_chars: int = 1500) -> Feedback:
    """Verdict, message and the tail of the compiler log or traceback, as an agent is re-prompted with."""
    log = result.compile_log or result.gate_log or result.traceback or ""  # the gate's log names a device-code error
    check = f"caught by the {result.hack_check} check: " if result.hack_check else ""
    message = check + result.message
    if log.strip():
        end = tail(log, log_chars)
        # a long build log can push the first error out of its tail; that line is the one to fix
        first = key_line(Failure(result.verdict.value, "", log))
        message += (f"\nfirst error: {first}" if first not in end else "") + f"\nlog tail:\n{end}"
    return Feedback(source, result.verdict.value, message)


BOTTLENECK_ADVICE = {  # what to try first under each of signals.bottleneck's labels
    "memory-bound": "It is memory-bound: move fewer bytes. Vectorized (float4) loads and stores, more elements "
                    "per thread, one pass over global memory, intermediates kept in registers or shared memory.",
    "compute-bound": "It is compute-bound: execute fewer instructions. Larger shared-memory tiles with register "
                     "blocking, unrolled inner loops, fast-math intrinsics only where the tolerance allows.",
    "launch-bound": "It is launch-bound: its kernels are too short to reach either roof. Fewer launches: fuse "
                    "kernels into one and give each thread more work.",
    "low-coverage": "Most of its time is spent in PyTorch's own (ATen/library) kernels, not in yours: move "
                    "more of the computation into your kernels.",
}


def bottleneck_hint(profile: Profile) -> str:
    """The parent's profile in one line and the advice for its bottleneck, for the evolver's prompt."""
    return f"Profile of the parent kernel: {profile.line()}.\n{BOTTLENECK_ADVICE.get(profile.bottleneck, '')}".strip()


def feedback_prompt(feedback: Feedback) -> str:
    return (f"The verifier rejected that kernel.\nverdict: {feedback.verdict}\n{feedback.message}\n\n"
            "Fix it and answer with the complete corrected Python file only.")
