"""The offline plausibility filter (agent 5): static checks that keep hopeless candidates off the GPU.

Each failed check multiplies the score by a prior chance that a candidate with that flaw still compiles
and passes (0 for certain failures, 0.8 for a warning), so one real flaw drops it below the default
threshold while a warning alone does not. Banned constructs come from the executor's own static scan.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from hipforge import pyast
from hipforge.execution import antihack_static
from hipforge.execution.cuda import source as csrc
from hipforge.execution.gate import hip_sources
from hipforge.llm.extract import extract_code

Check = Callable[[str, bool, str], None]  # (name, passed, reason if not)
PENALTY: dict[str, float] = {
    "clean_answer": 0.1,  # the seed lost all of L1 problems 1-15 to stray fences
    "parses": 0.0,
    "load_inline": 0.1,
    "model_new": 0.1,
    "no_banned": 0.0,  # the executor rejects it as hacked for sure
    "kernel_defined": 0.2,
    "kernel_launched": 0.2,
    "functions_defined": 0.1,
    "kernel_names_match": 0.1,
    "balanced_braces": 0.1,
    "params_kept": 0.3,
    "warp_size": 0.8,  # right on one vendor, wrong on the other: a warning
}
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})", re.M)
_CHEVRON = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^;{}()]*?>)?\s*<<<")
_GGL = re.compile(r"\bhipLaunchKernelGGL\s*\(\s*(?:HIP_KERNEL_NAME\s*\()?\s*([A-Za-z_]\w*)")
_PYBIND_DEF = re.compile(r"\.def\s*\(\s*\"(\w+)\"\s*,\s*&?\s*(\w+)")
_SHFL_WIDTH = re.compile(r"__shfl\w*\s*\((?:[^()]|\([^()]*\))*,\s*(32|64)\s*\)")
_SHFL_MASK32 = re.compile(r"__shfl\w*_sync\s*\(\s*0x[fF]{8}[uU]?\s*,")
_FIXED_OFFSET_LOOP = re.compile(r"for\s*\([^;]*=\s*(16|32)\s*;[^;]*;[^)]*(>>=\s*1|/=\s*2)")
_FACTORIES = {"randn", "rand", "empty", "zeros", "ones", "normal", "randint", "full", "Tensor", "tensor"}
_INIT_METHODS = {"normal_", "uniform_", "zero_", "fill_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_",
                 "xavier_normal_", "constant_", "ones_", "zeros_", "orthogonal_", "trunc_normal_"}


@dataclass
class PlausibilityReport:
    score: float
    passed: bool
    reasons: list[str] = field(default_factory=list)
    checks: dict[str, bool] = field(default_factory=dict)


class PlausibilityJudge(Protocol):
    """What the optimizer calls before the GPU; an LLM judge implements the same."""

    name: str

    def judge(self, source: str, reference: str | None = None) -> PlausibilityReport: ...


class OfflinePlausibilityFilter:
    name = "offline_plausibility"

    def __init__(self, threshold: float = 0.5, fp32_task: bool = True) -> None:
        self.threshold = threshold
        self.fp32_task = fp32_task  # half/bf16 use is banned only in fp32 tasks (the executor's rule)

    def judge(self, source: str, reference: str | None = None) -> PlausibilityReport:
        """Score a KernelBench-format candidate; `reference` (the task source) sharpens the re-init check."""
        checks: dict[str, bool] = {}
        reasons: list[str] = []

        def check(name: str, ok: bool, reason: str) -> None:
            checks[name] = ok
            if not ok:
                reasons.append(reason)

        code = source
        tree, error = _parse(source)
        if tree is None:
            code = extract_code(source)  # judge what the answer meant, but charge for the wrapping
            tree = _parse(code)[0]
        fenced, prose = bool(_FENCE.search(source)), tree is not None and bool(error)
        check("clean_answer", not (fenced or prose),
              "markdown fences in the answer: it must be a plain Python file" if fenced
              else f"prose outside the code ({error})")
        check("parses", tree is not None, f"not valid Python: {error}")
        if tree is not None:
            self._python_checks(code, tree, reference, check)
            self._hip_checks(code, tree, check)
        score = 1.0
        for name, ok in checks.items():
            score *= 1.0 if ok else PENALTY[name]
        return PlausibilityReport(round(score, 4), score >= self.threshold, reasons, checks)

    def _python_checks(self, code: str, tree: ast.AST, reference: str | None, check: Check) -> None:
        model = _class(tree, "ModelNew")
        has_forward = model is not None and any(
            isinstance(n, ast.FunctionDef) and n.name == "forward" for n in model.body)
        check("model_new", has_forward,
              "ModelNew is not defined" if model is None else "ModelNew has no forward method")
        check("load_inline", bool(_load_inline_calls(tree)), "load_inline is never called: no HIP kernel is built")
        findings = [f for f in antihack_static.scan(code)
                    if (self.fp32_task or not f.fp32_only) and not f.message.startswith("no load_inline")]
        check("no_banned", not findings,
              "; ".join(f"banned construct {f.check}: {f.message} (line {f.line})" for f in findings))
        sites = _reinit_sites(model)
        ref_tree = _parse(reference)[0]
        allowed = {kind for _, kind, _ in _reinit_sites(_class(ref_tree, "Model"))} if ref_tree else set()
        bad = [(line, what) for line, kind, what in sites if kind not in allowed]
        check("params_kept", not bad, "ModelNew re-initializes parameters the reference learns: "
              + ", ".join(f"{what} (line {line})" for line, what in bad))

    def _hip_checks(self, code: str, tree: ast.AST, check: Check) -> None:
        sources = hip_sources(code)
        texts = [csrc.clean(s) for s in sources]
        text, raw = "\n".join(texts), "\n".join(sources)
        defs = csrc.functions(text)
        kernels = {f.name.split("::")[-1] for f in defs if "__global__" in f.prefix}
        hosts = {f.name: text[f.body_start:f.body_end] for f in defs if not f.is_device and not f.is_macro_block}
        exported = _exported(tree, raw)
        check("kernel_defined", bool(kernels), "no __global__ kernel is defined in the HIP source")
        missing = [n for n in exported if n not in hosts]
        binds_nothing = not exported and "PYBIND11_MODULE" not in raw and bool(_load_inline_calls(tree))
        check("functions_defined", not missing and not binds_nothing,
              "load_inline binds no function (no `functions`, no PYBIND11_MODULE)" if binds_nothing
              else f"load_inline functions {missing} have no host definition (defined: {sorted(hosts)})")
        launched = {m for body in hosts.values() for m in _launches(body)}
        unknown = sorted(launched - kernels)
        check("kernel_names_match", not unknown, f"launches {unknown}, but the __global__ kernels are "
              f"{sorted(kernels)}")
        reachable = _reachable(hosts, [n for n in exported if n in hosts] or list(hosts))
        check("kernel_launched", any(set(_launches(hosts[h])) & kernels for h in reachable),
              "no __global__ kernel is launched (<<<>>> or hipLaunchKernelGGL) from a function in load_inline's "
              "`functions`")
        unbalanced = [p for t in texts for p in ("{}", "()", "[]") if t.count(p[0]) != t.count(p[1])]
        check("balanced_braces", not unbalanced, f"unbalanced {' '.join(sorted(set(unbalanced)))} in the HIP source")
        fixed = any(p.search(text) for p in (_SHFL_WIDTH, _SHFL_MASK32)) or (
            "__shfl" in text and bool(_FIXED_OFFSET_LOOP.search(text)))
        check("warp_size", not fixed, "hard-coded warp width in shuffles: use warpSize (64 on AMD, 32 on NVIDIA)")


def _parse(code: str | None) -> tuple[ast.AST | None, str]:
    """The module's tree, or None and why not."""
    try:
        return (pyast.parse(code), "") if code else (None, "no code")
    except SyntaxError as e:
        return None, f"line {e.lineno}: {e.msg}"
    except ValueError as e:  # null bytes
        return None, str(e)


