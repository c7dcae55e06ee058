"""The calibration sweep's poses, chosen for what they tell the hand-eye fit.

Shoulder lift, elbow and wrist flex turn about parallel axes, so near one arm extension
their zero offsets move the camera alike: the fit's weakest direction is a mix of the
three (lift -0.6, elbow +0.7, wrist flex -0.4), and a small systematic difference
between the camera's silhouettes and the twin's ends up along it (the lean measured on
webcam arms). Poses drawn at random use the sweep's range unevenly; choosing them to
shrink the joints' uncertainty halves that direction's standard deviation.

The model is the fit's own geometry in the nominal twin: the object's box corners and
the jaws' (which fix the mount) projected through the wrist camera at a 640x480 frame;
their sensitivities to the five joint offsets, the mount (3 offsets, 3 rotations) and
the field of view give each pose's information, and the mount and field of view are
marginalized out (they are fitted together with the joints).
"""

from __future__ import annotations

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from realgap.sim import robot
from realgap.sim.scene import SceneConfig, joint_ids

FRAME_HEIGHT_PX = 480
"""The pixel scale of the information (a USB webcam's height; only ratios matter)."""
JAW_GEOMS = ("fixed_jaw", "moving_jaw")
PARAMETERS = 12
"""Five joint offsets (degrees), mount offset (mm), mount rotation (degrees), fov (deg)."""
STEPS = np.full(PARAMETERS, 0.1)
"""Finite-difference steps, in the units above."""
PRIOR_SD = np.array([3.0] * 5 + [3.0] * 3 + [3.0] * 3 + [4.0])
"""What is known before the sweep (a few degrees and millimetres, as random arms draw
them): the start of the choice, so that the first poses are compared on something."""
_BOX = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)


def box_corners(centre, half) -> np.ndarray:
    """The eight corners (8, 3) of an axis-aligned box of half extents ``half``."""
    return np.asarray(centre, dtype=float) + _BOX * np.asarray(half, dtype=float)


class SweepDesign:
    """Each candidate pose's information about the joint offsets (in the nominal twin)."""

    def __init__(self, model: mujoco.MjModel, scene: SceneConfig, object_xyz: np.ndarray):
        self.model, self.data = model, mujoco.MjData(model)
        self.qpos = joint_ids(model)["qpos"]
        self.camera = model.camera(robot.WRIST_CAMERA).id
        self.jaws = [model.geom(name).id for name in JAW_GEOMS]
        radius = scene.can_radius_m if scene.object_shape == "can" else scene.cube_size_m / 2
        self.object_corners = box_corners(object_xyz, [radius, radius, scene.object_half_height()])
        self.nominal = (
            model.cam_pos[self.camera].copy(),
            model.cam_quat[self.camera].copy(),
            float(model.cam_fovy[self.camera]),
        )

    def information(self, pose: np.ndarray) -> np.ndarray:
        """The pose's information matrix (12 x 12) for one pixel of noise per point."""
        base = self._pixels(pose, np.zeros(PARAMETERS))
        jacobian = np.stack(
            [
                (self._pixels(pose, step * unit) - base) / step
                for step, unit in zip(STEPS, np.eye(PARAMETERS))
            ],
            axis=1,
        )
        self._restore()
        return jacobian.T @ jacobian

    def _pixels(self, pose: np.ndarray, change: np.ndarray) -> np.ndarray:
        """The object's and jaws' box corners in the frame, with the joint offsets,
        mount and field of view changed by ``change`` (units of :data:`PARAMETERS`)."""
        model, data, camera = self.model, self.data, self.camera
        position, quat, fovy = self.nominal
        model.cam_pos[camera] = position + change[5:8] / 1000
        turn = Rotation.from_quat(quat[[1, 2, 3, 0]]) * Rotation.from_rotvec(
            np.deg2rad(change[8:11])
        )
        x, y, z, w = turn.as_quat()
        model.cam_quat[camera] = [w, x, y, z]
        model.cam_fovy[camera] = fovy + change[11]
        joints = np.array(pose, dtype=float)
        joints[:5] += np.deg2rad(change[:5])
        data.qpos[self.qpos] = joints
        mujoco.mj_kinematics(model, data)
        mujoco.mj_camlight(model, data)
        jaws = [
            data.geom_xpos[g] + (_BOX * model.geom_size[g]) @ data.geom_xmat[g].reshape(3, 3).T
            for g in self.jaws
        ]
        points = np.vstack([self.object_corners, *jaws])
        local = (points - data.cam_xpos[camera]) @ data.cam_xmat[camera].reshape(3, 3)
        focal = (FRAME_HEIGHT_PX / 2) / np.tan(np.deg2rad(model.cam_fovy[camera]) / 2)
        depth = -local[:, 2]
        return np.concatenate([focal * local[:, 0] / depth, focal * local[:, 1] / depth])

    def _restore(self) -> None:
        position, quat, fovy = self.nominal
        self.model.cam_pos[self.camera] = position
        self.model.cam_quat[self.camera] = quat
        self.model.cam_fovy[self.camera] = fovy


def prior_information() -> np.ndarray:
    """The information before any pose (:data:`PRIOR_SD`)."""
    return np.diag(1.0 / PRIOR_SD**2)


def joint_variance(information: np.ndarray) -> np.ndarray:
    """The summed variance of the five joint offsets (degrees squared), the mount and field
    of view marginalized, for each information matrix of a stack (..., 12, 12)."""
    covariance = np.linalg.inv(information)
    return np.trace(covariance[..., :5, :5], axis1=-2, axis2=-1)


def joint_sd(information: np.ndarray) -> np.ndarray:
    """Each joint offset's standard deviation (degrees per pixel of noise)."""
    return np.sqrt(np.diag(np.linalg.inv(information))[:5])
