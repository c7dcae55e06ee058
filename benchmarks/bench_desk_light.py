"""Benchmark: the desk and tone a calibration learns in rooms that cast shadows.

Usage: python benchmarks/bench_desk_light.py [--arms 12] [--first-seed 500]
       [--out runs/bench_desk_light]

For the first ``--arms`` random webcam arms from ``--first-seed`` on whose rooms cast
shadows (``sample_arm(seed, appearance=True)``, arms without shadows skipped), records
a calibration session and learns the camera's tone and the desk twice, with the hidden
geometry (so only the lighting differs): with the twin's light drawn without shadows
(as before) and with them (as adapt does when rig.toml says the room casts them). Each
learned desk is painted back by a shadowed twin, as the arm's twin will paint it,
through the learned tone, and compared with what the camera saw. Prints per arm and
in summary: the exposure's relative error and gamma's error against the truth, and the
painted desk's error (median per pixel, and its mean's worst channel) in 255 levels.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np


def learn_and_paint(recording, geometry, shadows: bool) -> dict:
    """The tone and desk learned with or without the twin's shadows, and the desk they
    paint in a shadowed twin (as the arm's twin paints it) against the camera's frames."""
    from realgap.diagnose.camera import diagnose_camera
    from realgap.diagnose.desk import desk_as_painted

    found = diagnose_camera(recording, geometry, shadows=shadows)
    seen, painted = desk_as_painted(recording, geometry, found, shadows=True)
    return {
        "exposure": found["exposure_gain_needed"],
        "gamma": found["gamma"],
        "desk_mean_error": float(np.abs(painted.mean(axis=0) - seen.mean(axis=0)).max()),
        "desk_pixel_error": float(np.median(np.abs(painted - seen).mean(axis=1))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", type=int, default=12)
    parser.add_argument("--first-seed", type=int, default=500)
    parser.add_argument("--out", type=Path, default=Path("runs/bench_desk_light"))
    args = parser.parse_args()

    from realgap.runtime import configure_rendering, configure_torch_threads

    configure_rendering()
    configure_torch_threads()
    from bench_calibration_random import record_session

    from realgap.bridge.random_arms import sample_arm
    from realgap.diagnose.hand_eye import HandEyeFit
    from realgap.diagnose.recording import CalibrationRecording

    rows, seed = [], args.first_seed - 1
    while len(rows) < args.arms:
        seed += 1
        profile = sample_arm(seed, appearance=True)
        if not profile.appearance.lights.shadows:
            continue
        path = record_session(profile, seed, args.out / f"arm_{seed}", reuse=True)
        recording = CalibrationRecording.load(path)
        geometry = HandEyeFit.from_twin(profile.twin)
        camera = profile.twin.camera
        row = {"seed": seed, "exposure": camera.exposure_scale, "gamma": camera.gamma}
        for name, shadows in (("without", False), ("with", True)):
            row[name] = learn_and_paint(recording, geometry, shadows)
        rows.append(row)
        print(
            f"arm {row['seed']}: exposure {row['exposure']:.3f} -> "
            f"{row['without']['exposure']:.3f} / {row['with']['exposure']:.3f}, gamma "
            f"{row['gamma']:.3f} -> {row['without']['gamma']:.3f} / {row['with']['gamma']:.3f},"
            f" desk per pixel {row['without']['desk_pixel_error']:.1f} / "
            f"{row['with']['desk_pixel_error']:.1f} levels (without / with shadows)",
            flush=True,
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rows.json").write_text(json.dumps(rows, indent=1))
    for name in ("without", "with"):
        exposure = [abs(r[name]["exposure"] / r["exposure"] - 1) for r in rows]
        gamma = [abs(r[name]["gamma"] - r["gamma"]) for r in rows]
        pixel = [r[name]["desk_pixel_error"] for r in rows]
        mean = [r[name]["desk_mean_error"] for r in rows]
        print(
            f"learned {name} the twin's shadows, {len(rows)} arms (median / max): exposure "
            f"{statistics.median(exposure):.1%} / {max(exposure):.1%} off, gamma "
            f"{statistics.median(gamma):.3f} / {max(gamma):.3f} off, desk painted "
            f"{statistics.median(pixel):.1f} / {max(pixel):.1f} levels per pixel and "
            f"{statistics.median(mean):.1f} / {max(mean):.1f} on its mean"
        )


if __name__ == "__main__":
    main()
