"""Scripted controllers that use privileged state: proof that tasks are solvable,
and the expert that records demonstrations for imitation learning.

Inverse kinematics is damped least squares on the batched Jacobian of the
pinch point, with a second objective that keeps the jaws pointing straight
down; the wrist roll turns the jaws square to the cube's faces.
"""

from __future__ import annotations

import numpy as np

from realgap.sim import robot
from realgap.sim.batched_env import BatchedEnv
from realgap.sim.rollout import rollout, success_rate

DOWN = np.array([0.0, 0.0, -1.0])
OPEN, CLOSED = 0.9, -0.17


def _wrap_quarter(angle: np.ndarray) -> np.ndarray:
    """Wrap to [-pi/4, pi/4): a cube looks the same every quarter turn."""
    return (angle + np.pi / 4) % (np.pi / 2) - np.pi / 4


class ScriptedController:
    """Memoryless expert over a :class:`BatchedEnv`: ``act()`` returns (n, 6) actions
    computed from the current (privileged) state alone."""

    def __init__(
        self,
        env: BatchedEnv,
        hover_m: float = 0.06,
        lift_m: float = 0.10,
        jaw_bias_m: float = 0.005,
    ):
        self.env = env
        self.hover_m, self.lift_m, self.jaw_bias_m = hover_m, lift_m, jaw_bias_m
        model = env.model
        self.dof = np.array([model.joint(name).dofadr[0] for name in robot.JOINT_NAMES])
        self.gripper_body = model.body(robot.GRIPPER_BODY).id

    def ik_targets(self, state, goal: np.ndarray, roll_to: np.ndarray | None) -> np.ndarray:
        """Joint angles (n, 5) moving the pinch point of ``state`` to ``goal`` (n, 3), jaws down."""
        env = self.env
        jacp, jacr = env.batch.jac(self.gripper_body, state.pinch)
        jacp, jacr = jacp[:, :, self.dof[:5]], jacr[:, :, self.dof[:5]]
        xmat = env.batch.bind("xmat")[:, self.gripper_body].reshape(-1, 3, 3)
        approach = -xmat[:, :, 2]  # the tip points along the gripper's -z
        pos_error = goal - state.pinch
        rot_error = np.cross(approach, DOWN)
        error = np.concatenate([pos_error, 0.05 * rot_error], axis=1)
        jac = np.concatenate([jacp, 0.05 * jacr], axis=1)
        damping = 1e-4 * np.eye(5)
        jt = np.transpose(jac, (0, 2, 1))
        delta = np.linalg.solve(jt @ jac + damping, jt @ error[:, :, None])[:, :, 0]
        q = state.qpos[:, :5] + np.clip(delta, -0.3, 0.3)
        if roll_to is not None:
            xaxis = xmat[:, :, 0]
            current = np.arctan2(xaxis[:, 1], xaxis[:, 0])
            sign = np.sign(xmat[:, 2, 2]) + (xmat[:, 2, 2] == 0)
            q[:, 4] = state.qpos[:, 4] + sign * _wrap_quarter(roll_to - current)
        return q

    def phases(self, state, grasp_point: np.ndarray, hover: np.ndarray) -> np.ndarray:
        """Each env's phase, read off the current state alone (no memory), so the
        controller can label any state -- including a learner's -- for DAgger.

        0 go above the cube (jaws open), 1 descend onto it, 2 close, 3 lift
        (PickCube) or carry above the bin (PlaceCube), 4 release over the bin.
        """
        env, task = self.env, self.env.task
        grasped = task.grasped(state)
        commanded_closed = env.target[:, 5] < 0.3
        near = np.linalg.norm(state.cube_pos - state.pinch, axis=1) < 0.02
        jaw_busy = (np.abs(state.qvel[:, 5]) > 0.3) | (state.qpos[:, 5] - state.target[:, 5] > 0.04)
        xy_error = np.linalg.norm(state.pinch[:, :2] - grasp_point[:, :2], axis=1)
        at_cube = np.linalg.norm(state.pinch - grasp_point, axis=1) < 0.012

        phase = np.zeros(len(grasped), dtype=int)
        # Descend once at hover height roughly above the cube; keep descending
        # through the sideways drift of fast moves unless far off.
        height = state.pinch[:, 2] - hover[:, 2]
        phase[((xy_error < 0.02) & (height < 0.015)) | ((xy_error < 0.045) & (height < -0.01))] = 1
        phase[at_cube & ~commanded_closed] = 2
        # Keep closing while the jaw moves onto the cube; a jaw closed on nothing
        # falls through to phases 0/1 with the jaws open, which retries the grasp.
        phase[commanded_closed & near & jaw_busy] = 2
        phase[grasped] = 3
        if task.has_bin:
            to_bin = np.abs(state.pinch[:, :2] - state.bin_pos[:, :2])
            over_bin = np.linalg.norm(to_bin, axis=1) < 0.025
            phase[grasped & over_bin & (state.pinch[:, 2] > 0.065)] = 4
            # Once released, a cube above or in the bin is left alone (it may still be falling).
            cube_over_bin = np.all(
                np.abs(state.cube_pos[:, :2] - state.bin_pos[:, :2])
                < task.config.scene.bin_inner_m / 2,
                axis=1,
            )
            phase[cube_over_bin & ~grasped & (phase < 3)] = 4
        if not task.grasps:
            phase = np.minimum(phase, 1)
        return phase

    def act(self) -> np.ndarray:
        """Actions for the current state of every env (see :meth:`phases`)."""
        env, task = self.env, self.env.task
        state = env.sim_state()
        cube = state.cube_pos
        yaw = 2 * np.arctan2(state.cube_quat[:, 3], state.cube_quat[:, 0])
        # Aim the descent a little towards the fixed jaw: the open moving jaw
        # sweeps wide, and would land on the cube's top edge.
        xaxis = env.batch.bind("xmat")[:, self.gripper_body].reshape(-1, 3, 3)[:, :, 0]
        grasp_point = cube - self.jaw_bias_m * xaxis * [1, 1, 0]
        hover = grasp_point + [0, 0, self.hover_m if task.grasps else self.hover_m / 2]
        phase = self.phases(state, grasp_point, hover)

        goals = {0: hover, 1: grasp_point, 2: grasp_point, 3: cube + [0, 0, self.lift_m]}
        if task.has_bin:
            goals[4] = state.bin_pos + [0, 0, 0.08]
            # Lift straight up before carrying, so the cube clears the bin's walls.
            low = (state.pinch[:, 2] < 0.06)[:, None]
            goals[3] = np.where(low, state.pinch * [1, 1, 0] + [0, 0, 0.08], goals[4])
        goal = hover.copy()
        for number, target in goals.items():
            goal = np.where((phase == number)[:, None], target, goal)
        grip = np.full(env.num_envs, OPEN)
        if task.grasps:
            grip = np.where((phase == 2) | (phase == 3), CLOSED, grip)
        desired = np.column_stack([self.ik_targets(state, goal, roll_to=yaw), grip])
        # Actions are deltas on the commanded targets (not the delayed ones the
        # servos currently hold), so latency does not make the script double-step.
        return np.clip((desired - env.target) / env.action_scale, -1.0, 1.0)


def run_episodes(env: BatchedEnv, episodes: int, seed: int = 0) -> dict[str, float]:
    """Roll the scripted controller until ``episodes`` have finished; success statistics."""
    controller = ScriptedController(env)
    obs, _ = env.reset(seed=seed)
    finished = rollout(env, lambda obs: controller.act(), obs, episodes=episodes)
    return {
        "episodes": len(finished),
        "success_rate": success_rate(finished),
        "mean_length": float(np.mean([episode.length for episode in finished])),
    }
