"""Benchmark: can a Stack student see where the expert is going?

Usage: python benchmarks/bench_stack_views.py POLICY [--steps 240] [--seed 123]

The student is memoryless: it sees one 16x16 wrist image and 12 joint numbers. While
it carries the cube, the lower object is often outside the wrist camera's view, and
then the expert's label (which way to carry) cannot be read off what the student
sees. This rolls the student in the nominal sim (the scripted expert labels every
state, as in DAgger) and, for the carry phase, bins the states by the cube's distance
from above the lower object and by whether the lower object shows in the image
(nominal colours: a pixel clearly bluer than red and green). It prints how far the
student's arm actions are from the expert's labels in each bin, beside the labels'
own size, and the same visibility for the expert's own carries, with how many steps
ago the lower object was last in view in that episode (what a memory could recall)
and by which way the jaws' camera side points.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

BINS_M = [(0.0, 0.02), (0.02, 0.04), (0.04, 0.07), (0.07, 0.10), (0.10, 0.30)]
RECALL_STEPS = (3, 10, 30)
NEVER = 10**6  # steps since the lower object was seen, before its first sighting
CARRY = 3  # ScriptedController.phases: carrying the grasped cube


def lower_object_visible(images: np.ndarray) -> np.ndarray:
    """Whether any pixel of each image (n, H, W, 3) shows the nominal blue lower object."""
    pixels = images.astype(int)
    blueness = pixels[..., 2] - np.maximum(pixels[..., 0], pixels[..., 1])
    return blueness.max(axis=(1, 2)) > 40


def distance_bins(rows: np.ndarray):
    """(label, mask) for each ``BINS_M`` bin of the rows' distance column that holds any."""
    for low, high in BINS_M:
        inside = (rows[:, 0] >= low) & (rows[:, 0] < high)
        if inside.any():
            yield f"{low * 100:.0f}-{high * 100:.0f} cm", inside


def camera_side_off(env, expert, state) -> np.ndarray:
    """Degrees, horizontally, between the jaws' +y axis and the way from the pinch point
    to the lower object."""
    xmat = env.batch.bind("xmat")[:, expert.gripper_body].reshape(-1, 3, 3)
    side = xmat[:, :2, 1]
    way = state.target_pos[:, :2] - state.pinch[:, :2]
    cosine = (side * way).sum(axis=1) / (
        np.linalg.norm(side, axis=1) * np.linalg.norm(way, axis=1) + 1e-9
    )
    return np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))


def carry_states(env, expert, act, steps: int, seed: int) -> np.ndarray:
    """Rows (distance m, visible, mean |action - label|, mean |label|, steps since the
    lower object was last in view in this episode, degrees between the jaws' +y (the
    side the wrist camera looks towards) and the way to the lower object) over carry
    states."""
    obs, _ = env.reset(seed=seed)
    rows = []
    last_seen = np.full(env.num_envs, -NEVER)
    for step in range(steps):
        state = env.sim_state()
        grasp_point, hover = expert.approach(state)
        phase = expert.phases(state, grasp_point, hover)
        label = expert.act()
        action = label if act is None else act(obs)
        distance, _ = env.task.stack_error(state)
        visible = lower_object_visible(obs["image"])
        last_seen[visible] = step
        error = np.abs(action[:, :4] - label[:, :4]).mean(axis=1)
        size = np.abs(label[:, :4]).mean(axis=1)
        off = camera_side_off(env, expert, state)
        for i in np.flatnonzero(phase == CARRY):
            rows.append((distance[i], visible[i], error[i], size[i], step - last_seen[i], off[i]))
        obs, _, terminated, truncated, _ = env.step(action)
        last_seen[terminated | truncated] = -NEVER
    return np.array(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy", type=Path)
    parser.add_argument("--steps", type=int, default=240)
    parser.add_argument("--seed", type=int, default=123)
    args = parser.parse_args()

    from realgap.runtime import configure_rendering, configure_torch_threads

    configure_rendering()
    configure_torch_threads()
    from realgap.policy.checkpoint import load_policy
    from realgap.sim.batched_env import BatchedEnv
    from realgap.sim.scripted import ScriptedController
    from realgap.train.common import policy_actor

    policy, contract = load_policy(args.policy)
    policy.eval()
    runs = {}
    for who in ("student", "expert"):
        env = BatchedEnv(contract.task, 32, seed=args.seed)
        act = policy_actor(policy, env) if who == "student" else None
        try:
            runs[who] = carry_states(env, ScriptedController(env), act, args.steps, args.seed)
        finally:
            env.close()

    print(f"{contract.task}: carry states, arm joints' mean |student - expert label|")
    print("distance | lower object | student's states | |student - label| | |label|")
    student = runs["student"]
    for distance, inside_bin in distance_bins(student):
        for visible in (False, True):
            inside = inside_bin & (student[:, 1] == visible)
            if inside.any():
                print(
                    f"{distance} | {'seen' if visible else 'unseen'} | "
                    f"{inside.sum()} | {student[inside, 2].mean():.2f} | "
                    f"{student[inside, 3].mean():.2f}"
                )
    print("\nthe expert's own carries: the lower object in view now, and last in view")
    print("within N steps in this episode (what a memory could recall)")
    recall = " | ".join(f"within {n}" for n in RECALL_STEPS)
    print(f"distance | states | in view | {recall} | not yet seen")
    expert = runs["expert"]
    for distance, inside in distance_bins(expert):
        since = expert[inside, 4]
        shares = " | ".join(f"{(since <= n).mean():.0%}" for n in RECALL_STEPS)
        print(
            f"{distance} | {inside.sum()} | "
            f"{expert[inside, 1].mean():.0%} | {shares} | {(since >= NEVER).mean():.0%}"
        )
    print("\nthe expert's own carries by which way the jaws' +y (the camera's side) points")
    print("against the way to the lower object")
    print("distance | within 90 deg of it: states, in view | further: states, in view")
    for distance, inside in distance_bins(expert):
        towards = inside & (expert[:, 5] <= 90)
        away = inside & (expert[:, 5] > 90)
        cells = [
            f"{part.sum()}, {expert[part, 1].mean():.0%}" if part.any() else "0, -"
            for part in (towards, away)
        ]
        print(f"{distance} | {cells[0]} | {cells[1]}")


if __name__ == "__main__":
    main()