def _class(tree: ast.AST | None, name: str) -> ast.ClassDef | None:
    found = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name] if tree else []
    return found[-1] if found else None


def _load_inline_calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "attr", getattr(n.func, "id", "")) == "load_inline"]


def _exported(tree: ast.AST, raw_hip: str) -> list[str]:
    """Names load_inline binds: its `functions` (list, tuple, dict or a name bound to one), else PYBIND11 defs."""
    bound = {t.id: n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
             for t in n.targets if isinstance(t, ast.Name)}
    names: list[str] = []
    for call in _load_inline_calls(tree):
        node = {kw.arg: kw.value for kw in call.keywords}.get("functions") or (
            call.args[3] if len(call.args) > 3 else None)
        node = bound.get(node.id, node) if isinstance(node, ast.Name) else node
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.append(node.value)
        elif isinstance(node, ast.List | ast.Tuple | ast.Dict):
            elts = node.keys if isinstance(node, ast.Dict) else node.elts
            names += [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return names or [target for _, target in _PYBIND_DEF.findall(raw_hip)]


def _launches(body: str) -> list[str]:
    return [m.split("::")[-1] for m in _CHEVRON.findall(body) + _GGL.findall(body)]


def _reachable(hosts: dict[str, str], roots: list[str]) -> set[str]:
    """Host functions the exported ones call, transitively: launches often sit in a helper."""
    seen, todo = set(roots), list(roots)
    while todo:
        body = hosts[todo.pop()]
        for name in hosts.keys() - seen:
            if re.search(rf"\b{re.escape(name)}\s*\(", body):
                seen.add(name)
                todo.append(name)
    return seen


def _reinit_sites(cls: ast.ClassDef | None) -> list[tuple[int, str, str]]:
    """(line, kind, text) for weight initializations in a class: kind "init" (nn.init.*, .normal_() ...)
    or "fresh" (nn.Parameter around a random/constant factory)."""
    sites: list[tuple[int, str, str]] = []
    # forward may zero or fill its own buffers; only construction-time code initializes weights
    methods = [m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name != "forward"] if cls else []
    for node in (n for m in methods for n in ast.walk(m)):
        if not isinstance(node, ast.Call):
            continue
        func = ast.unparse(node.func)
        if isinstance(node.func, ast.Attribute) and (node.func.attr in _INIT_METHODS or ".init." in f".{func}"):
            sites.append((node.lineno, "init", f"{func}(...)"))
        elif func.split(".")[-1] == "Parameter" and node.args and isinstance(node.args[0], ast.Call):
            inner = ast.unparse(node.args[0].func)
            if inner.split(".")[-1] in _FACTORIES:
                sites.append((node.lineno, "fresh", f"{func}({inner}(...))"))
    return sites
