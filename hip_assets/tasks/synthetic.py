"""Synthetic tasks: mutation, composition and constraint generation, sanity-checked into the warehouse."""

from typing import Literal

import dagster as dg
from pydantic import Field

from hip_assets.plot_metadata import plot_metadata
from hip_assets.run_links import run_metadata, table
from hip_assets.tasks.assets import kernelbench_tasks, reference_tasks
from hipforge.llm import CallLog, LLMClient, ResponseCache, default_cache_dir, make_provider
from hipforge.store import Warehouse
from hipforge.tasks.synth import (
    DEFAULT_THRESHOLD,
    MODES,
    PRESETS,
    SynthConfig,
    SynthSummary,
    load_seeds,
    synthesize,
)
from hipforge.tasks.synth.distribution import cost_scatter, distribution_table, operator_table
from resources.warehouse import WarehouseResource

GROUP = "tasks"


class SyntheticTasksConfig(dg.Config):
    preset: Literal["embedded", "production", "corpus"] = Field(
        default="embedded",
        description="embedded: 8 tasks per mode; production: 500 in all, as in the seed; corpus: 5,100 "
        "(2,500 composition, 1,100 mutation, 1,500 constraint) for a training corpus",
    )
    composition: int | None = Field(default=None, description="accepted compositions wanted (None: preset)")
    mutation: int | None = Field(default=None, description="accepted mutations wanted (None: preset)")
    constraint: int | None = Field(
        default=None, description="accepted constraint tasks wanted (None: preset)"
    )
    seed: int = Field(default=0, description="the same seed and seed tasks give the same sources")
    near_duplicate_threshold: float = Field(
        default=DEFAULT_THRESHOLD, description="similarity at or above which a task is a near-duplicate"
    )
    kernelbench_seeds: bool = Field(
        default=True, description="also mutate accepted KernelBench tasks, if stored"
    )
    llm: bool = Field(
        default=False, description="have an LLM write the modules (offline generators otherwise)"
    )
    llm_provider: Literal["gemini", "openai", "transformers"] = "gemini"
    llm_model: str = "gemini-2.5-flash"
    llm_base_url: str | None = Field(default=None, description="for an openai-compatible server")
    workers: int = Field(default=2, description="parallel sandbox workers (the corpus preset wants one per core)")

    def synth_config(self) -> SynthConfig:
        counts = {
            mode: getattr(self, mode) if getattr(self, mode) is not None else PRESETS[self.preset][mode]
            for mode in MODES
        }
        return SynthConfig(counts, self.seed, self.near_duplicate_threshold, workers=self.workers)

    def client(self, warehouse: Warehouse, run_id: str) -> LLMClient:
        provider = make_provider(self.llm_provider, self.llm_model, base_url=self.llm_base_url)
        return LLMClient(
            provider, ResponseCache(default_cache_dir()), CallLog(warehouse, run_id, "task_generator")
        )


def _metadata(summary: SynthSummary, config: SyntheticTasksConfig) -> dict[str, dg.MetadataValue]:
    modes = [{"mode": mode, "accepted": c["accepted"], "rejected": c["rejected"]}
             for mode, c in summary.per_mode().items()]
    rejections = [{"task": name, "code": r.code, "reason": r.message[:300]} for name, r in summary.rejections()]
    accepted = sum(o.accepted for o in summary.outcomes)
    return {
        "accepted": dg.MetadataValue.int(accepted),
        "rejected": dg.MetadataValue.int(len(summary.outcomes) - accepted),
        "per_mode": table(modes, empty="none"),
        "per_mode_counts": dg.MetadataValue.json(summary.per_mode()),
        "reject_codes": dg.MetadataValue.json(dict(summary.reject_codes())),
        "rejections": table(rejections, empty="none"),
        "new_rows": dg.MetadataValue.int(summary.new_rows),
        "lineage_edges": dg.MetadataValue.int(summary.edges),
        "seconds": dg.MetadataValue.float(round(summary.seconds, 1)),
        "seed": dg.MetadataValue.int(config.seed),
        "near_duplicate_threshold": dg.MetadataValue.float(config.near_duplicate_threshold),
        "writer": dg.MetadataValue.text(config.llm_model if config.llm else "offline"),
        "distribution": dg.MetadataValue.md(distribution_table(summary.outcomes)),
        "operators_used": dg.MetadataValue.md(operator_table(summary.outcomes)),
    }




@dg.asset(
    group_name=GROUP, kinds={"python", "duckdb"}, pool="duckdb", deps=[reference_tasks, kernelbench_tasks]
)
def synthetic_tasks(
    context: dg.AssetExecutionContext, config: SyntheticTasksConfig, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """New reference tasks by mutation (of reference and KernelBench tasks), composition (of the 14 template
    operators) and constraint (spec to module), each sanity-checked; rejections are stored with reasons."""
    store = warehouse.get()
    seeds = load_seeds(store, config.kernelbench_seeds)
    context.log.info(f"{len(seeds)} seed tasks for mutation")
    llm = config.client(store, context.run.run_id) if config.llm else None
    summary = synthesize(config.synth_config(), seeds, store, context.run.run_id, llm, context.log.info)
    for name, rejection in summary.rejections():
        context.log.warning(f"rejected {name}: {rejection}")
    metadata = {**_metadata(summary, config), "mutation_seeds": dg.MetadataValue.int(len(seeds)),
                **plot_metadata(context, store, "cost_plot", cost_scatter(summary.outcomes), "synthetic task cost")}
    return dg.MaterializeResult(metadata={**metadata, **run_metadata(context)})
