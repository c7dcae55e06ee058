"""The calibration file: what the diagnostics measured, used by the bridge and the twin.

One JSON file (per robot, like LeRobot's calibration per robot id)::

    {"joint_offsets_rad": [6], "servo": {"kp_scale", "damping_scale",
     "frictionloss_scale", "latency_steps"}, "camera": {"exposure_gain",
     "offset_m", "rotation_deg", "fov_delta_deg", "background_rgb"}}

- **The bridge** subtracts the joint offsets from every reading and adds them to
  every command (:func:`apply_to_arm`), so the policy sees the angles it was
  trained on.
- **The twin** takes servo stiffness, latency, camera exposure, mount and cloth
  colour, and reading biases (:func:`calibrated_env`), so that evaluating in it predicts the
  arm. (Damping and friction-loss scales are reported; the batched twin does not
  randomize them.)
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np


@dataclass
class Calibration:
    joint_offsets_rad: list[float] = field(default_factory=lambda: [0.0] * 6)
    servo: dict = field(default_factory=dict)
    camera: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)
    """What produced each part (recording path, fit residuals)."""

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2))
        return path

    @classmethod
    def load(cls, path: str | Path | None) -> Calibration:
        """Load a file; a missing path gives an empty (identity) calibration."""
        if path is None or not Path(path).exists():
            return cls()
        data = json.loads(Path(path).read_text())
        unknown = sorted(set(data) - {"joint_offsets_rad", "servo", "camera", "source"})
        if unknown:
            raise ValueError(f"{path}: unknown calibration keys {unknown}")
        calibration = cls(**data)
        if len(calibration.joint_offsets_rad) != 6:
            raise ValueError(f"{path}: joint_offsets_rad needs 6 values")
        return calibration


def apply_to_arm(arm, calibration: Calibration) -> None:
    """Make ``arm`` report and take angles corrected by the calibrated zero offsets."""
    from realgap.bridge.units import Codecs

    arm.codecs = Codecs(arm.units, offsets=calibration.joint_offsets_rad)


def calibrated_env(task: str, num_envs: int, calibration: Calibration, seed: int = 0):
    """A nominal (unrandomized) batched twin with the calibration's measured values."""
    from realgap.sim.batched_env import BatchedEnv
    from realgap.sim.randomization import DomainRandomization
    from realgap.sim.render import _small_rotation_quat

    servo, camera = calibration.servo, calibration.camera
    kp = float(servo.get("kp_scale", 1.0))
    latency = int(servo.get("latency_steps", 0))
    gain = float(camera.get("exposure_gain", 1.0))
    randomization = replace(
        DomainRandomization.none(),
        kp_scale=(kp, kp),
        latency_steps=(latency, latency),
        exposure_scale=(gain, gain),
    )
    env = BatchedEnv(task, num_envs, randomization=randomization, seed=seed)
    env.reading_bias = np.asarray(calibration.joint_offsets_rad, dtype=float)
    nominal = env.renderer.nominal
    nominal["cam_pos"] = nominal["cam_pos"] + np.asarray(camera.get("offset_m", [0, 0, 0]))
    import mujoco

    rotation = _small_rotation_quat(np.deg2rad(np.asarray(camera.get("rotation_deg", [0, 0, 0]))))
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, nominal["cam_quat"], rotation)
    nominal["cam_quat"] = quat
    nominal["cam_fovy"] = nominal["cam_fovy"] + float(camera.get("fov_delta_deg", 0.0))
    if camera.get("background_rgb") is not None:
        nominal["floor_rgba"] = np.array([*camera["background_rgb"], 1.0])
    return env
