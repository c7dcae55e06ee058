"""``realgap bench``: measured figures (never pass/fail)."""

from __future__ import annotations

import json
from pathlib import Path

from realgap.errors import ConfigError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench", help="measure env throughput (bench sim) and policy latency (bench policy)"
    )
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    sim = sub.add_parser("sim", help="env control steps per second, with and without images")
    sim.add_argument("--task", default="PickCube")
    sim.add_argument("--envs", type=int, default=64)
    sim.add_argument("--res", type=int, default=16, help="policy image resolution")
    sim.add_argument("--steps", type=int, default=50, help="control steps to time")
    sim.add_argument("--json", type=Path, help="write the result as JSON here")
    sim.set_defaults(func=run_sim)
    policy = sub.add_parser("policy", help="per-decision CPU latency of an exported policy")
    policy.add_argument("dir", type=Path, help="policy folder (or run folder with policy/)")
    policy.add_argument("--decisions", type=int, default=2000)
    policy.add_argument("--json", type=Path, help="write the result as JSON here")
    policy.set_defaults(func=run_policy)


def run_policy(args) -> int:
    from realgap.cli.export import policy_folder
    from realgap.policy.onnx_policy import measure_latency

    folder = policy_folder(args.dir)
    result = measure_latency(folder, args.decisions)
    print(
        f"{folder}: {result['parameters']:,} parameters, {result['mean_ms']:.3f} ms per decision "
        f"(p99 {result['p99_ms']:.3f} ms) on CPU with onnxruntime, 1 thread"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


def run_sim(args) -> int:
    from realgap.sim.bench import bench_sim

    if args.envs < 1 or args.steps < 1:
        raise ConfigError("--envs and --steps must be >= 1")
    result = bench_sim(args.task, args.envs, args.res, args.steps)
    print(
        f"{result['task']}: {result['envs']} envs, {result['res']}x{result['res']} images: "
        f"{result['steps_per_s_image']:.0f} steps/s with images, "
        f"{result['steps_per_s_state']:.0f} state-only"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0
