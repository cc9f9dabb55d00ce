"""The llm_calls table read back: what a run's LLM calls cost, per agent and model (CallLog writes the rows)."""

from __future__ import annotations

from typing import Any

from hipforge.store.warehouse import Warehouse


def call_summary(warehouse: Warehouse, run_id: str) -> list[dict[str, Any]]:
    """Per agent and model of one run: calls, cache hits, failed calls, retries (requests beyond each call's
    first), tokens, cost and mean latency."""
    if not warehouse.path.exists():
        return []
    with warehouse.connect(read_only=True) as con:
        cursor = con.execute(
            "SELECT agent, provider, model, count(*) AS calls, count(*) FILTER (WHERE cached) AS cached, "
            "count(*) FILTER (WHERE error IS NOT NULL) AS failed, "
            "coalesce(sum(greatest(attempts - 1, 0)), 0) AS retries, coalesce(sum(input_tokens), 0) AS input_tokens, "
            "coalesce(sum(output_tokens), 0) AS output_tokens, coalesce(sum(cost_usd), 0) AS cost_usd, "
            "round(avg(latency_s), 3) AS mean_latency_s FROM llm_calls WHERE run_id = ? "
            "GROUP BY agent, provider, model ORDER BY agent, provider, model", [run_id])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
