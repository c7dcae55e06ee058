"""Checks that need no recording: frames, workspace coverage, and the cube and grasp.

- **Frame check**: where the sim origin is relative to the rotation axis, and a
  user-measured placement in both frames (the reference's sim measured from a
  point 3.9 cm behind the axis).
- **Coverage**: for a layout, which spots lie outside the training square and
  which the wrist camera cannot see from the start pose (in the twin).
- **Cube and grasp**: the cube mass and frictions the twin assumes against a
  profile's, and how often the scripted grasp holds under each (the reference's
  sim cube was 3 g with friction 2.0: the policy never learned to squeeze).
"""

from __future__ import annotations

import numpy as np

from realgap.bridge.profile import RealityProfile
from realgap.errors import ConfigError
from realgap.eval.layout import Layout
from realgap.eval.visibility import seen_at_start
from realgap.sim import robot
from realgap.sim.scripted import expert_success
from realgap.sim.twin import TwinParams

REFERENCE_SIM_CUBE = {"mass_kg": 0.003, "friction": 2.0}
"""The cube of the reference write-up's sim."""


def frame_check(x: float, y: float, measured_from: str = "arm") -> dict:
    """A placement measured from the rotation axis ("arm") or the sim origin ("sim")."""
    if measured_from not in ("arm", "sim"):
        raise ConfigError("measured_from must be 'arm' or 'sim'")
    xy = np.array([x, y], dtype=float)
    arm = xy if measured_from == "arm" else robot.sim_to_arm(xy)
    return {
        "sim_origin_from_axis_m": [float(-robot.PAN_AXIS_XY[0]), 0.0],
        "arm_frame": [float(v) for v in arm],
        "sim_frame": [float(v) for v in robot.arm_to_sim(arm)],
        "note": (
            "the sim origin is the base's back edge, "
            f"{robot.PAN_AXIS_XY[0] * 100:.1f} cm behind the shoulder_pan rotation axis; "
            "layouts and tasks measure from the axis"
        ),
    }


def coverage(layout: Layout, task: str) -> list[dict]:
    """Per spot: inside the training square? visible from the task's start pose (in the
    nominal twin, :func:`~realgap.eval.visibility.seen_at_start`)?"""
    layout = layout.for_task(task)
    seen = seen_at_start(task, layout.spots)
    return [
        {
            "spot": spot.name,
            "cube": list(spot.cube_xy),
            "in_training_square": spot.in_distribution,
            "visible_from_start_pose": bool(visible),
        }
        for spot, visible in zip(layout.spots, seen)
    ]


def grasp_check(
    profile: RealityProfile, task: str = "PickCube", episodes: int = 64, seed: int = 0
) -> dict:
    """Scripted-grasp success with the twin's cube, the profile's, and the reference's."""
    nominal = TwinParams()
    cubes = {
        "twin": {
            "mass_kg": nominal.cube.mass_kg,
            "friction": nominal.cube.friction,
            "fingers": nominal.fingers.friction,
        },
        "profile": {
            "mass_kg": profile.twin.cube.mass_kg,
            "friction": profile.twin.cube.friction,
            "fingers": profile.twin.fingers.friction,
        },
        "reference sim": {**REFERENCE_SIM_CUBE, "fingers": 1.0},
    }
    out = {}
    for name, cube in cubes.items():
        twin = nominal.updated(
            {
                "cube": {"mass_kg": cube["mass_kg"], "friction": cube["friction"]},
                "fingers": {"friction": cube["fingers"]},
            }
        )
        out[name] = {**cube, "success_rate": expert_success(task, twin, None, episodes, seed)}
    return out
