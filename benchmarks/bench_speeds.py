"""Benchmark: policies at deploy speeds, in the sim and on fake arms (matched evaluation).

Usage:
    python benchmarks/bench_speeds.py POLICY [POLICY ...] [--worlds sim typical_so101
        reference_pitfalls] [--speeds 15x0.15 15x0.6] [--trials 39] [--json out.json]

For every policy, every speed (``HZxFRACTION``: the reference's 15 Hz x 0.15 and the
fastest the safety layer allows, 15 Hz x 0.6, by default) and every world (the nominal
sim at that speed, or a fake arm with a shipped or TOML profile), runs the matched
evaluation on the task's default layout and prints the in-distribution success with its
Wilson 95% interval, and each arm's gap to the sim at the same speed with a Newcombe
interval. Speeds outside a policy's trained range are forced (marked ``*``). Fake-arm
cameras are locked in a temporary folder first, as ``realgap camera lock`` would.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def parse_speed(text: str):
    from realgap.speed import DeploySpeed

    hz, fraction = text.lower().split("x")
    return DeploySpeed(float(hz), float(fraction))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policies", nargs="+", type=Path)
    parser.add_argument(
        "--worlds", nargs="+", default=["sim", "typical_so101", "reference_pitfalls"]
    )
    parser.add_argument("--speeds", nargs="+", default=["15x0.15", "15x0.6"])
    parser.add_argument("--trials", type=int, default=39)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write every result here")
    args = parser.parse_args()

    from realgap.runtime import configure_rendering, configure_torch_threads

    configure_rendering()
    configure_torch_threads()
    from realgap.bridge.camera_lock import lock_camera
    from realgap.bridge.env import DeployConfig
    from realgap.bridge.worlds import at_start_pose, open_fake_world
    from realgap.eval.layout import load_layout
    from realgap.eval.matched import evaluate
    from realgap.eval.stats import difference
    from realgap.policy.checkpoint import load_contract

    cameras = Path(tempfile.mkdtemp()) / "cameras"
    rows = []
    print("policy | task | speed | world | success (Wilson 95%) | gap to sim (Newcombe 95%) | s")
    for folder in args.policies:
        contract = load_contract(folder)
        trained = contract.trained_speeds
        layout = load_layout(None).for_task(contract.task)
        for text in args.speeds:
            speed = parse_speed(text)
            forced = trained is None or not trained.covers(speed)
            sim_overall = None
            for world in args.worlds:
                started = time.perf_counter()
                if world == "sim":
                    result = evaluate(
                        folder, "sim", layout, args.trials, seed=args.seed, speed=speed
                    )
                else:
                    fake = open_fake_world(contract.task, world, seed=args.seed)
                    with at_start_pose(fake):
                        lock_camera(fake.camera, folder=cameras)
                    config = DeployConfig(
                        control_hz=speed.control_hz,
                        action_scale=speed.action_fraction,
                        force_speed=True,
                        lock_folder=cameras,
                    )
                    result = evaluate(
                        folder,
                        "fake",
                        layout,
                        args.trials,
                        open_world=lambda task, w=world: open_fake_world(task, w, seed=args.seed),
                        deploy_config=config,
                        seed=args.seed,
                    )
                overall = result["overall"]
                gap = None
                if world == "sim":
                    sim_overall = overall
                elif sim_overall is not None:
                    gap = difference(sim_overall, overall)
                seconds = time.perf_counter() - started
                low, high = overall["ci95"]
                gap_text = (
                    "-"
                    if gap is None
                    else (f"{gap['gap']:+.0%} ({gap['ci95'][0]:+.0%} to {gap['ci95'][1]:+.0%})")
                )
                print(
                    f"{folder} | {contract.task} | {speed.describe()}{'*' if forced else ''}"
                    f" | {world} | {overall['success_rate']:.0%} ({low:.0%}-{high:.0%}, "
                    f"{overall['successes']}/{overall['trials']}) | {gap_text} | {seconds:.0f}",
                    flush=True,
                )
                rows.append(
                    {
                        "policy": str(folder),
                        "task": contract.task,
                        "speed": text,
                        "forced": forced,
                        "world": world,
                        "overall": overall,
                        "gap": gap,
                        "seconds": round(seconds, 1),
                    }
                )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
