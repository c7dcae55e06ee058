"""Benchmark: realgap's batched env vs a peer SO-101 MuJoCo env, in one run.

Prints control steps per second (PickCube, 16x16 images and state-only) for
realgap with 64 envs and with 1 env, and -- when a Python interpreter with
``lerobot-env-so101`` installed is given -- for that package's pick-cube env
(single env, its own 16x16 front camera). The peer pins mujoco < 4, so it
lives in its own venv:

    python -m venv .venv-peer && .venv-peer/bin/pip install lerobot-env-so101
    python benchmarks/bench_sim.py --peer-python .venv-peer/bin/python
"""

from __future__ import annotations

import argparse
import json
import subprocess

from realgap.sim.bench import steps_per_second

PEER_SNIPPET = """
import json, time, numpy as np
from lerobot_env_so101 import SO101PickCubeGymEnv, GymRenderingSpec
out = {}
for images in (True, False):
    env = SO101PickCubeGymEnv(image_obs=images, render_spec=GymRenderingSpec(height=16, width=16),
                              random_block_position=True)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    env.step(env.action_space.sample())
    start = time.perf_counter()
    for _ in range(STEPS):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            env.reset()
    out["image" if images else "state"] = STEPS / (time.perf_counter() - start)
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", help="interpreter with lerobot-env-so101 installed")
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    rows = {}
    for envs in (64, 1):
        rows[f"realgap, {envs} envs"] = {
            "image": steps_per_second("PickCube", envs, 16, True, args.steps),
            "state": steps_per_second("PickCube", envs, 16, False, args.steps),
        }
    if args.peer_python:
        snippet = PEER_SNIPPET.replace("STEPS", str(args.steps * 4))
        result = subprocess.run(
            [args.peer_python, "-c", snippet],
            capture_output=True,
            text=True,
            check=True,
            env={"MUJOCO_GL": "egl", "PATH": "/usr/bin"},
        )
        rows["lerobot-env-so101 0.4.0, 1 env"] = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"{'PickCube control steps/s':34s} {'16x16 image':>12s} {'state only':>12s}")
    for name, row in rows.items():
        print(f"{name:34s} {row['image']:12.0f} {row['state']:12.0f}")


if __name__ == "__main__":
    main()
