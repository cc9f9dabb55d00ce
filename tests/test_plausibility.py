"""The offline plausibility filter: honest corpus candidates pass, malformed ones fail and say why."""

from __future__ import annotations

import pytest

from hipforge.agents.judge.offline import OfflinePlausibilityFilter
from tests.corpus import entries

GOOD = '''import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["CXX"] = "hipcc"

src = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

__global__ void scale_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}

torch::Tensor twice(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

module = load_inline(name="twice", cpp_sources=src, functions=["twice"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return module.twice(x)
'''
LAUNCH = "scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);"
LINEAR_REF = '''import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.linear = nn.Linear(n, n)

    def forward(self, x):
        return self.linear(x)
'''
RANDN_REF = LINEAR_REF.replace("self.linear = nn.Linear(n, n)", "self.w = nn.Parameter(torch.randn(n, n))")


@pytest.fixture(scope="module")
def judge():
    return OfflinePlausibilityFilter().judge


@pytest.mark.parametrize("entry", entries("honest"), ids=lambda e: e.name)
def test_honest_corpus_passes(judge, entry) -> None:
    report = judge(entry.candidate_source, entry.task_source)
    assert report.passed and report.score == 1.0, report.reasons


def test_good_candidate_passes_every_check(judge) -> None:
    report = judge(GOOD)
    assert report.passed and report.reasons == [] and all(report.checks.values())
    assert set(report.checks) >= {"kernel_launched", "model_new", "load_inline", "no_banned", "params_kept"}


@pytest.mark.parametrize(("name", "source", "check", "words"), [
    ("fences_and_prose", f"Here is the fast kernel:\n```python\n{GOOD}```\nIt should be 2x faster.",
     "clean_answer", "markdown fences"),
    ("prose_only", f"Sure! Here is the code you asked for.\n{GOOD}", "clean_answer", "prose outside the code"),
    ("no_launch", GOOD.replace(LAUNCH, "y = x * 2;"), "kernel_launched", "no __global__ kernel is launched"),
    ("no_kernel", GOOD.replace("__global__ ", "__device__ "), "kernel_defined", "no __global__ kernel"),
    ("missing_model_new", GOOD.replace("class ModelNew", "class Model2"), "model_new", "ModelNew is not defined"),
    ("no_forward", GOOD.replace("def forward", "def run"), "model_new", "no forward"),
    ("function_name_mismatch", GOOD.replace('functions=["twice"]', 'functions=["scale_forward"]'),
     "functions_defined", "['scale_forward'] have no host definition"),
    ("kernel_name_mismatch", GOOD.replace("scale_kernel<<<", "scale_kernl<<<"), "kernel_names_match",
     "launches ['scale_kernl']"),
    ("unbalanced_braces", GOOD.replace("return y;\n}", "return y;\n"), "balanced_braces", "unbalanced {}"),
    ("no_load_inline", GOOD.replace("module = load_inline(", "module = compile_it("), "load_inline",
     "load_inline is never called"),
    ("banned_thread", GOOD.replace("import os\n", "import os\nimport threading\n"), "no_banned",
     "banned construct thread_injection"),
])
def test_malformed_candidates_fail_with_the_reason(judge, name, source, check, words) -> None:
    report = judge(source)
    assert not report.passed and report.score < 0.5
    assert report.checks[check] is False
    assert any(words in r for r in report.reasons), report.reasons


def test_fenced_answer_is_still_judged_on_its_code(judge) -> None:
    report = judge(f"```python\n{GOOD}```")
    assert report.checks["parses"] and report.checks["kernel_launched"]
    assert [k for k, ok in report.checks.items() if not ok] == ["clean_answer"]


def test_text_that_is_no_python_scores_zero(judge) -> None:
    report = judge("I cannot write this kernel, sorry.\nIt needs a (GEMM.")
    assert report.score == 0.0 and report.checks["parses"] is False


