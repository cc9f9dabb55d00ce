"""The synthetic tasks' distribution: per-mode sizes, FLOPs and bytes, operator counts, a cost plot."""

from __future__ import annotations

from hipforge.tasks.reference_run import ReferenceRun
from hipforge.tasks.synth import Outcome, Rejection, Synthetic
from hipforge.tasks.synth.distribution import cost_scatter, distribution_table, operator_table


def _outcome(name: str, mode: str, ops: tuple[str, ...], flops: int | None, moved: int, shape: tuple[int, ...],
             rejected: bool = False) -> Outcome:
    synthetic = Synthetic(name, mode, "source", "prompt", operators=ops)
    if rejected:
        return Outcome(synthetic, name, Rejection("constant_output", "output does not depend on the input"))
    run = ReferenceRun(name, name, "smoke", [(2, 16)], ["torch.float32"], 0.01, 0.01, flops=flops,
                       bytes_moved=moved, full_shapes=[shape])
    return Outcome(synthetic, name, run)


OUTCOMES = [
    _outcome("a", "composition", ("linear", "softmax"), 2_000_000, 4_000, (128, 64)),
    _outcome("b", "composition", ("conv2d", "activation", "softmax"), 8_000_000, 16_000, (16, 8, 32, 32)),
    _outcome("c", "constraint", ("softmax",), None, 1_000, (1024,)),
    _outcome("d", "mutation", (), 0, 64_000, (4096, 4)),
    _outcome("e", "mutation", ("linear",), 10**12, 10**9, (1,), rejected=True),
]


def test_distribution_table_spans_accepted_tasks_per_mode() -> None:
    table = distribution_table(OUTCOMES)
    rows = {line.split("|")[1].strip(): line for line in table.splitlines()[2:]}
    assert set(rows) == {"composition", "constraint", "mutation"}
    # 128*64 and 16*8*32*32
    assert "| 2 |" in rows["composition"] and "8.19e+03 / 6.96e+04 / 1.31e+05" in rows["composition"]
    assert "4e+03 / 1e+04 / 1.6e+04" in rows["composition"]
    assert "1e+12" not in table  # the rejected task does not count
    assert rows["constraint"].split("|")[4].strip() == "-"  # no FLOP count for it


def test_operator_counts_and_plot() -> None:
    table = operator_table(OUTCOMES)
    assert "| softmax | 3 |" in table and "| linear | 1 |" in table
    png = cost_scatter(OUTCOMES)
    assert png is not None and png.startswith(b"\x89PNG")
    assert cost_scatter([OUTCOMES[-1]]) is None
