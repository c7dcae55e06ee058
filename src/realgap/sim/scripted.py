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

DOWN = np.array([0.0, 0.0, -1.0])
OPEN, CLOSED = 0.9, -0.17


def _wrap_quarter(angle: np.ndarray) -> np.ndarray:
    """Wrap to [-pi/4, pi/4): a cube looks the same every quarter turn."""
    return (angle + np.pi / 4) % (np.pi / 2) - np.pi / 4


class ScriptedController:
    """Phase machine over a :class:`BatchedEnv`; ``act()`` returns (n, 6) actions."""

    def __init__(self, env: BatchedEnv, hover_m: float = 0.06, lift_m: float = 0.10):
        self.env = env
        self.hover_m, self.lift_m = hover_m, lift_m
        model = env.model
        self.dof = np.array([model.joint(name).dofadr[0] for name in robot.JOINT_NAMES])
        self.gripper_body = model.body(robot.GRIPPER_BODY).id
        self.phase = np.zeros(env.num_envs, dtype=int)
        self.phase_steps = np.zeros(env.num_envs, dtype=int)

    def reset(self, ids=None) -> None:
        ids = slice(None) if ids is None else ids
        self.phase[ids] = 0
        self.phase_steps[ids] = 0

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

    def act(self) -> np.ndarray:
        """Actions for the current state of every env.

        Phases: 0 hover above the cube (jaws open), 1 descend onto it, 2 close,
        3 lift (PickCube) or carry above the bin (PlaceCube), 4 release over
        the bin. Reach stops after phase 1.
        """
        env, task = self.env, self.env.task.name
        state = env.sim_state()
        cube = state.cube_pos
        yaw = 2 * np.arctan2(state.cube_quat[:, 3], state.cube_quat[:, 0])
        hover = cube + [0, 0, self.hover_m / 2 if task == "Reach" else self.hover_m]

        at_hover = np.linalg.norm(state.pinch - hover, axis=1) < 0.015
        at_cube = np.linalg.norm(state.pinch - cube, axis=1) < 0.012
        advance = ((self.phase == 0) & at_hover) | ((self.phase == 1) & at_cube)
        # Lift only once the jaw is blocked by the cube (or after a timeout).
        closed = env.task.grasped(state) & (self.phase_steps >= 2)
        advance |= (self.phase == 2) & (closed | (self.phase_steps >= 8))
        if task == "PlaceCube":
            over_bin = np.linalg.norm(state.pinch[:, :2] - state.bin_pos[:, :2], axis=1) < 0.015
            advance |= (self.phase == 3) & (state.pinch[:, 2] > 0.09) & over_bin
        if task == "Reach":
            advance &= self.phase == 0
        self.phase_steps = np.where(advance, 0, self.phase_steps + 1)
        self.phase = self.phase + advance

        goals = {0: hover, 1: cube, 2: cube, 3: cube + [0, 0, self.lift_m]}
        if task == "PlaceCube":
            goals[3] = goals[4] = state.bin_pos + [0, 0, 0.11]
        goal = hover.copy()
        for phase, target in goals.items():
            goal = np.where((self.phase == phase)[:, None], target, goal)
        grip = np.full(env.num_envs, OPEN)
        if task != "Reach":
            grip = np.where((self.phase >= 2) & (self.phase < 4), CLOSED, grip)
        desired = np.column_stack([self.ik_targets(state, goal, roll_to=yaw), grip])
        # Actions are deltas on the commanded targets (not the delayed ones the
        # servos currently hold), so latency does not make the script double-step.
        return np.clip((desired - env.target) / env.action_scale, -1.0, 1.0)


def run_episodes(env: BatchedEnv, episodes: int, seed: int = 0) -> dict[str, float]:
    """Roll the scripted controller until ``episodes`` have finished; success statistics."""
    controller = ScriptedController(env)
    env.reset(seed=seed)
    finished, successes, lengths = 0, 0, []
    while finished < episodes:
        _, _, _, _, info = env.step(controller.act())
        if "episode" in info:
            ids = info["episode"]["env"]
            controller.reset(ids)
            finished += len(ids)
            successes += int(info["episode"]["success"].sum())
            lengths.extend(info["episode"]["length"].tolist())
    return {
        "episodes": finished,
        "success_rate": successes / finished,
        "mean_length": float(np.mean(lengths)),
    }
