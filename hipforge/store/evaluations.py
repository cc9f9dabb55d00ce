"""Stored evaluations looked up by content: what a re-run may reuse instead of evaluating again."""

from __future__ import annotations

import json
from typing import Any

from hipforge.store.warehouse import Warehouse

# verdicts that say more about the machine than the kernel are never reused
_NOT_REUSED = ("timeout",)


def stored_verdicts(warehouse: Warehouse, pairs: list[tuple[str, str]], protocol: str) -> dict[tuple[str, str],
                                                                                               tuple[str, Any]]:
    """(kernel_id, task_id) -> (eval_id, the verdict's full detail) of the latest evaluation of each pair under
    ``protocol``, for the pairs that have one (from any run, a killed one's included)."""
    if not pairs or not protocol:
        return {}
    # not read-only: a run's writers (the LLM call log's batch) may hold the file open in this process
    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT kernel_id, task_id, eval_id, detail FROM evaluations e "
            "JOIN (SELECT unnest(?) AS k, unnest(?) AS t) p ON e.kernel_id = p.k AND e.task_id = p.t "
            "WHERE protocol = ? AND NOT list_contains(?, verdict) "
            "AND coalesce(json_extract_string(detail, '$.phase'), '') <> 'pool' ORDER BY created_at",
            [[k for k, _ in pairs], [t for _, t in pairs], protocol, list(_NOT_REUSED)]).fetchall()
    return {(k, t): (eid, json.loads(detail)) for k, t, eid, detail in rows}  # the latest wins
