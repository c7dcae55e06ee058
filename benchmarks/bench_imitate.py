"""Benchmark: per-decision latency of the imitation policies on this CPU.

The arm runs at 10-15 Hz (67-100 ms a step), so a policy must decide in a small
fraction of that. Prints, for the built-in chunked BC policy and (where LeRobot is
installed) ACT at realgap's CPU size: parameters, the time of a step that plans a
chunk, and the mean time per step over whole chunks. Quote ratios; the machine is
shared. Usage: python benchmarks/bench_imitate.py
"""

from __future__ import annotations

import time

import numpy as np
import torch

from realgap.imitate.policy import ChunkPolicy, ChunkRunner
from realgap.lerobot_api import is_available
from realgap.runtime import configure_torch_threads

STEPS = 300


def time_runner(runner, reset_every: int) -> tuple[float, float]:
    """(median ms of a planning step, mean ms per step) over ``STEPS`` steps."""
    image = np.random.default_rng(0).integers(0, 256, (16, 16, 3), dtype=np.uint8)
    state = np.zeros(12, np.float32)
    runner(image, state)  # warm up
    per_step, planning = [], []
    for step in range(STEPS):
        if step % reset_every == 0:
            runner.reset()
        started = time.perf_counter()
        runner(image, state)
        elapsed = (time.perf_counter() - started) * 1000
        per_step.append(elapsed)
        if step % reset_every == 0:
            planning.append(elapsed)
    return float(np.median(planning)), float(np.mean(per_step))


def main() -> None:
    configure_torch_threads()
    rows = []
    network = ChunkPolicy().eval()
    for steps in (1, 2, 5):
        runner = ChunkRunner(network, n_action_steps=steps)
        rows.append((f"chunk BC, play {steps}", network, *time_runner(runner, steps)))
    if is_available():
        from realgap.imitate.act import ACTLearner, ACTRunner, act_statistics

        rng = np.random.default_rng(0)
        stats = act_statistics(
            rng.integers(0, 256, (8, 16, 16, 3), dtype=np.uint8),
            rng.standard_normal((8, 12)),
            rng.standard_normal((8, 6)),
        )
        for steps in (1, 2, 5):
            learner = ACTLearner.fresh(16, 10, steps, None, stats)
            rows.append(
                (
                    f"ACT (CPU size), play {steps}",
                    learner.policy,
                    *time_runner(ACTRunner(learner), steps),
                )
            )
    else:
        print("LeRobot not installed: ACT skipped (pip install 'realgap[real]', Python >= 3.12)")
    print(f"{'policy':28s} {'parameters':>11s} {'planning step':>14s} {'mean per step':>14s}")
    for name, module, plan_ms, mean_ms in rows:
        parameters = sum(p.numel() for p in module.parameters())
        print(f"{name:28s} {parameters:>11,d} {plan_ms:>11.2f} ms {mean_ms:>11.2f} ms")
    print(f"torch threads: {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
