"""What every asset that ran agents says about them: which agent ran on what, and this run's LLM calls."""

import dagster as dg

from hipforge.store import Warehouse
from hipforge.store.calls import call_summary
from resources.llm import LLMResource


def llm_metadata(llm: LLMResource, store: Warehouse, run_id: str) -> dict[str, dg.MetadataValue]:
    """Which agent ran on what, and this run's LLM calls per agent: retries, cache hits, tokens, cost."""
    calls = call_summary(store, run_id)
    rows = "\n".join(f"| {c['agent']} | {c['model']} | {c['calls']} | {c['cached']} | {c['failed']} | {c['retries']} | "
                     f"{c['input_tokens']} | {c['output_tokens']} | {c['cost_usd']:.4f} |" for c in calls)
    head = "| agent | model | calls | cached | failed | retries | input tokens | output tokens | USD |\n" + "|---" * 9
    return {
        "agents": dg.MetadataValue.json(llm.choices()),
        "llm_cache": dg.MetadataValue.text(llm.cache),
        "llm_calls": dg.MetadataValue.md(f"{head}|\n{rows}" if rows else "none"),
        "llm_cost_usd": dg.MetadataValue.float(round(sum((c["cost_usd"] for c in calls), 0.0), 6)),
    }
