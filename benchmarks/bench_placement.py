"""Benchmark: the placement check on random arms -- never the operator's fault for the
camera, and a wrong origin caught.

Usage: python benchmarks/bench_placement.py --random 30 [--first-seed 0] [--json out.json]
       [--calibrations DIR] [--keyframe survey|start]

For each random arm (realgap.bridge.random_arms: camera mounts off by up to 3 mm and 3
degrees, joint zero errors up to 3 degrees, no calibration applied), runs the matched
evaluation's first frames on the default layout (taken at ``--keyframe``) twice: once
with the cube where the layout says, once with an operator whose positions are off by
2-4 cm in a random direction. Prints how often each is flagged as the operator's (the
target: never, and at least 95%), and the apparent offsets. With ``--calibrations DIR``
each arm's check uses its calibration, ``DIR/arm_<seed>/calibration.json`` (where
``bench_calibration.py --random N --out DIR`` leaves them): the joints' zeros corrected.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=30)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--calibrations", type=Path, help="DIR/arm_<seed>/calibration.json for each arm"
    )
    parser.add_argument(
        "--keyframe",
        default="survey",
        choices=("survey", "start"),
        help="the pose the first frames are taken at: Reach's (survey) or the grasping tasks'",
    )
    args = parser.parse_args()

    from realgap.runtime import configure_rendering, configure_torch_threads

    configure_rendering()
    configure_torch_threads()
    from realgap.bridge.random_arms import sample_arm
    from realgap.eval.matched import fake_arm_placement_check
    from realgap.policy.checkpoint import save_policy
    from realgap.policy.contract import PolicyContract
    from realgap.policy.networks import VisualPolicy
    from realgap.sim import robot
    from realgap.sim.calibration import Calibration
    from realgap.sim.twin import PlacementParams
    from realgap.speed import TrainedSpeeds

    folder = Path(tempfile.mkdtemp())
    policy = save_policy(
        folder / "policy",
        VisualPolicy(),
        PolicyContract(
            "Reach",
            16,
            10.0,
            (0.1, 0.1, 0.1, 0.1, 0.1, 0.2),
            speeds=TrainedSpeeds.of_ranges((10, 15), (0.15, 1.0)).to_dict(),
            start_pose=tuple(float(x) for x in robot.KEYFRAMES[args.keyframe]),
        ),
    )
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.random):
        rng = np.random.default_rng(10_000 + seed)
        angle, size = rng.uniform(0, 2 * np.pi), rng.uniform(0.02, 0.04)
        offset = (size * np.cos(angle), size * np.sin(angle))
        clean = sample_arm(seed)
        off = replace(
            clean, twin=replace(clean.twin, placement=PlacementParams(offset_xy_m=offset))
        )
        calibration = None
        if args.calibrations is not None:
            calibration = Calibration.load(args.calibrations / f"arm_{seed}" / "calibration.json")
        for label, profile in (("none", clean), ("off", off)):
            check = fake_arm_placement_check(policy, profile, folder, calibration)
            truth = offset if label == "off" else (0.0, 0.0)
            rows.append(
                {
                    "seed": seed,
                    "placement": label,
                    "true_offset_cm": [round(v * 100, 2) for v in truth],
                    "flagged": bool(check["flagged"]),
                    "seen_offset_cm": check.get("offset_cm"),
                }
            )
            print(rows[-1], flush=True)
    clean_flags = [r["flagged"] for r in rows if r["placement"] == "none"]
    off_flags = [r["flagged"] for r in rows if r["placement"] == "off"]
    print(
        f"{len(clean_flags)} arms without a placement error: flagged {np.mean(clean_flags):.0%}; "
        f"with 2-4 cm: flagged {np.mean(off_flags):.0%}"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
