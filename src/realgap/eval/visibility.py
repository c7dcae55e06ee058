"""Which spots of a layout the wrist camera sees from the start pose.

The grasping tasks' episodes start at the ``start`` keyframe, looking down at the work
area, but the 75-degree wrist view does not cover the whole 20 x 20 cm training square
from there: in the nominal twin about 69% of it with the cube and 62% with the can (the
right edge and the far right corner are out of view;
docs/results/2026-12-05-deploy-speeds.md). The reaching tasks start raised, at
``survey``, which sees about 94%. An object there must be found by a policy
that sees an empty desk, so "never saw the cube" at such a spot is the policy's
search, not the camera's settings; the sim's own evaluation over random spots averages
it away. :func:`unseen_at_start` names those spots so an evaluation can say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import mujoco
import numpy as np

from realgap.bridge.worlds import Spot
from realgap.sim import robot
from realgap.sim.batched_env import BatchedEnv
from realgap.sim.failures import cube_in_view
from realgap.sim.render import set_wrist_camera
from realgap.sim.tasks import make_task
from realgap.sim.twin import TwinParams


def seen_at_start(
    task: str,
    spots: Sequence[Spot],
    twin: TwinParams | None = None,
    start_pose: Sequence[float] | None = None,
) -> np.ndarray:
    """Whether each spot's object centre is inside the wrist camera's view with the arm
    exactly at ``start_pose`` (default: the task's), where the arm's episodes begin (the
    sim's resets add a little pose noise; none here), in ``twin`` (its camera's mount and
    field of view; default nominal), objects placed as the twin's operator would."""
    if not spots:
        return np.zeros(0, dtype=bool)
    config = replace(make_task(task).config, start_noise_rad=0.0)
    if start_pose is not None:
        config = replace(config, start_pose=tuple(float(x) for x in start_pose))
    env = BatchedEnv(task, len(spots), config=config, twin=twin, render=False)
    try:
        cube = np.array([spot.cube_xy for spot in spots], dtype=float)
        targets = np.array([spot.target_xy or (0.0, 0.0) for spot in spots], dtype=float)
        yaw = np.array([spot.yaw for spot in spots], dtype=float)
        env.reset_to(cube, targets if env.task.has_target else None, yaw)
        model, params = env.model, env.params
        camera = model.camera(robot.WRIST_CAMERA).id
        # The twin's camera mount error lives in its renderer, not in the physics
        # model's camera: put it there and place the camera by the arm's kinematics.
        nominal = {
            "cam_pos": model.cam_pos[camera].copy(),
            "cam_quat": model.cam_quat[camera].copy(),
            "cam_fovy": float(model.cam_fovy[camera]),
        }
        data = mujoco.MjData(model)
        seen = np.zeros(len(spots), dtype=bool)
        cube_pos = env.sim_state().cube_pos
        for i in range(len(spots)):
            set_wrist_camera(
                model,
                camera,
                nominal,
                params.camera_offset[i],
                params.camera_rotation[i],
                params.camera_fov_delta[i],
            )
            data.qpos[:] = env.qpos[i]
            mujoco.mj_forward(model, data)
            seen[i] = cube_in_view(
                cube_pos[i : i + 1],
                data.cam_xpos[camera][None],
                data.cam_xmat[camera][None],
                float(model.cam_fovy[camera]),
            )[0]
        return seen
    finally:
        env.close()


def unseen_at_start(
    task: str,
    spots: Sequence[Spot],
    twin: TwinParams | None = None,
    start_pose: Sequence[float] | None = None,
) -> list:
    """Names of the spots (each once, in layout order) the start pose cannot see."""
    seen = seen_at_start(task, spots, twin, start_pose)
    return list(dict.fromkeys(spot.name for spot, ok in zip(spots, seen) if not ok))