LINEAR_NEW = GOOD.replace('''    def __init__(self):
        super().__init__()
''', '''    def __init__(self, n):
        super().__init__()
        self.linear = nn.Linear(n, n)
        INIT
''')


@pytest.mark.parametrize("init", ["nn.init.xavier_uniform_(self.linear.weight)",
                                  "self.linear.weight.data.normal_(0, 0.02)",
                                  "self.w = nn.Parameter(torch.randn(n, n))"])
def test_reinitialized_parameters_fail(judge, init) -> None:
    report = judge(LINEAR_NEW.replace("INIT", init), LINEAR_REF)
    assert not report.passed and not report.checks["params_kept"]
    assert any("re-initializes parameters" in r for r in report.reasons)


def test_fresh_parameters_match_a_reference_that_makes_them_the_same_way(judge) -> None:
    source = LINEAR_NEW.replace("INIT", "self.w = nn.Parameter(torch.randn(n, n))")
    assert judge(source, RANDN_REF).checks["params_kept"]


def test_forward_may_fill_its_own_buffers(judge) -> None:
    source = GOOD.replace("return module.twice(x)", "out = module.twice(x)\n        out.zero_()\n        return out")
    assert judge(source).checks["params_kept"]


def test_hard_coded_warp_width_is_a_warning(judge) -> None:
    shuffle = "for (int off = 32; off > 0; off >>= 1) v += __shfl_down(v, off);"
    body = "if (i < n) y[i] = 2.f * x[i];"
    source = GOOD.replace(body, f"float v = x[i];\n    {shuffle}\n    {body}")
    report = judge(source)
    assert report.passed and report.score == pytest.approx(0.8) and not report.checks["warp_size"]
    assert any("warpSize" in r for r in report.reasons)
    assert judge(source.replace("int off = 32", "int off = warpSize / 2")).checks["warp_size"]
    assert not judge(source.replace("__shfl_down(v, off)", "__shfl_down(v, off, 64)")).checks["warp_size"]
    assert not OfflinePlausibilityFilter(threshold=0.9).judge(source).passed


def test_launch_forms_and_helpers_are_recognized(judge) -> None:
    ggl = "hipLaunchKernelGGL(scale_kernel, dim3((n + 255) / 256), dim3(256), 0, 0, x.data_ptr<float>(), " \
          "y.data_ptr<float>(), n);"
    assert judge(GOOD.replace(LAUNCH, ggl)).passed
    template = GOOD.replace("__global__ void", "template <typename T>\n__global__ void").replace(
        "scale_kernel<<<", "scale_kernel<float><<<")
    assert judge(template).passed
    helper = GOOD.replace("torch::Tensor twice(", "static void launch(const float* x, float* y, int n) {\n    "
                          + LAUNCH.replace(".data_ptr<float>()", "") + "\n}\n\ntorch::Tensor twice(").replace(
        LAUNCH, "launch(x.data_ptr<float>(), y.data_ptr<float>(), n);")
    assert judge(helper).passed, judge(helper).reasons


def test_deceptive_static_hacks_are_rejected(judge) -> None:
    static = [e for e in entries("deceptive") if e.stage == "static"]
    assert static and all(not judge(e.candidate_source).passed for e in static)


def test_load_inline_must_bind_something(judge) -> None:
    report = judge(GOOD.replace(', functions=["twice"]', ""))
    assert not report.passed and any("binds no function" in r for r in report.reasons)
    binding = 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("twice", &twice); }\n"""\n\nmodule'
    pybind = GOOD.replace(', functions=["twice"]', "").replace('"""\n\nmodule', binding)
    assert judge(pybind).passed, judge(pybind).reasons


def test_a_python_syntax_error_is_not_called_prose(judge) -> None:
    report = judge(GOOD.replace("def forward(self, x):", "def forward(self, x)"))
    assert report.checks == {"clean_answer": True, "parses": False} and report.score == 0.0
    assert report.reasons[0].startswith("not valid Python: line")
