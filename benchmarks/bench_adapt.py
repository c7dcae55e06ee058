"""Benchmark: does `realgap adapt` close the gap on fake arms it was not tuned to?

Usage: python benchmarks/bench_adapt.py POLICY [--profiles reference_pitfalls ...]
       [--trials 39] [--budget 10] [--rig rig.toml] [--out runs/bench_adapt]

For each fake arm: the whole adapt run (record, hand-eye calibration, retrain in the
arm's twin with the budget, matched before/after). Prints success inside the training
square with 95% intervals, the gain with its Newcombe interval, the twin's prediction
for the adapted policy, the calibration's errors against the profile's hidden truth
(with the reported standard deviations), and the wall time of each step.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy", type=Path)
    parser.add_argument("--profiles", nargs="+", default=["reference_pitfalls", "workbench_so101"])
    parser.add_argument("--trials", type=int, default=39)
    parser.add_argument("--budget", type=float, default=10.0, help="minutes")
    parser.add_argument("--rig", type=Path, help="rig.toml: the weighed cube (docs/adapt.md)")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_adapt"))
    args = parser.parse_args()

    from realgap.adapt.run import AdaptConfig, run_adapt
    from realgap.bridge.profile import load_profile
    from realgap.bridge.worlds import open_fake_world
    from realgap.runtime import configure_rendering, configure_torch_threads

    configure_rendering()
    configure_torch_threads()
    rows = []
    for name in args.profiles:
        config = AdaptConfig(
            policy=args.policy,
            out=args.out / name,
            trials=args.trials,
            budget_s=args.budget * 60,
            rig=args.rig,
            attribute=False,
        )
        summary = run_adapt(config, lambda task, n=name: open_fake_world(task, n))
        rows.append((name, summary, load_profile(name).twin))

    def rate(r: dict) -> str:
        return f"{r['success_rate']:.0%} ({r['ci95'][0]:.0%}-{r['ci95'][1]:.0%}, n={r['trials']})"

    print("\nprofile | before | after | gain (Newcombe 95%) | twin predicts | seconds")
    for name, s, _ in rows:
        g = s["gain"]
        print(
            f"{name} | {rate(s['before'])} | {rate(s['after'])} | {g['gap']:+.0%} "
            f"({g['ci95'][0]:+.0%} to {g['ci95'][1]:+.0%}) | {rate(s['twin'])} | {s['seconds']}"
        )
    print("\ncalibration error vs the hidden profile (error / reported sigma)")
    for name, s, truth in rows:
        values, sigma = s["calibration"]["values"], s["calibration"]["uncertainty"]
        for key in (
            "joints.zero_offset_deg",
            "camera.offset_m",
            "camera.rotation_deg",
            "camera.fov_deg_delta",
            "servo.kp_scale",
            "servo.latency_steps",
        ):
            if key not in values:
                continue
            section, field = key.split(".")
            true_value = np.asarray(getattr(getattr(truth, section), field), dtype=float)
            error = np.abs(np.asarray(values[key], dtype=float) - true_value)
            ratio = error / np.maximum(np.asarray(sigma.get(key, 0.0), dtype=float), 1e-12)
            print(f"{name} {key}: max error {error.max():.4g}, max error/sigma {ratio.max():.2f}")


if __name__ == "__main__":
    main()
