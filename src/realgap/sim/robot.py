"""SO-101 robot constants, each with its source.

Everything the rest of realgap needs to know about the arm lives here and is
checked against the compiled model by ``tests/unit/test_robot_constants.py``.
Kinematic numbers come from TheRobotStudio/SO-ARM100,
``Simulation/SO101/so101_new_calib.xml`` ("new calibration": each joint's zero
is the middle of its range). Servo numbers approximate an STS3215 under
LeRobot's default configuration; ``realgap calibrate servos`` refines them.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import numpy as np

JOINT_NAMES = (
    "shoulder_pan",
    "shoulder_lift",
    "elbow_flex",
    "wrist_flex",
    "wrist_roll",
    "gripper",
)
"""Joint order of every observation and action (LeRobot's SO-101 motor order)."""
ARM_JOINTS = JOINT_NAMES[:5]
GRIPPER = "gripper"

JOINT_RANGES = np.array(
    [
        [-1.9198621771937616, 1.9198621771937634],
        [-1.7453292519943224, 1.7453292519943366],
        [-1.69, 1.69],
        [-1.6580628494556928, 1.6580627293335335],
        [-2.7438472969992493, 2.841206309382605],
        [-0.17453297762778586, 1.7453291995659765],
    ]
)
"""Joint limits in radians (so101_new_calib.xml; elbow carries its 5-degree offset)."""

LINK_MASSES = {
    "base": 0.147,
    "shoulder": 0.100006,
    "upper_arm": 0.103,
    "lower_arm": 0.104,
    "wrist": 0.079,
    "gripper": 0.087,
    "moving_jaw_so101_v1": 0.012,
}
"""Link masses in kg (so101_new_calib.xml inertials)."""

PAN_AXIS_XY = np.array([0.0388353, 0.0])

BASE_CLEARANCE_M = 0.05
"""Nothing can be placed closer than this to the rotation axis: the base plate reaches
3.9 cm behind it (PAN_AXIS_XY) and about as far to the sides and front."""
REACH_M = 0.40
"""Farthest cube centre from the rotation axis the jaws can reach at table height:
upper arm 11.3 cm + forearm 13.5 cm + wrist-to-pinch ~10 cm, plus the shoulder's
forward offset (official MJCF link lengths, rounded up)."""
"""Where the shoulder_pan rotation axis meets the table, in the sim (base) frame.

The sim origin is the base's back edge, 3.9 cm *behind* the rotation axis.
Users measure cube placements from the axis; every task position is therefore
stated in the arm frame (origin on this axis) and converted with
:func:`arm_to_sim`.
"""

WRIST_CAMERA = "wrist"
WRIST_CAMERA_POS = (0.004, -0.04, -0.025)
WRIST_CAMERA_XYAXES = (-1, 0, 0, 0, -0.89, -0.45)
WRIST_CAMERA_FOVY = 75.0
"""Wrist camera in the gripper frame: beside the jaw plane, looking past both jaw
tips (ours; the policy's trained camera pose, stored in every checkpoint)."""
PINCH_SITE = "pinch"
PINCH_POS = (0.0045, 0.0, -0.092)
"""The between-jaws point (gripper frame), what Reach brings to the cube: 12.5 mm
from the fixed jaw's inner face (a 2.5 cm cube pressed against it), 1 cm above
the jaw tips."""
GRIPPER_BODY = "gripper"
MOVING_JAW_BODY = "moving_jaw_so101_v1"


@dataclass(frozen=True)
class ServoModel:
    """Position-servo parameters of one joint, as a MuJoCo position actuator."""

    kp: float
    """Proportional gain, N*m/rad."""
    kv: float
    """Actuator velocity damping, N*m*s/rad."""
    torque_limit: float
    """Torque cap, N*m."""
    damping: float
    """Joint damping, N*m*s/rad."""
    frictionloss: float
    """Dry friction, N*m."""
    armature: float
    """Reflected rotor inertia, kg*m^2."""


ARM_SERVO = ServoModel(
    # so101_new_calib.xml "sts3215" class: gains derived for servo P=16, which is
    # what LeRobot's configure() writes (half the factory P=32); the cap is the
    # official actuators' forcerange (STS3215 12 V stall torque ~2.9-3.4 N*m).
    kp=998.22,
    kv=2.731,
    torque_limit=3.35,
    damping=0.60,
    frictionloss=0.052,
    armature=0.028,
)
GRIPPER_SERVO = ServoModel(
    # Our choice, not official: LeRobot caps the gripper's torque (Max_Torque_Limit
    # 500/1000), and a stable simulated grasp needs a realistic 1-3 N squeeze, so the
    # gripper is soft (~0.15 N*m at 0.2 rad past contact) and capped at 0.2 N*m
    # (about 3 N at the pads).
    kp=0.75,
    kv=0.02,
    torque_limit=0.2,
    damping=0.05,
    frictionloss=0.005,
    armature=0.001,
)
SERVOS = {name: (GRIPPER_SERVO if name == GRIPPER else ARM_SERVO) for name in JOINT_NAMES}

KEYFRAMES = {
    # Folded, resting on its own base: where the arm sits when powered down.
    "rest": np.array([0.0, -1.70, 1.62, 1.10, 0.0, -0.10]),
    # Looking down at the work area with both jaws open in the wrist camera's view: the
    # tasks' default start pose. Match and lock cameras here, never at rest (the gripper
    # is closed there, and the two jaws' silhouettes, which locate the camera, merge).
    "start": np.array([0.0, -0.60, 0.75, 1.25, 0.0, 0.40]),
    # Raised and panned 6 degrees left (the camera sits right of the jaws): the view
    # holds the object over 94% of the 20 x 20 cm training square (cube; 93% can),
    # where ``start`` holds 69% (62%) and misses the right edge. The reaching tasks
    # start here; the grasping tasks keep ``start``, whose jaws hang 6.5 cm lower
    # (PickCube from here: 72% nominal against 91%, one seed;
    # docs/results/2026-12-05-deploy-speeds.md).
    "survey": np.array([0.10, -0.80, 0.45, 1.55, 0.0, 0.40]),
}
"""Named joint configurations (radians, JOINT_NAMES order)."""


def pose_problem(pose) -> str | None:
    """What is wrong with ``pose`` as a joint configuration (six finite angles inside
    JOINT_RANGES), or None."""
    values = np.asarray(pose, dtype=float) if np.ndim(pose) == 1 else None
    if values is None or values.shape != (len(JOINT_NAMES),):
        return f"need {len(JOINT_NAMES)} joint angles, got {pose!r}"
    outside = [
        name
        for name, v, (low, high) in zip(JOINT_NAMES, values, JOINT_RANGES)
        if not (np.isfinite(v) and low <= v <= high)
    ]
    return f"outside the joint ranges at {outside}" if outside else None


START_PINCH_ARM = (0.1546, 0.0, 0.060)
"""Where the pinch point is at the ``start`` keyframe: arm frame x, y and height (m),
from the shipped model's kinematics. The jaws hang about 6 cm above the desk there,
as high as a can: tall objects must not be spawned under them."""

TICKS_PER_TURN = 4096
"""STS3215 encoder resolution (Feetech datasheet)."""


def robot_xml_path():
    """Path of the shipped primitive-geometry SO-101 MJCF."""
    return resources.files("realgap.sim") / "assets" / "so101.xml"


def arm_to_sim(xy_arm) -> np.ndarray:
    """Convert table positions measured from the rotation axis to the sim frame."""
    return np.asarray(xy_arm, dtype=float) + PAN_AXIS_XY


def sim_to_arm(xy_sim) -> np.ndarray:
    """Convert sim-frame table positions to the arm frame (origin on the rotation axis)."""
    return np.asarray(xy_sim, dtype=float) - PAN_AXIS_XY
