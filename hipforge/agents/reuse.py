"""An executor that does not judge twice what it has judged: a (kernel, task) pair already evaluated under
the same protocol (hipforge.execution.protocol) comes back from the warehouse, marked ``reused_from``, so a
run killed midway and run again evaluates only what it had not finished."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hipforge.execution.executor import Executor
from hipforge.execution.record import kernel_id
from hipforge.execution.verdict import EvalResult
from hipforge.store import Warehouse
from hipforge.store.evaluations import stored_verdicts


class ReusingExecutor:
    def __init__(self, executor: Executor, warehouse: Warehouse, task_ids: dict[str, str], protocol: str) -> None:
        """``task_ids``: each task's evaluated source -> its task id (what stored evaluations are keyed by)."""
        self.executor, self.warehouse, self.task_ids, self.protocol = executor, warehouse, task_ids, protocol
        self.backend = executor.backend
        self.workers = getattr(executor, "workers", 0)  # the stage runners size their thread pools by it
        self.reused = 0

    def evaluate(self, candidate_source: str, task_source: str) -> EvalResult:
        stored = self._stored([(candidate_source, task_source)])
        return stored[0] if 0 in stored else self.executor.evaluate(candidate_source, task_source)

    def evaluate_many(self, items: Iterable[tuple[str, str]]) -> Iterator[tuple[int, EvalResult]]:
        items = list(items)
        stored = self._stored(items)
        yield from stored.items()
        fresh = [i for i in range(len(items)) if i not in stored]
        for j, result in self.executor.evaluate_many([items[i] for i in fresh]):
            yield fresh[j], result

    def _stored(self, items: list[tuple[str, str]]) -> dict[int, EvalResult]:
        keys = [(kernel_id(c), self.task_ids.get(t, "")) for c, t in items]
        found = stored_verdicts(self.warehouse, [k for k in keys if k[1]], self.protocol)
        out = {}
        for i, key in enumerate(keys):
            if key in found:
                eval_id, detail = found[key]
                out[i] = EvalResult.from_dict({**detail, "reused_from": eval_id})
        self.reused += len(out)
        return out
