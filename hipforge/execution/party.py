"""One side of an evaluation as the judge sees it: a job in a sandbox, asked one message at a time, and what
its failure, silence or death means for the verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hipforge.execution.verdict import Concluded, EvalResult, Verdict, conclude
from hipforge.sandbox.client import Session


@dataclass
class Party:
    """One side of the evaluation as the parent sees it: its session and the phase deadline."""

    session: Session
    name: str
    phase: str = "compile"
    deadline: float = 0.0
    stuck: bool = False  # missed its deadline: asking it to quit would only wait

    def ask(self, message: dict[str, Any], expect: str) -> dict[str, Any]:
        if not self.session.send(message):
            raise self.lost()
        return self.expect(expect)

    def expect(self, kind: str) -> dict[str, Any]:
        return self.interpret(self.session.next(self.deadline), kind)

    def interpret(self, event: dict[str, Any] | None, kind: str) -> dict[str, Any]:
        """The event if it is the one expected; a verdict if it says the job failed, timed out or died."""
        if event is None:
            self.stuck = True
            raise Concluded(EvalResult(Verdict.TIMEOUT, f"the {self.name} did not finish the {self.phase} phase in "
                                                        f"time (the sandbox and everything it started were killed)",
                                       phase=self.phase))
        if event.get("event") == "failed":
            fields = {k: v for k, v in event.items() if k in ("compile_log", "traceback", "failing_seed", "hack_check")}
            verdict = Verdict(event.get("verdict", "runtime_error"))
            raise conclude(verdict, event.get("message", "failed"), phase=self.phase, **fields)
        if event.get("event") == "exit":
            raise self.lost()
        if event.get("event") != kind:
            raise conclude(Verdict.RUNTIME_ERROR, f"the {self.name} answered {event.get('event')!r}, not {kind!r}",
                           phase=self.phase)
        return event

    def lost(self) -> Concluded:
        exit_ = self.session.exit or self.session.wait_exit(10) or {}
        if exit_.get("memory"):
            why = "ran out of memory (killed: resident memory over its limit)"
        elif "signal" in exit_:
            why = f"crashed with {exit_['signal']}"
        else:
            why = f"exited (status {exit_.get('code', '?')}) before answering"
        return conclude(Verdict.RUNTIME_ERROR, f"the {self.name} {why} during the {self.phase} phase", phase=self.phase)
