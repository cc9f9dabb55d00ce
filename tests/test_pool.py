"""Evaluation pools on CPU: a local Ray (2 CPU workers) reaches the same verdicts as the local pool, and
an evaluation whose worker is killed mid-run is retried on another worker while finished results stay."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.pool import make_pool
from hipforge.execution.pool.job import evaluate_job
from hipforge.execution.pool.local import LocalPool
from hipforge.execution.verdict import EvalResult, Verdict
from tests.corpus import entries

ray = pytest.importorskip("ray")

CORPUS = {e.name: e for e in entries()}
NAMES = ("relu", "row_max_off_by_one", "timing_patch_static")  # correct, incorrect on one seed, hacked
ITEMS = [(CORPUS[n].candidate_source, CORPUS[n].task_source) for n in NAMES]
VICTIM = 1
FAST = EvalConfig(timed_trials=3, warmup=1, gate=False)


def dies_first_time(candidate_source: str, task_source: str, config: EvalConfig) -> EvalResult:
    """Kills its own worker process on the first attempt at the victim item, as a segfault or the OOM
    killer would; every attempt leaves a marker naming its process, so the test can count them."""
    if candidate_source == ITEMS[VICTIM][0]:
        markers = Path(os.environ["HIPFORGE_POOL_TEST_MARKERS"])
        attempt = len(list(markers.glob("attempt-*")))
        (markers / f"attempt-{attempt}-pid-{os.getpid()}").touch()
        if attempt == 0:
            os._exit(9)
    return evaluate_job(candidate_source, task_source, config)


def always_dies(candidate_source: str, task_source: str, config: EvalConfig) -> EvalResult:
    if candidate_source == ITEMS[VICTIM][0]:
        os._exit(9)
    return evaluate_job(candidate_source, task_source, config)


@pytest.fixture(scope="module")
def markers(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pool-markers")


@pytest.fixture(scope="module")
def local_ray(markers: Path):
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HIPFORGE_POOL_TEST_MARKERS": str(markers)}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def local_results() -> dict[int, EvalResult]:
    return answered(LocalPool(FAST, slots=2))


def answered(pool, items: list[tuple[str, str]] = ITEMS) -> dict[int, EvalResult]:
    """Every item answered exactly once."""
    order = list(pool.evaluate_many(items))
    assert sorted(i for i, _ in order) == list(range(len(items)))
    return dict(order)


def test_ray_pool_agrees_with_the_local_pool(local_ray, local_results) -> None:
    remote = answered(make_pool("ray", FAST, slots=1))
    assert {i: r.verdict for i, r in remote.items()} == {i: r.verdict for i, r in local_results.items()}
    assert len({r.verdict for r in remote.values()}) == 3, remote  # three different outcomes, not one failure
    assert remote[1].failing_seed == local_results[1].failing_seed is not None
    assert remote[2].hack_check == local_results[2].hack_check is not None


def test_ray_worker_killed_mid_evaluation_is_retried(local_ray, local_results, markers: Path) -> None:
    from hipforge.execution.pool.ray_pool import RayPool

    for old in markers.glob("*"):
        old.unlink()
    results = answered(RayPool(FAST, slots=1, work=dies_first_time))
    attempts = sorted(markers.glob("attempt-*"))
    assert [a.name.split("-pid-")[0] for a in attempts] == ["attempt-0", "attempt-1"]
    assert attempts[0].name.split("-pid-")[1] != attempts[1].name.split("-pid-")[1]  # a fresh worker took it
    assert {i: r.verdict for i, r in results.items()} == {i: r.verdict for i, r in local_results.items()}


def test_local_worker_killed_mid_evaluation_is_retried(local_results, markers: Path, monkeypatch) -> None:
    for old in markers.glob("*"):
        old.unlink()
    monkeypatch.setenv("HIPFORGE_POOL_TEST_MARKERS", str(markers))
    pool = LocalPool(FAST, slots=1, workers=2, work=dies_first_time)  # two worker processes on cpu
    try:  # the static hack needs no sandbox: one worker process pays for one, not both
        results = answered(pool, [ITEMS[VICTIM], ITEMS[2]])
    finally:
        pool.close()
    attempts = sorted(markers.glob("attempt-*"))
    assert len(attempts) == 2 and attempts[0].name.split("-pid-")[1] != attempts[1].name.split("-pid-")[1]
    assert [results[0].verdict, results[1].verdict] == [local_results[VICTIM].verdict, local_results[2].verdict]


def test_an_item_that_kills_every_worker_comes_back_lost(local_ray) -> None:
    from hipforge.execution.pool.ray_pool import RayPool

    results = answered(RayPool(FAST, slots=1, max_retries=1, work=always_dies))
    assert results[VICTIM].verdict == Verdict.RUNTIME_ERROR and results[VICTIM].phase == "pool"
    assert "all 2 attempts" in results[VICTIM].message
    assert results[0].verdict == Verdict.CORRECT


def test_pool_settings_are_checked(local_ray) -> None:
    with pytest.raises(ValueError, match="pool must be one of"):
        make_pool("threads", FAST)
    with pytest.raises(RuntimeError, match="the Ray cluster .local. has none"):
        make_pool("ray", EvalConfig(backend="cuda", arch="sm_90"))  # the local Ray has no GPU
    pool = make_pool("ray", FAST)
    pool.close()
    assert ray.is_initialized()  # a Ray the pool did not start is not the pool's to shut down
