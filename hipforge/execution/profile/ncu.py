"""Nsight Compute: run one forward of a candidate under ``ncu --csv --page raw`` and parse its kernels.

Only the forward between ``cudaProfilerStart``/``Stop`` is profiled (``--profile-from-start off``; the
target warms up outside it), each kernel replayed for a small fixed metric set. Kernel names are printed
as bare function names, so the candidate's own ``__global__`` names tell our kernels from library ones.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from hipforge.execution.profile.signals import KernelSample

STALLS = ("barrier", "branch_resolving", "dispatch_stall", "lg_throttle", "long_scoreboard", "math_pipe_throttle",
          "membar", "mio_throttle", "no_instruction", "short_scoreboard", "tex_throttle", "wait")
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
DURATION = "gpu__time_duration.sum"
DRAM_BYTES = "dram__bytes.sum"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
FP32 = {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 1,
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 1,
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 2}  # an FMA is two FLOPs
METRICS = (DURATION, DRAM_BYTES, DRAM_PCT, SM_PCT, OCCUPANCY, *FP32, *(STALL_METRIC.format(s) for s in STALLS))
# to base units: ncu scales units to the value unless --print-units base, and versions differ in spelling
UNIT_SCALE = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9,
              "s": 1e9, "byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12}


def command(target: Sequence[str], log_file: str, *, metrics: Sequence[str] = METRICS, clock_control: str = "none",
            max_kernels: int = 200) -> list[str]:
    """The ncu command line around ``target`` (argv of the process to profile)."""
    return ["ncu", "--csv", "--page", "raw", "--print-units", "base", "--print-kernel-base", "function",
            "--profile-from-start", "off", "--clock-control", clock_control, "--launch-count", str(max_kernels),
            "--metrics", ",".join(metrics), "--log-file", log_file, *target]


def supported(query_output: str, metrics: Sequence[str] = METRICS) -> list[str]:
    """The metrics this GPU has, from ``ncu --query-metrics`` (base names, one per line, first word): ncu
    refuses a whole run for one unknown metric, and stall reasons differ between architectures."""
    known = {line.split()[0] for line in query_output.splitlines() if line.strip()}
    kept = [m for m in metrics if m.split(".")[0] in known]
    if DURATION not in kept:
        raise ValueError(f"ncu --query-metrics does not list {DURATION}: is a supported GPU visible?")
    return kept


def parse(text: str, custom_names: set[str]) -> list[KernelSample]:
    """Kernels from ncu's raw-page CSV: a header row ("ID", ..., "Kernel Name", metric names), a units row,
    then one row per kernel launch. ncu's own ``==PROF==`` / ``==WARNING==`` lines are skipped."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no ncu CSV table (a header row starting with \"ID\") in the output")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, units, data = rows[0], rows[1], rows[2:]
    if "Kernel Name" not in header or DURATION not in header:
        raise ValueError(f"ncu CSV lacks 'Kernel Name' or {DURATION}: columns {header[:12]}")
    col = {name: i for i, name in enumerate(header)}

    def value(row: list[str], metric: str) -> float | None:
        i = col.get(metric)
        if i is None or i >= len(row) or row[i].strip() in ("", "n/a"):
            return None
        number = float(row[i].replace(",", ""))
        return number * UNIT_SCALE.get(units[i].strip().lower(), 1.0)

    kernels = []
    for row in data:
        name = row[col["Kernel Name"]]
        stalls = {s: value(row, STALL_METRIC.format(s)) for s in STALLS}
        known = {s: v for s, v in stalls.items() if v is not None}
        counts = [value(row, m) for m in FP32]
        kernels.append(KernelSample(
            name=name, custom=base_name(name) in custom_names, duration_ns=value(row, DURATION) or 0.0,
            dram_bytes=value(row, DRAM_BYTES),
            flops=None if None in counts else sum(c * FP32[m] for c, m in zip(counts, FP32, strict=True)),
            dram_pct=value(row, DRAM_PCT), sm_pct=value(row, SM_PCT), occupancy_pct=value(row, OCCUPANCY),
            stall=max(known, key=known.get) if known else None))
    return kernels


def base_name(name: str) -> str:
    """``void ns::relu_kernel<float>(float*, int)`` -> ``relu_kernel`` (ncu prints the bare name already,
    older versions the demangled signature)."""
    head = name.split("(")[0].split("<")[0].strip()
    return head.split()[-1].split("::")[-1] if head else name
