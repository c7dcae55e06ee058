"""Benchmark: how well the hand-eye fit recovers joint offsets and the camera mount.

Records a calibration session on each fake arm with several pose-sweep seeds, fits
joint offsets and the camera mount together, and prints each error against the
profile's hidden truth. The default arms are the shipped ones with camera and joint
differences plus two made for this benchmark (``benchmarks/profiles``), not tuned to
any default.

Usage: python benchmarks/bench_hand_eye.py [--profiles nominal workbench_so101 ...]
       [--seeds 0 1 2] [--poses 32]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
DEFAULT_PROFILES = [
    "nominal",
    "workbench_so101",
    str(HERE / "profiles" / "garage_so101.toml"),
    str(HERE / "profiles" / "valley_so101.toml"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=DEFAULT_PROFILES)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--poses", type=int, default=32)
    args = parser.parse_args()

    from realgap.runtime import configure_rendering

    configure_rendering()
    from realgap.bridge.profile import load_profile
    from realgap.bridge.worlds import open_fake_world
    from realgap.diagnose.hand_eye import fit_hand_eye
    from realgap.diagnose.recording import record_calibration

    print(
        "profile, seed: joint offset errors (pan lift elbow flex roll), degrees | worst"
        " mount error mm | worst rotation error deg | fov error deg | seconds"
    )
    lifts = []
    for profile in args.profiles:
        truth = load_profile(profile).twin
        name = Path(profile).stem
        for seed in args.seeds:
            started = time.perf_counter()
            world = open_fake_world("Reach", profile)
            fit = fit_hand_eye(record_calibration(world, poses=args.poses, seed=seed), bootstrap=50)
            joints = np.array(fit.offsets_deg[:5]) - np.array(truth.joints.zero_offset_deg[:5])
            mount = np.array(fit.mount_offset_m) - np.array(truth.camera.offset_m)
            rotation = np.array(fit.mount_rotation_deg) - np.array(truth.camera.rotation_deg)
            fov = fit.fov_delta_deg - truth.camera.fov_deg_delta
            lifts.append(joints[1])
            print(
                f"{name}, {seed}: {np.array2string(joints, precision=2, sign='+')} | "
                f"{np.abs(mount).max() * 1000:.2f} | {np.abs(rotation).max():.2f} | "
                f"{fov:+.2f} | {time.perf_counter() - started:.0f}"
            )
    lifts = np.array(lifts)
    print(
        f"lift offset error over {len(lifts)} fits: mean {lifts.mean():+.2f}, "
        f"largest {np.abs(lifts).max():.2f}, within 0.5 degrees: {(np.abs(lifts) <= 0.5).sum()}"
    )


if __name__ == "__main__":
    main()
