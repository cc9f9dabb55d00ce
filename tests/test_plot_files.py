"""Plots as files (issue 22, item 6): each plot of a materialization is written under plots/ beside the warehouse,
per asset, partition and run, its path in the metadata beside the inline image; older runs' folders are pruned."""

import os
from pathlib import Path

import dagster as dg

from hip_assets.plot_metadata import plot_metadata
from hipforge.plots import KEEP_RUNS, new_figure, run_plot_folder, to_png
from hipforge.store import Warehouse


def _png() -> bytes:
    fig, ax = new_figure(2, 1.5)
    ax.plot([0, 1], [1, 0])
    return to_png(fig)


def _toy_asset(db: Path) -> dg.AssetsDefinition:
    @dg.asset(partitions_def=dg.StaticPartitionsDefinition(["checkpoint:ck-1", "offline-agents"]))
    def toy(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        store = Warehouse(db)
        return dg.MaterializeResult(metadata={**plot_metadata(context, store, "roofline L1", _png(), "roofline"),
                                              **plot_metadata(context, store, "empty", None, "nothing")})

    return toy


def test_a_plot_is_a_file_per_asset_partition_and_run_and_an_inline_image(tmp_path: Path) -> None:
    toy = _toy_asset(tmp_path / "w.duckdb")
    with dg.instance_for_test() as instance:
        first = dg.materialize([toy], partition_key="checkpoint:ck-1", instance=instance)
        second = dg.materialize([toy], partition_key="checkpoint:ck-1", instance=instance)
    paths = []
    for result in (first, second):
        meta = result.asset_materializations_for_node("toy")[0].metadata
        assert meta["roofline L1"].value.startswith("![roofline](data:image/png;base64,")
        assert "empty" not in meta and "empty_file" not in meta  # no plot, no entries
        paths.append(Path(meta["roofline L1_file"].value))
    # ':' and ' ' do not make it into names; the second run wrote beside the first, not over it
    assert paths[0] == tmp_path / "plots" / "toy" / "checkpoint_ck-1" / first.run_id / "roofline_L1.png"
    assert paths[1].parent.name == second.run_id and all(p.read_bytes().startswith(b"\x89PNG") for p in paths)


def test_only_the_newest_runs_plot_folders_are_kept(tmp_path: Path) -> None:
    """A re-materialization adds its run's folder and removes the oldest beyond KEEP_RUNS (by modification time)."""
    partition = tmp_path / "kernel_archive" / "_"
    for i in range(KEEP_RUNS + 3):  # run-0 is the oldest
        (partition / f"run-{i}").mkdir(parents=True)
        (partition / f"run-{i}" / "speedups.png").write_bytes(b"png")
        os.utime(partition / f"run-{i}", (1_000_000 + i, 1_000_000 + i))
    assert run_plot_folder(tmp_path, "kernel_archive", None, "run-new") == partition / "run-new"
    newest_old = [f"run-{i}" for i in range(4, KEEP_RUNS + 3)]  # the newest KEEP_RUNS - 1 of the old ones
    assert sorted(d.name for d in partition.iterdir()) == sorted(["run-new", *newest_old])
    run_plot_folder(tmp_path, "kernel_archive", "offline-agents", "run-x")  # another partition keeps its own
    assert len(list(partition.iterdir())) == KEEP_RUNS


def test_a_checkpoints_headline_numbers_are_numeric_metadata() -> None:
    """Dagster plots int and float metadata over materializations, not numbers inside a JSON blob."""
    from hip_assets.training.assets import headline_numbers

    metrics = {"steps": 4, "seconds": 2.5, "records": 3, "hyperparameters": {"lr": 1e-4}, "smoothing_clipped": True}
    numbers = headline_numbers(metrics, {"loss": [(1, 2.0), (4, 0.5)], "reward": []})
    assert {k: type(v).__name__ for k, v in numbers.items()} == {
        "steps": "IntMetadataValue", "seconds": "FloatMetadataValue", "records": "IntMetadataValue",
        "final_loss": "FloatMetadataValue"}
    assert numbers["final_loss"].value == 0.5
