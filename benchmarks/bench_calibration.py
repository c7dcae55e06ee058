"""Benchmark: does a calibrated twin narrow the sim-vs-fake gap where it was wide?

Usage: python benchmarks/bench_calibration.py POLICY [--profile reference_pitfalls]
       [--trials 39] [--out runs/bench_calibration]
       python benchmarks/bench_calibration.py --random N [--jobs 2] [--json out.json]
       (calibration errors and uncertainty coverage on N random arms:
       bench_calibration_random.py)

1. Lock the fake arm's camera and record a calibration session on it.
2. Diagnose: joint offsets, servos, camera -> calibration.json.
3. Evaluate on the default layout: the nominal twin, the calibrated twin (and, as an
   ablation, the calibrated twin with the cloth left black), the fake arm as it is,
   and the fake arm with the bridge applying the calibrated joint offsets.
Prints success inside the training square with 95% intervals, and the gaps.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main() -> None:
    if "--random" in sys.argv:
        from bench_calibration_random import main as on_random_arms

        on_random_arms(sys.argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy", type=Path)
    parser.add_argument("--profile", default="reference_pitfalls")
    parser.add_argument("--trials", type=int, default=39)
    parser.add_argument("--out", type=Path, default=Path("runs/bench_calibration"))
    args = parser.parse_args()
    os.environ["REALGAP_HOME"] = str(args.out / "home")

    from realgap.bridge.camera_lock import load_lock, lock_camera
    from realgap.bridge.safety import SafeArm
    from realgap.bridge.worlds import open_fake_world
    from realgap.diagnose.recording import record_calibration
    from realgap.diagnose.run import diagnose_recording
    from realgap.eval.layout import load_layout
    from realgap.eval.matched import evaluate
    from realgap.eval.stats import difference
    from realgap.policy.checkpoint import load_contract
    from realgap.sim import robot
    from realgap.sim.calibration import Calibration

    task = load_contract(args.policy).task
    world = open_fake_world(task, args.profile)
    world.camera.connect()
    with SafeArm(world.arm, clock=world.clock) as arm:
        arm.enable()
        arm.move_to(robot.KEYFRAMES["start"])
        lock_camera(world.camera)
    world.camera.disconnect()
    world = open_fake_world(task, args.profile)
    world.camera.apply_settings(load_lock(world.camera.camera_id).settings)
    recording = record_calibration(world).save(args.out / "recording.npz")
    diagnosis = diagnose_recording(recording, args.out)
    calibration = Calibration.load(args.out / "calibration.json")
    print(
        "diagnosed: offsets (deg)",
        [round(v, 2) for v in diagnosis["joints"]["offsets_deg"][:5]],
        f"kp x{diagnosis['servos']['kp_scale']:.2f}",
        f"latency {diagnosis['servos']['latency_steps']}",
        f"exposure x{diagnosis['camera']['exposure_gain_needed']:.2f}",
        f"mount {diagnosis['camera']['offset_in_wobbles']:.1f}/"
        f"{diagnosis['camera']['rotation_in_wobbles']:.1f} wobbles",
    )

    layout = load_layout()
    # An ablation: which measured difference explains the gap?
    no_cloth = Calibration(
        {k: v for k, v in calibration.values.items() if k != "camera.background_rgb"}
    )
    runs = {
        "sim (nominal twin)": ("sim", None),
        "sim (calibrated twin)": ("sim", calibration),
        "sim (calibrated, but the cloth black)": ("sim", no_cloth),
        f"fake:{args.profile}": ("fake", None),
        f"fake:{args.profile} + calibrated bridge": ("fake", calibration),
    }
    results = {}
    for name, (kind, calib) in runs.items():
        results[name] = evaluate(
            args.policy,
            kind,
            layout,
            args.trials,
            open_world=lambda task: open_fake_world(task, args.profile),
            calibration=calib,
            out=args.out / "eval" / name.replace(" ", "_").replace(":", "_"),
            earlier="overwrite",
        )["overall"]
        low, high = results[name]["ci95"]
        print(f"{name:>45}: {results[name]['success_rate']:.0%} ({low:.0%}-{high:.0%})")
    names = list(runs)
    for twin, real in ((names[0], names[3]), (names[1], names[3]), (names[2], names[3])):
        gap = difference(results[twin], results[real])
        print(
            f"gap {twin} - {real}: {gap['gap']:+.0%} "
            f"({gap['ci95'][0]:+.0%} to {gap['ci95'][1]:+.0%})"
        )


if __name__ == "__main__":
    main()
