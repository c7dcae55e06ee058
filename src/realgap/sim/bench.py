"""Env throughput: control steps per second with and without wrist images."""

from __future__ import annotations

import time

import numpy as np

from realgap.sim.batched_env import BatchedEnv
from realgap.sim.randomization import DomainRandomization
from realgap.sim.tasks import TaskConfig, make_task


def steps_per_second(
    task: str, envs: int, res: int, images: bool, steps: int = 50, seed: int = 0
) -> float:
    """Env control steps per second (summed over envs) under random actions and full DR."""
    config = make_task(task).config_type(image_size=res) if res else TaskConfig()
    env = BatchedEnv(
        task, envs, config=config, render=images, randomization=DomainRandomization(), seed=seed
    )
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    env.step(rng.uniform(-1, 1, (envs, 6)))  # warm-up: first render builds GL state
    started = time.perf_counter()
    for _ in range(steps):
        env.step(rng.uniform(-1, 1, (envs, 6)))
    elapsed = time.perf_counter() - started
    env.close()
    return envs * steps / elapsed


def bench_sim(task: str = "PickCube", envs: int = 64, res: int = 16, steps: int = 50) -> dict:
    """The ``realgap bench sim`` result (JSON-ready)."""
    return {
        "task": task,
        "envs": envs,
        "res": res,
        "steps_per_s_image": round(steps_per_second(task, envs, res, True, steps), 1),
        "steps_per_s_state": round(steps_per_second(task, envs, res, False, steps), 1),
    }
