"""The summarizer as an asset: the warehouse's failure logs (failed evaluations' compile logs and verdict
messages, plausibility rejections) -> lessons in DuckDB and as markdown. The LLM translator and the RL
prompts read the newest through hipforge.store.lessons.latest_lessons."""

from collections import Counter
from dataclasses import asdict

import dagster as dg
from pydantic import Field

from hip_assets.llm_calls import llm_metadata
from hip_assets.plot_metadata import plot_metadata
from hip_assets.run_links import run_metadata, table
from hipforge.agents.lessons import pipeline_failures
from hipforge.agents.summarizer.offline import Lesson, summarize
from hipforge.plots import device_name, new_figure, to_png
from hipforge.store import Warehouse
from hipforge.store.evaluations import failed_backends
from hipforge.store.lessons import store_lessons
from resources.llm import LLMResource
from resources.warehouse import WarehouseResource


class LessonsConfig(dg.Config):
    max_failures: int = Field(default=2000, description="summarize the newest this many failed evaluations "
                                                        "(and as many plausibility rejections)")
    max_chars: int = Field(default=2000, description="the longest lessons text handed to prompts")


def failures_measured(warehouse: Warehouse, limit: int) -> str:
    """Where the failures were judged: compile errors and verdicts differ between backends."""
    where = [f"{n} on {backend} ({device_name(backend, arch)})"
             for backend, arch, n in failed_backends(warehouse, limit)]
    return "failed evaluations: " + (", ".join(where) if where else "none") + "; judge rejections ran nowhere"


def clusters_plot(clusters: list[Lesson], measured: str) -> bytes:
    """How many failures each lesson explains, most frequent on top; `measured` (failures_measured) names the
    backends the failures were judged on."""
    shown = clusters[:15]
    fig, ax = new_figure(8, max(2.5, 0.3 * len(shown) + 1.2))
    ax.barh([f"{c.title[:60]} ({c.verdict})" for c in shown], [c.count for c in shown], color="#e76f51")
    ax.set_xlabel("failures")
    ax.set_title(f"failure clusters behind the lessons\n{measured}", fontsize=9)
    ax.invert_yaxis()
    return to_png(fig)


@dg.asset(group_name="lessons", kinds={"python", "duckdb"}, pool="duckdb",
          deps=["translated_kernels", "evolved_kernels"])
def lessons(context: dg.AssetExecutionContext, config: LessonsConfig, warehouse: WarehouseResource,
            llm: LLMResource) -> dg.MaterializeResult:
    """Lessons from the pipeline's failures (the offline clustering summarizer, or an LLM rewriting its clusters
    into advice), stored as the newest row of the lessons table that prompts read."""
    store, run_id = warehouse.get(), context.run.run_id
    failures = pipeline_failures(store, config.max_failures)
    clusters = summarize(failures)
    log = llm.call_log(store, run_id)
    summarizer = llm.make_summarizer(log, config.max_chars)
    context.log.info(f"summarizing {len(failures)} failures in {len(clusters)} clusters with {summarizer.name}")
    with log.batch():
        text = summarizer.lessons(failures)
    store_lessons(store, text, summarizer.name, len(failures), [asdict(c) for c in clusters], run_id)
    metadata = {
        "lessons": dg.MetadataValue.md(text or "no failures to learn from"),
        "failures": dg.MetadataValue.int(len(failures)),
        "failures_by_verdict": dg.MetadataValue.json(dict(Counter(f.verdict for f in failures))),
        "clusters": table([{"failures": c.count, "verdict": c.verdict, "lesson": c.title} for c in clusters],
                          empty="none"),
        "summarizer": dg.MetadataValue.text(summarizer.name),
        **llm_metadata(llm, store, run_id),
        **run_metadata(context),
    }
    if clusters:
        png = clusters_plot(clusters, failures_measured(store, config.max_failures))
        metadata.update(plot_metadata(context, store, "clusters_plot", png, "failure clusters"))
    return dg.MaterializeResult(metadata=metadata)
