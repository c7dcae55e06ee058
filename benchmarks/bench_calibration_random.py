"""Benchmark: calibration on random arms -- errors, and whether the stated uncertainties
mean what they say.

Usage: python benchmarks/bench_calibration.py --random N [--first-seed 0] [--jobs 2]
       [--json out.json] [--measured-cube] [--reuse-recordings] [--appearance]
       (bench_calibration.py hands --random to this module)

For each of N random arms (:func:`realgap.bridge.random_arms.sample_arm`, seeds
first..first+N-1: no arm anyone tuned to), records a calibration session on the fake
arm, runs every diagnostic, and compares each calibrated value with the arm's hidden
truth. Prints, per field, the median and 90th-percentile absolute error and how often
the truth lies within one and two reported standard deviations (an honest one
standard deviation covers about 68%, two about 95%); then the issue's checks: joint
offsets within 0.5 degrees, latency exact, torque cap within 15%.

``--measured-cube`` gives the fit the cube's edge as a user with calipers would (the
truth plus a seeded error of the sigma the fit states for a measured cube,
``MEASURED_CUBE_SIGMA_M``); without it the fit draws the twin's
nominal cube. ``--reuse-recordings`` fits the recording already in ``OUT/arm_<seed>``
where there is one (a new fit of the same session, in a fraction of the time).
``--appearance`` gives every arm a webcam and a desk of its own (``sample_arm(...,
appearance=True)``: textured desks, lamps, shadows, sensor noise, MJPEG, lens): the
fit's model then misses what the camera adds, as on a real arm.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

FIELDS = {
    "joints.zero_offset_deg": lambda twin: list(twin.joints.zero_offset_deg[:5]),
    "camera.offset_m": lambda twin: list(twin.camera.offset_m),
    "camera.rotation_deg": lambda twin: list(twin.camera.rotation_deg),
    "camera.fov_deg_delta": lambda twin: [twin.camera.fov_deg_delta],
    "servo.kp_scale": lambda twin: [twin.servo.kp_scale],
    "servo.damping_scale": lambda twin: [twin.servo.damping_scale],
    "servo.frictionloss_scale": lambda twin: [twin.servo.frictionloss_scale],
    "servo.torque_limit_scale": lambda twin: [twin.servo.torque_limit_scale],
    "servo.latency_steps": lambda twin: [twin.servo.latency_steps],
    "lens.k1": None,  # the webcam's (the profile's [sensor]), not a twin's: see calibrate_one
}


def record_session(profile, seed: int, folder: Path, poses: int = 32, reuse: bool = False):
    """Random arm ``seed``'s calibration session as a user records one: the camera locked
    at the start pose, then the pose sweep and steps into ``folder/recording.npz`` (kept
    as it is where ``reuse`` finds one). Returns its path."""
    from realgap.bridge.camera_lock import lock_camera
    from realgap.bridge.worlds import at_start_pose, open_fake_world
    from realgap.diagnose.recording import record_calibration

    recording = folder / "recording.npz"
    world = open_fake_world("Reach", profile, seed=seed)
    with at_start_pose(world):
        lock = lock_camera(world.camera, folder=folder / "cameras")
    if not (reuse and recording.is_file()):
        world = open_fake_world("Reach", profile, seed=seed)
        world.camera.apply_settings(lock.settings)
        record_calibration(world, poses=poses, seed=seed).save(recording)
    return recording


def calibrate_one(
    seed: int,
    out: str,
    poses: int = 32,
    measured_cube: bool = False,
    reuse: bool = False,
    appearance: bool = False,
) -> dict:
    """Record and diagnose random arm ``seed``; the truth, the values and the sigmas."""
    from realgap.runtime import configure_rendering, configure_torch_threads

    configure_rendering()
    configure_torch_threads()
    from realgap.bridge.random_arms import sample_arm
    from realgap.diagnose.hand_eye import MEASURED_CUBE_SIGMA_M
    from realgap.diagnose.run import diagnose_recording
    from realgap.sim.calibration import Calibration

    folder = Path(out) / f"arm_{seed}"
    profile = sample_arm(seed, appearance=appearance)
    started = time.perf_counter()
    recording = record_session(profile, seed, folder, poses, reuse)
    cube_size = None
    if measured_cube:
        caliper = np.random.default_rng(50_000 + seed).normal(0.0, MEASURED_CUBE_SIGMA_M)
        cube_size = profile.twin.cube.size_m + caliper
    # The user says whether the room casts shadows (rig.toml's scene.shadows): they look.
    shadows = profile.appearance.lights.shadows
    diagnose_recording(recording, folder, cube_size_m=cube_size, shadows=shadows)
    calibration = Calibration.load(folder / "calibration.json")
    row = {"seed": seed, "seconds": round(time.perf_counter() - started, 1), "fields": {}}
    hand_eye = json.loads((folder / "diagnosis.json").read_text()).get("hand_eye") or {}
    row["silhouette_rms_after"] = hand_eye.get("silhouette_rms_after")
    if "joints.zero_offset_deg" in calibration.values:  # the fit was kept: its lens too
        sensor = profile.appearance.to_dict().get("sensor", {})
        row["fields"]["lens.k1"] = {
            "truth": [sensor.get("distortion_k", [0.0])[0]],
            "value": [hand_eye["lens_k1"]],
            "sigma": [hand_eye["lens_k1_sigma"]],
        }
    for key, truth_of in FIELDS.items():
        value = calibration.values.get(key)
        if truth_of is None:
            continue
        if value is None:
            continue
        sigma = calibration.uncertainty.get(key)
        value = np.atleast_1d(np.asarray(value, dtype=float))[: len(truth_of(profile.twin))]
        sigma = None if sigma is None else np.atleast_1d(np.asarray(sigma, dtype=float))
        row["fields"][key] = {
            "truth": truth_of(profile.twin),
            "value": value.tolist(),
            "sigma": None if sigma is None else sigma[: len(value)].tolist(),
        }
    return row


def summarize(rows: list[dict]) -> dict:
    out = {}
    for key in FIELDS:
        errors, scaled = [], []
        for row in rows:
            field = row["fields"].get(key)
            if field is None:
                continue
            error = np.asarray(field["value"]) - np.asarray(field["truth"])
            errors += list(np.abs(error))
            if field["sigma"] is not None:
                sigma = np.maximum(np.asarray(field["sigma"]), 1e-12)
                scaled += list(np.abs(error) / sigma)
        if not errors:
            continue
        scaled = np.asarray(scaled)
        out[key] = {
            "values": len(errors),
            "median_abs_error": float(np.median(errors)),
            "p90_abs_error": float(np.percentile(errors, 90)),
            "within_1_sigma": float(np.mean(scaled <= 1)) if len(scaled) else None,
            "within_2_sigma": float(np.mean(scaled <= 2)) if len(scaled) else None,
        }
    joints = []
    for row in rows:
        field = row["fields"].get("joints.zero_offset_deg")
        if field is not None:  # the hand-eye fit refused this arm (its warnings say why)
            joints += [abs(v - t) for v, t in zip(field["value"], field["truth"])]
    torque = [
        abs(row["fields"]["servo.torque_limit_scale"]["value"][0] / truth - 1)
        for row in rows
        if "servo.torque_limit_scale" in row["fields"]
        for truth in row["fields"]["servo.torque_limit_scale"]["truth"]
    ]
    latency = [
        row["fields"]["servo.latency_steps"]["value"][0]
        == row["fields"]["servo.latency_steps"]["truth"][0]
        for row in rows
        if "servo.latency_steps" in row["fields"]
    ]
    out["checks"] = {
        "arms": len(rows),
        "geometry_refused": sum("joints.zero_offset_deg" not in row["fields"] for row in rows),
        "joints_within_half_degree": float(np.mean(np.asarray(joints) <= 0.5)) if joints else 0.0,
        "latency_exact": float(np.mean(latency)),
        "torque_cap_within_15_percent": float(np.mean(np.asarray(torque) <= 0.15)),
        "seconds_per_arm": float(np.mean([row["seconds"] for row in rows])),
    }
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, required=True, help="how many random arms")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="arms calibrated at once")
    parser.add_argument("--poses", type=int, default=32, help="pose-sweep poses per session")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_calibration_random"))
    parser.add_argument("--json", type=Path, help="write every arm and the summary here")
    parser.add_argument("--measured-cube", action="store_true", help="the fit knows the cube")
    parser.add_argument("--reuse-recordings", action="store_true", help="refit OUT's sessions")
    parser.add_argument(
        "--appearance", action="store_true", help="arms with their own webcams and desks"
    )
    args = parser.parse_args(argv)
    seeds = range(args.first_seed, args.first_seed + args.random)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        count = len(seeds)
        rows = list(
            pool.map(
                calibrate_one,
                seeds,
                [str(args.out)] * count,
                [args.poses] * count,
                [args.measured_cube] * count,
                [args.reuse_recordings] * count,
                [args.appearance] * count,
            )
        )
    summary = summarize(rows)
    header = ("field", "n", "median |err|", "p90 |err|", "<=1 sd", "<=2 sd")
    print("{:28s} {:>4s} {:>13s} {:>10s} {:>7s} {:>7s}".format(*header))
    for key, row in summary.items():
        if key == "checks":
            continue
        one = "-" if row["within_1_sigma"] is None else f"{row['within_1_sigma']:.0%}"
        two = "-" if row["within_2_sigma"] is None else f"{row['within_2_sigma']:.0%}"
        print(
            f"{key:28s} {row['values']:4d} {row['median_abs_error']:13.4g} "
            f"{row['p90_abs_error']:10.4g} {one:>7s} {two:>7s}"
        )
    checks = summary["checks"]
    print(
        f"{checks['arms']} arms ({checks['geometry_refused']} refused by the hand-eye fit): "
        "joints within 0.5 degrees "
        f"{checks['joints_within_half_degree']:.0%}; "
        f"latency exact {checks['latency_exact']:.0%}; torque cap within 15% "
        f"{checks['torque_cap_within_15_percent']:.0%}; {checks['seconds_per_arm']:.0f} s per arm"
    )
    if not args.appearance:
        # RESOLUTION_FLOOR_PX is a webcam's: these arms' camera is the twin's own renderer.
        print(
            "these arms' camera is the twin's own renderer; the hand-eye sigmas are sized "
            "on webcams' images (--appearance)"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"arms": rows, "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
