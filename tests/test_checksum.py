"""Keyed checksums: an honest output within the tolerance always passes (the bound is exact), a wrong one
does not, and the sums cost no more than a pass over the output."""

from __future__ import annotations

import torch

from hipforge.execution import checksum

TOL = [(1e-4, 1e-4)]


def check(candidate: torch.Tensor, reference: torch.Tensor, key: int = 12345) -> str | None:
    return checksum.mismatch(checksum.sums([candidate], key), checksum.sums([reference], key),
                             checksum.bounds([reference], TOL))


def test_an_output_within_the_tolerance_everywhere_passes() -> None:
    torch.manual_seed(0)
    ref = torch.randn(3_000_000)
    worst = ref + (1e-4 + 1e-4 * ref.abs()) * 0.999 * torch.sign(torch.randn_like(ref))  # every element at the edge
    assert check(worst, ref) is None


def test_a_stale_or_missing_output_fails() -> None:
    """What timing tricks return: a result for other inputs, an unwritten buffer. (Errors of a few percent
    hide in a block's sum of tolerances: the full comparisons of the checked trials are for those.)"""
    torch.manual_seed(1)
    ref = torch.randn(500_000)
    assert check(torch.randn(500_000), ref) is not None
    assert check(torch.zeros_like(ref), ref) is not None
    assert check(ref.roll(1), ref) is not None


def test_the_key_decides_the_weights() -> None:
    x = torch.randn(100_000)
    assert checksum.sums([x], 1) != checksum.sums([x], 2)
    assert checksum.sums([x], 7) == checksum.sums([x.clone()], 7)


def test_fine_sums_find_a_single_wrong_element_and_a_bias() -> None:
    torch.manual_seed(2)
    ref = torch.randn(1 << 20)
    bound = checksum.fine_bounds([ref], TOL)[0]
    theirs = checksum.fine([ref], 9)[0]
    assert checksum.fine_mismatch(checksum.fine([ref.clone()], 9)[0], theirs, bound) is None
    one = ref.clone()
    one[123_456] += 0.5
    assert "elements 123392-123647" in checksum.fine_mismatch(checksum.fine([one], 9)[0], theirs, bound)
    biased = ref + 2e-3  # every element off by 10x the tolerance, all the same way: a downgrade's bias
    assert checksum.fine_mismatch(checksum.fine([biased], 9)[0], theirs, bound) is not None


def test_a_reference_that_is_not_finite_leaves_its_block_unjudged() -> None:
    ref = torch.randn(1000)
    ref[10] = float("nan")
    assert check(ref.clone(), ref) is None
