"""`hipforge eval` and `hipforge translate`: one candidate or one task through the sandboxed executor."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from hipforge.cli_inputs import CheckedTask, checked_task, fail, read_text
from hipforge.plots import CPU_SPEEDUP_CAVEAT

Backend = Annotated[str, typer.Option(help="cpu | cuda | rocm")]
Arch = Annotated[str | None, typer.Option(help="gfx950 (default), gfx942; sm_90 on cuda")]
Wavefront = Annotated[int, typer.Option(help="cpu backend warp size: 64 or 32")]
AsJson = Annotated[bool, typer.Option("--json")]


def register(app: typer.Typer, console: Console) -> None:
    def config(backend: str, arch: str | None, wavefront: int):  # noqa: ANN202
        from hipforge.execution.config import EvalConfig

        return EvalConfig(backend=backend, arch=arch or ("sm_90" if backend == "cuda" else "gfx950"),
                          wavefront=wavefront)

    def show(result, as_json: bool) -> None:  # noqa: ANN001
        from hipforge.execution.report import format_result

        if as_json:
            print(result.to_json())
        else:
            console.print(format_result(result), highlight=False, markup=False)

    def task_for(path: Path, backend: str) -> CheckedTask:
        with console.status(f"checking {path.name}: its reference runs once in the sandbox"):
            return checked_task(path, backend)

    def said(cfg, scale: str, as_json: bool) -> None:  # noqa: ANN001
        if as_json:
            return
        caveat = f"; {CPU_SPEEDUP_CAVEAT}" if cfg.backend == "cpu" else ""
        console.print(f"ran at {scale}: {len(cfg.seeds)} seeds, {cfg.timed_trials} timed trials{caveat}",
                      highlight=False, markup=False)

    @app.command("eval")
    def eval_cmd(
        candidate: Annotated[Path, typer.Argument(help="KernelBench-format HIP candidate (defines ModelNew)")],
        task: Annotated[Path, typer.Option(help="the PyTorch reference (defines Model, get_inputs ...)")],
        backend: Backend = "cpu", arch: Arch = None, wavefront: Wavefront = 64, as_json: AsJson = False,
    ) -> None:
        """Compile, check and time one candidate against its task in the sandbox; print the verdict."""
        from hipforge.execution.evaluate import evaluate

        cfg = config(backend, arch, wavefront)
        candidate_source = read_text(candidate, "candidate")  # both files are checked before anything is built
        checked = task_for(task, backend)
        with console.status(f"evaluating {candidate.name} on {backend} (build, {len(cfg.seeds)} seeds, timing)"):
            result = evaluate(candidate_source, checked.judged, cfg)
        show(result, as_json)
        said(cfg, checked.scale, as_json)
        raise typer.Exit(0 if result.verdict.value == "correct" else 2)

    @app.command("translate")
    def translate_cmd(
        task: Annotated[Path, typer.Argument(help="a PyTorch reference in KernelBench format")],
        evolve: Annotated[int, typer.Option(help="evaluations spent evolving the kernel (0: translate only)")] = 0,
        backend: Backend = "cpu", arch: Arch = None, wavefront: Wavefront = 64, as_json: AsJson = False,
    ) -> None:
        """Translate a task with the offline translator (optionally evolve it), write TASK_hip.py, print the verdict.

        On the cpu backend the kernel is checked on the task's smoke scale; it is written for the full size.
        """
        from hipforge.agents.evolver.offline import OfflineEvolver
        from hipforge.agents.runner import Sink, StageRunner, StageTask
        from hipforge.agents.translator.offline import OfflineTranslator
        from hipforge.execution.executor import LocalExecutor
        from hipforge.tasks import task_id

        checked = task_for(task, backend)
        cfg = config(backend, arch, wavefront)
        stage_task = StageTask(task_id(checked.source), task.stem, checked.source, checked.judged)
        with Progress(*Progress.get_default_columns(), console=console, transient=True) as progress:
            # the evolution's first trial is the translation again, answered from the runner's memo
            bar = progress.add_task(f"{task.name}: translating, evaluating on {backend}",
                                    total=2 + evolve if evolve else 1)
            speedups: list[float] = []

            class Bar(Sink):
                def evaluated(self, task, candidate, result, generation) -> None:  # noqa: ANN001
                    if result.verdict.value == "correct" and result.speedup_eager:
                        speedups.append(result.speedup_eager)
                    best = f", best {max(speedups):.2f}x over eager" if speedups else ""
                    progress.update(bar, advance=1, description=f"{task.name}: {result.verdict.value}{best}")

            runner = StageRunner(LocalExecutor(cfg, parallel=1), Bar())
            [chosen] = runner.translate([stage_task], OfflineTranslator())
            if chosen.candidate is None:
                fail(f"{task}: the offline translator declined it ({chosen.declined})")
            if evolve and chosen.correct:
                start = {stage_task.task_id: (chosen.candidate, chosen.result)}
                [chosen] = runner.evolve([stage_task], OfflineEvolver(budget=evolve + 1), start)  # type: ignore[dict-item]
        out = task.with_name(f"{task.stem}_hip.py")
        out.write_text(chosen.candidate.source)
        if not as_json:
            params = {k: v for k, v in chosen.candidate.params.items() if k != "kernels"}
            console.print(f"wrote {out} ({len(runner.judged)} evaluated, params {params})", highlight=False,
                          markup=False)
        show(chosen.result, as_json)
        said(cfg, checked.scale, as_json)
        raise typer.Exit(0 if chosen.result.verdict.value == "correct" else 2)
