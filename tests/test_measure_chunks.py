"""Outputs are compared a slice at a time (KernelBench-size outputs do not fit as float64 copies): the
verdict and the error figures must not depend on where the slices fall."""

import pytest
import torch

from hipforge.execution import numerics
from hipforge.execution.config import EvalConfig


@pytest.fixture
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(numerics, "CHUNK_ELEMENTS", 7)  # many slices, the last one partial


def test_one_bad_element_in_the_last_slice_fails(tiny_chunks: None) -> None:
    ref = torch.randn(5, 9)
    out = ref.clone()
    out[-1, -1] += 0.5
    report = numerics.compare_outputs([out], [ref], EvalConfig(backend="cpu"))
    assert not report["ok"]
    assert report["abs"] == pytest.approx(0.5, rel=1e-5)
    assert "max abs error 0.5" in report["message"]


def test_sliced_figures_match_a_whole_comparison(tiny_chunks: None) -> None:
    ref = torch.randn(4, 6, 5)
    out = ref + 1e-6 * torch.randn_like(ref)
    report = numerics.compare_outputs([out.transpose(0, 2)], [ref.transpose(0, 2)], EvalConfig(backend="cpu"))
    diff = (out.double() - ref.double()).abs()
    assert report["ok"] and report["loose"]
    assert report["abs"] == pytest.approx(diff.max().item())
    assert report["rel"] == pytest.approx((diff / ref.double().abs().clamp_min(1e-4)).max().item())


def test_a_nan_is_seen_in_any_slice_and_equals_only_a_nan(tiny_chunks: None) -> None:
    cfg = EvalConfig(backend="cpu")
    ref = torch.zeros(50)
    out = ref.clone()
    out[44] = float("nan")  # in the seventh slice of seven elements
    assert numerics.compare_outputs([ref], [ref.clone()], cfg)["ok"]
    assert not numerics.compare_outputs([out], [ref], cfg)["ok"]
    assert numerics.compare_outputs([out], [out.clone()], cfg)["ok"]  # NaN where the reference has NaN is equal
