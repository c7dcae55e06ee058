"""The twin's guess at success on the real arm, from joint and gripper readings alone.

On the real arm the operator judges every episode with one key; this estimate
is shown beside the prompt (and stored) so that disagreements stand out. It
runs the twin's kinematics on the joint readings to place the between-jaws
point, and reads a jaw held open against its closing command as "holding
something":

- Reach (cube or can): the pinch point came within the success radius of the object;
- Pick: the jaw held something while the pinch point was lifted;
- Place and Stack: the jaw held something, then opened with the pinch point over
  the bin or the lower object.
"""

from __future__ import annotations

import mujoco
import numpy as np

from realgap.bridge.worlds import Spot
from realgap.sim import robot
from realgap.sim.scene import compile_scene
from realgap.sim.tasks import make_task

HOLDING_GAP_RAD = 0.04
"""A jaw this far open of its command is blocked by something (as ``Task.grasped``)."""


class TwinEstimator:
    """Feed it every step's readings and targets; ``estimate()`` at the end."""

    def __init__(self, task: str, spot: Spot):
        self.task = make_task(task)
        self.spot = spot
        self.model, _ = compile_scene(self.task.scene_config())
        self.data = mujoco.MjData(self.model)
        self._qadr = [self.model.joint(name).qposadr[0] for name in robot.JOINT_NAMES]
        self._pinch = self.model.site(robot.PINCH_SITE).id
        half = self.task.scene_config().object_half_height()
        self.cube = np.array([*robot.arm_to_sim(spot.cube_xy), half])
        self.reached = self.held_high = self.placed = False
        self.held = False

    def pinch(self, joints) -> np.ndarray:
        self.data.qpos[self._qadr] = joints
        mujoco.mj_kinematics(self.model, self.data)
        return self.data.site_xpos[self._pinch].copy()

    def update(self, joints, targets) -> None:
        pinch = self.pinch(joints)
        holding = joints[5] - targets[5] > HOLDING_GAP_RAD and targets[5] < 0.3
        radius = getattr(self.task.config, "success_radius_m", 0.02)
        self.reached |= bool(np.linalg.norm(pinch - self.cube) < radius)
        lift = getattr(self.task.config, "lift_m", 0.05)
        self.held_high |= bool(holding and pinch[2] > self.cube[2] + lift)
        if self.spot.target_xy is not None:
            target_xy = robot.arm_to_sim(self.spot.target_xy)
            radius = getattr(self.task.config, "align_xy_m", None)
            radius = radius or self.task.config.scene.bin_inner_m / 2
            over = np.linalg.norm(pinch[:2] - target_xy) < radius
            self.placed |= bool(self.held and not holding and over)
        self.held |= holding

    def estimate(self) -> bool:
        if not self.task.grasps:
            return self.reached
        return self.placed if self.task.has_target else self.held_high
