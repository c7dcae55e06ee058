"""What one sweep worker does: train one run, or evaluate one run's policy in one world.

Plain functions over folders (no Ray here), so they run and test the same in a Ray
worker, a subprocess or a test. Each writes its result file last: a folder without
it is unfinished, and a resumed sweep does that job again.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from realgap.bridge.camera_lock import lock_camera
from realgap.bridge.env import DeployConfig
from realgap.bridge.worlds import at_start_pose, open_fake_world
from realgap.eval.layout import load_layout
from realgap.eval.matched import evaluate
from realgap.runs import RunFolder
from realgap.runtime import configure_rendering, configure_torch_threads
from realgap.sim.calibration import load_twin
from realgap.speed import DeploySpeed
from realgap.sweep.spec import Run
from realgap.train import distill, sac
from realgap.train.checkpoint import Checkpointer

TRAINED = "trained.json"
"""Written last by a finished training run."""


def world_slug(world: str) -> str:
    """A file-name-safe form of a world name (a profile path, twin:PATH)."""
    text = world.replace("twin:", "twin_")
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in Path(text).stem or text)


def evaluation_file(folder: Path, world: str) -> Path:
    return Path(folder) / f"result_{world_slug(world)}.json"


def train_run(run: Run, folder: str | Path, quick: bool = False) -> dict:
    """Train ``run`` into ``folder/train``; writes ``folder/trained.json`` at the end."""
    configure_rendering()
    configure_torch_threads()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps({**run.definition(), "quick": quick}, indent=2))
    randomization = None
    widths = run.randomization()
    if widths:
        path = folder / "randomization.toml"
        path.write_text("[randomization]\n" + "".join(_toml_line(k, v) for k, v in widths.items()))
        randomization = str(path)
    # A training a crash or a stopped sweep left half done continues from its checkpoint.
    interrupted = Checkpointer(RunFolder(folder / "train")).exists()
    common = {
        "out": str(folder / "train"),
        "seed": run.seed,
        "randomization": randomization,
        "progress": False,
        "resume": interrupted and not (folder / "train" / "summary.json").exists(),
    }
    started = time.perf_counter()
    if run.recipe == "sac":
        args = sac.args_for_device("cpu", task=run.task, **(sac.QUICK if quick else {}))
        args = replace(args, **{**run.args_fields(), **common})
        summary = sac.main(args)
    else:
        # The run's own fields over --quick's (a sweep may set dagger_rounds, say).
        fields = {**(distill.QUICK if quick else {}), **run.args_fields(), **common}
        args = distill.args_for_task(run.task, **fields)
        summary = distill.main(args)
    result = {**summary, "wall_seconds": round(time.perf_counter() - started, 1)}
    (folder / TRAINED).write_text(json.dumps(result, indent=2))
    return result


def eval_run(folder: str | Path, world: str, trials: int, seed: int = 0, speed=None) -> dict:
    """Matched evaluation of ``folder``'s policy in ``world`` (``sim``, a fake-arm
    profile or ``twin:PATH``), at ``speed`` (Hz, action fraction) when given; writes
    ``result_<world>.json`` at the end."""
    at = None if speed is None else DeploySpeed(*speed)
    configure_rendering()
    configure_torch_threads()
    folder = Path(folder)
    policy = folder / "train" / "policy"
    layout = load_layout()
    out = folder / "eval" / world_slug(world)
    started = time.perf_counter()
    if world == "sim" or world.startswith("twin:"):
        twin = load_twin(world[len("twin:") :]) if world.startswith("twin:") else None
        result = evaluate(
            policy,
            "sim",
            layout,
            trials,
            seed=seed,
            out=out,
            twin=twin,
            earlier="overwrite",
            speed=at,
        )
    else:
        task = json.loads((folder / "run.json").read_text())["task"]
        cameras = out / "cameras"
        fake = open_fake_world(task, world, seed=seed)
        with at_start_pose(fake):
            lock_camera(fake.camera, folder=cameras)
        result = evaluate(
            policy,
            "fake",
            layout,
            trials,
            open_world=lambda task_name: open_fake_world(task_name, world, seed=seed),
            deploy_config=DeployConfig(
                control_hz=None if at is None else at.control_hz,
                action_scale=None if at is None else at.action_fraction,
                force_speed=at is not None,
                lock_folder=cameras,
            ),
            seed=seed,
            out=out,
            earlier="overwrite",
        )
    overall = result["overall"]
    summary = {
        "world": world,
        "successes": overall["successes"],
        "trials": overall["trials"],
        "success_rate": overall["success_rate"],
        "failures": overall["failures"],
        "seconds": round(time.perf_counter() - started, 1),
    }
    evaluation_file(folder, world).write_text(json.dumps(summary, indent=2))
    return summary


def _toml_line(key: str, value) -> str:
    """One ``key = value`` line (numbers, or [low, high] pairs of numbers)."""
    if isinstance(value, list):
        return f"{key} = [{', '.join(repr(v) for v in value)}]\n"
    return f"{key} = {value!r}\n"
