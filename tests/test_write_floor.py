"""The write floor: no forward on a GPU returns faster than its outputs can reach device memory."""

from __future__ import annotations

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.judge import Judge
from hipforge.execution.verdict import Concluded
from hipforge.execution.write_floor import below_floor, least_forward_ms, written_bytes

GB = 2**30


def test_written_bytes_count_each_storage_once_and_no_more_than_it_holds() -> None:
    import torch

    y, small = torch.zeros(4, 8), torch.zeros(1, 8)
    assert written_bytes([y, torch.zeros(3, dtype=torch.bfloat16)]) == 4 * 32 + 6
    assert written_bytes([y, y]) == 4 * 32  # one output returned twice is written once
    assert written_bytes(list(y.chunk(2))) == 4 * 32  # views that split one buffer
    assert written_bytes([small.expand(1000, 8)]) == 4 * 8  # an expanded view writes what it repeats
    assert written_bytes([3.0]) == 0


def test_the_floor_counts_only_bytes_beyond_the_last_cache_at_the_datasheet_bandwidth() -> None:
    assert least_forward_ms(2**30, "NVIDIA H200") == pytest.approx((1024 - 60) * 2**20 / 4.8e12 * 1e3)
    assert least_forward_ms(50 * 2**20, "NVIDIA H200") == 0.0  # the L2 can hold all of it back
    assert least_forward_ms(2**30, "AMD Instinct MI350X") < least_forward_ms(2**30, "NVIDIA H100 80GB HBM3")
    assert least_forward_ms(2**30, "a device nobody listed") == 0.0  # no datasheet, no bound


def test_a_report_below_the_floor_is_named_and_one_above_it_is_not() -> None:
    why = below_floor(0.05, GB, "NVIDIA H200")
    assert why and "1024 MB of outputs" in why and "NVIDIA H200" in why
    assert below_floor(0.25, GB, "NVIDIA H200") is None  # an honest 2 GB-moving relu takes about 0.45 ms
    assert below_floor(0.05, GB, "") is None  # the cpu backend


def judge(aliases: bool, device: str = "NVIDIA H200") -> Judge:
    found = Judge(EvalConfig(backend="cuda"), None, None, None, [[]], "", aliases=aliases, device=device,
                  written=GB)
    found.contradicted = lambda: None  # the wall clock agrees: one forward per trial leaves it that slack
    found.log.reported.extend([0.05, 0.06, 0.05])
    return found


def test_the_judge_calls_a_time_below_the_floor_a_timing_mismatch_unless_outputs_may_be_views() -> None:
    with pytest.raises(Concluded) as caught:
        judge(aliases=False).timing()
    assert caught.value.result.hack_check == "timing_mismatch" and "device memory" in caught.value.result.message
    assert judge(aliases=True).timing().median_ms == pytest.approx(0.05)  # a view of an input writes nothing
