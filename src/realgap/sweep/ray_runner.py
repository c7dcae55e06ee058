"""Run a sweep on Ray: one task per training run, then one per evaluation.

The only module that imports Ray (the optional ``realgap[sweep]`` extra). Local by
default (``ray.init()`` on this machine's cores); ``address`` joins a running
cluster (``ray start --head`` on one machine, ``ray start --address HEAD:6379`` on
the others; on Kubernetes, KubeRay's RayCluster). Each task asks Ray for
``cpus_per_run`` CPUs, so Ray, not realgap, decides what runs where and when.

Resumable by construction: a job whose result file exists (same arguments, same
folder name) is reused, not rerun; an unfinished folder is run again. A job that
fails is retried ``retries`` times, then reported in ``failed.json`` and the
summary; it never silently disappears.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import ray
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from realgap.errors import RealgapError
from realgap.sweep import jobs
from realgap.sweep.spec import SweepSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SweepOptions:
    address: str | None = None
    """A running Ray cluster ("auto", "HOST:6379" or "ray://HOST:10001"); None: local."""
    cpus_per_run: float = 1.0
    """CPUs Ray reserves for each training or evaluation task."""
    num_cpus: int | None = None
    """Local Ray only: how many of this machine's cores Ray may use (None: all)."""
    retries: int = 1
    """Retries of a failed job before it is reported failed."""
    quick: bool = False
    """Tiny training runs (``--quick``): tests and dry runs, not useful policies."""
    progress: bool = True


def run_sweep(spec: SweepSpec, root: str | Path, options: SweepOptions) -> dict[str, str]:
    """Train and evaluate every run not already finished; returns failed runs -> error."""
    root = Path(root)
    (root / "runs").mkdir(parents=True, exist_ok=True)
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(
            address=options.address,
            num_cpus=None if options.address else options.num_cpus,
            include_dashboard=False,
            logging_level=logging.WARNING,
            log_to_driver=False,
        )
    try:
        return _schedule(spec, root, options)
    finally:
        if started_here:
            ray.shutdown()


def _schedule(spec: SweepSpec, root: Path, options: SweepOptions) -> dict[str, str]:
    train = ray.remote(num_cpus=options.cpus_per_run, max_retries=0)(jobs.train_run)
    evaluate = ray.remote(num_cpus=options.cpus_per_run, max_retries=0)(jobs.eval_run)
    runs = {run.folder_name: run for run in spec.runs()}
    folders = {name: root / "runs" / name for name in runs}
    pending: dict = {}  # ObjectRef -> (kind, run name, world, attempt)
    failed: dict[str, str] = {}
    evals_left = {
        name: [w for w in spec.worlds if not jobs.evaluation_file(folders[name], w).exists()]
        for name in runs
    }
    total = sum(1 + len(spec.worlds) for _ in runs)
    done = sum(len(spec.worlds) - len(left) for left in evals_left.values())

    def submit_eval(name: str, world: str, attempt: int = 0) -> None:
        ref = evaluate.remote(
            str(folders[name]), world, spec.trials, runs[name].seed, speed=spec.speed
        )
        pending[ref] = ("eval", name, world, attempt)

    def submit_train(name: str, attempt: int = 0) -> None:
        pending[train.remote(runs[name], str(folders[name]), options.quick)] = (
            "train",
            name,
            None,
            attempt,
        )

    for name in runs:
        if (folders[name] / jobs.TRAINED).exists():
            done += 1
            for world in evals_left[name]:
                submit_eval(name, world)
        elif evals_left[name]:
            submit_train(name)
        else:
            done += 1
    columns = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} jobs"),
        TextColumn("{task.fields[state]}"),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, disable=not options.progress, transient=False) as progress:
        bar = progress.add_task(spec.name, total=total, completed=done, state="")
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            kind, name, world, attempt = pending.pop(ref)
            try:
                ray.get(ref)
            except Exception as error:  # a worker's exception, or a lost worker
                message = f"{kind} {name}{' in ' + world if world else ''}: {_short(error)}"
                # Bad input fails the same way every time: retry only the rest.
                bad_input = isinstance(getattr(error, "cause", None), RealgapError)
                if attempt < options.retries and not bad_input:
                    log.warning("retrying after failure: %s", message)
                    if kind == "train":
                        submit_train(name, attempt + 1)
                    else:
                        submit_eval(name, world, attempt + 1)
                    continue
                failed[name] = message
                # A run that cannot train cannot be evaluated: count its evaluations done.
                progress.advance(bar, 1 + (len(evals_left[name]) if kind == "train" else 0))
            else:
                progress.advance(bar, 1)
                if kind == "train":
                    for target in evals_left[name]:
                        submit_eval(name, target)
            progress.update(bar, state=f"{len(pending)} queued or running, {len(failed)} failed")
    (root / "failed.json").write_text(json.dumps(failed, indent=2))
    return failed


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[-1] if text else type(error).__name__
