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
from realgap.sim.randomization import DomainRandomization
from realgap.sim.rollout import rollout, success_rate
from realgap.sim.twin import TwinParams
from realgap.speed import DeploySpeed

DOWN = np.array([0.0, 0.0, -1.0])
OPEN, CLOSED = 0.9, -0.17
FIXED_JAW_TO_PINCH_M = 0.0125
"""The pinch point sits this far from the fixed jaw's inner face (robot.PINCH_POS)."""
CAN_JAW_MARGIN_M = 0.008
"""Gap between the fixed jaw's face and a can's rim as the jaws come down: wider and
the closing jaw pushes the can further (and tips it); narrower and the fixed jaw lands
on the rim (scripted PickCan, 64 randomized episodes: 4 mm 78%, 8 mm 75% and 100%
nominal, 11 mm 66%)."""
CAN_GRASP_HEIGHT_M = 0.025
"""Close on a can no higher than this: pushed low it slides; pushed at mid height
(3 cm) a can with desk friction 0.8 tips (0.8 x 3 cm > its 1.65 cm radius)."""
CAN_DESCENT_M = 0.01
"""Most the goal drops per step while coming down onto a can."""
CAN_GAP_M = 0.03
"""Hover this far above a can's top (the cube's hover height would put the jaws out of
the arm's easy reach above a 6 cm can)."""


def _solve(jac: np.ndarray, error: np.ndarray) -> np.ndarray:
    """Damped least squares joint step (n, 5) for task errors (n, 6)."""
    jt = np.transpose(jac, (0, 2, 1))
    damped = jt @ jac + 1e-4 * np.eye(jac.shape[2])
    return np.linalg.solve(damped, jt @ error[:, :, None])[:, :, 0]


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
        delta = _solve(jac, error)
        # A joint pinned at its limit cannot take its share: solve again without it, so
        # the others make up the difference (a high carry needs more wrist than there is).
        low, high = robot.JOINT_RANGES[:5, 0], robot.JOINT_RANGES[:5, 1]
        pinned = ((state.qpos[:, :5] >= high - 0.02) & (delta > 0)) | (
            (state.qpos[:, :5] <= low + 0.02) & (delta < 0)
        )
        if pinned.any():
            delta = np.where(
                pinned.any(axis=1)[:, None], _solve(jac * ~pinned[:, None, :], error), delta
            )
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

        0 go above the object (jaws open), 1 descend onto it, 2 close, 3 lift
        (Pick), carry above the bin (Place) or above the lower object (Stack),
        4 release, 5 (Stack) lower onto the lower object, 6 (Stack) back away upwards.
        """
        env, task = self.env, self.env.task
        grasped = task.grasped(state)
        commanded_closed = env.target[:, 5] < 0.3
        near = np.linalg.norm(state.cube_pos - state.pinch, axis=1) < 0.02
        # Closing: the jaw moves, lags its target, or its target is still on the way
        # down (at a deploy speed's small steps the jaw keeps up and moves slowly).
        jaw_busy = (
            (np.abs(state.qvel[:, 5]) > 0.3)
            | (state.qpos[:, 5] - state.target[:, 5] > 0.04)
            | (env.target[:, 5] > CLOSED + 0.02)
        )
        xy_error = np.linalg.norm(state.pinch[:, :2] - grasp_point[:, :2], axis=1)
        at_cube = np.linalg.norm(state.pinch - grasp_point, axis=1) < 0.012

        phase = np.zeros(len(grasped), dtype=int)
        # Descend once at hover height roughly above the cube; keep descending
        # through the sideways drift of fast moves unless far off.
        height = state.pinch[:, 2] - hover[:, 2]
        # A can leaves the jaws less room: line up closer before descending.
        start, keep = (0.02, 0.045) if task.object_shape == "cube" else (0.012, 0.02)
        phase[((xy_error < start) & (height < 0.015)) | ((xy_error < keep) & (height < -0.01))] = 1
        phase[at_cube & ~commanded_closed] = 2
        # Keep closing while the jaw moves onto the cube; a jaw closed on nothing
        # falls through to phases 0/1 with the jaws open, which retries the grasp.
        phase[commanded_closed & near & jaw_busy] = 2
        phase[grasped] = 3
        if task.has_target and not task.has_bin:  # Stack
            xy, z = task.stack_error(state)
            slow = np.linalg.norm(state.cube_vel, axis=1) < 0.03
            phase[grasped & (xy < 0.012)] = 5
            # Let go only once it sits still on top: a moving cube flies off when released.
            phase[grasped & (xy < 0.015) & (np.abs(z) < 0.004) & slow] = 4
            # Once on top and let go, back away (the jaws may still touch the cube).
            phase[task.on_base(state) & ~grasped & (phase < 3)] = 6
        if task.has_bin:
            to_bin = np.abs(state.pinch[:, :2] - state.target_pos[:, :2])
            over_bin = np.linalg.norm(to_bin, axis=1) < 0.025
            phase[grasped & over_bin & (state.pinch[:, 2] > 0.065)] = 4
            # Once released, a cube above or in the bin is left alone (it may still be falling).
            cube_over_bin = np.all(
                np.abs(state.cube_pos[:, :2] - state.target_pos[:, :2])
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
        # A cube looks the same every quarter turn: square the jaws to its faces. A can
        # is round: keep the wrist's roll.
        yaw = 2 * np.arctan2(state.cube_quat[:, 3], state.cube_quat[:, 0])
        if task.object_shape == "can":
            yaw = None
        grasp_point, hover = self.approach(state)
        phase = self.phases(state, grasp_point, hover)

        goals = {0: hover, 1: grasp_point, 2: grasp_point, 3: cube + [0, 0, self.lift_m]}
        if task.has_bin:
            goals[4] = state.target_pos + [0, 0, 0.08]
            # Lift straight up before carrying, so the cube clears the bin's walls.
            low = (state.pinch[:, 2] < 0.06)[:, None]
            goals[3] = np.where(low, state.pinch * [1, 1, 0] + [0, 0, 0.08], goals[4])
        elif task.has_target:
            goals.update(self.stack_goals(state))
        rise = np.zeros(env.num_envs, dtype=bool)
        if task.object_shape == "can":
            # Come down onto a can slowly: soft or late servos overshoot into its rim.
            goals[1] = grasp_point.copy()
            goals[1][:, 2] = np.maximum(grasp_point[:, 2], state.pinch[:, 2] - CAN_DESCENT_M)
            # A can stands as tall as the start pose's jaws: rise before moving across,
            # or the jaws knock it over on the way.
            rise = (state.pinch[:, 2] < hover[:, 2] - 0.01) & (
                np.linalg.norm(state.pinch[:, :2] - hover[:, :2], axis=1) > 0.03
            )
            goals[0] = np.where(rise[:, None], state.pinch * [1, 1, 0] + hover * [0, 0, 1], hover)
        goal = hover.copy()
        for number, target in goals.items():
            goal = np.where((phase == number)[:, None], target, goal)
        grip = np.full(env.num_envs, OPEN)
        if task.grasps:
            grip = np.where((phase == 2) | (phase == 3) | (phase == 5), CLOSED, grip)
        # Opening swings the moving jaw down: not while rising clear of a can.
        grip = np.where(rise & (phase == 0), env.target[:, 5], grip)
        desired = np.column_stack([self.ik_targets(state, goal, roll_to=yaw), grip])
        # Actions are deltas on the commanded targets (not the delayed ones the
        # servos currently hold), so latency does not make the script double-step.
        # A grasp's labels are in training's units (the task's scale, not the
        # episode's slowed one): the student cannot see an episode's speed, and labels
        # that grew as it slowed (saturated at 0.15) taught it one thing fast and
        # another slow for the same image (PickCube's nominal sim: 82% over three seeds
        # against 91% now). Reaching keeps the slowed scale: its saturated slow approach
        # arrives in time, a proportional one timed out (the demo's Reach, seeds 0-5 at
        # the deploy speed: median 78% on typical_so101 and 63% on reference_pitfalls,
        # against 83% and 80%).
        scale = env.training_action_scale if task.grasps else env.action_scale
        return np.clip((desired - env.target) / scale, -1.0, 1.0)

    def approach(self, state) -> tuple[np.ndarray, np.ndarray]:
        """Where the pinch point goes to close the jaws on the object, and where it
        hovers above that first (both (n, 3))."""
        env, task = self.env, self.env.task
        cube = state.cube_pos
        xaxis = env.batch.bind("xmat")[:, self.gripper_body].reshape(-1, 3, 3)[:, :, 0]
        if task.object_shape == "can":
            scene = task.scene_config()
            radius = state.cube_half * scene.can_radius_m / scene.can_half_height_m
            # Offset from the can's axis so the fixed jaw comes down clear of the rim.
            bias = radius - FIXED_JAW_TO_PINCH_M + CAN_JAW_MARGIN_M
            grasp_point = cube - bias[:, None] * xaxis * [1, 1, 0]
            grasp_point[:, 2] = np.minimum(cube[:, 2], CAN_GRASP_HEIGHT_M)
            # Tall: hover a fixed gap above its top.
            return grasp_point, grasp_point + (state.cube_half + CAN_GAP_M)[:, None] * [0, 0, 1]
        # Aim the descent a little towards the fixed jaw: the open moving jaw
        # sweeps wide, and would land on the cube's top edge.
        grasp_point = cube - self.jaw_bias_m * xaxis * [1, 1, 0]
        return grasp_point, grasp_point + [0, 0, self.hover_m if task.grasps else self.hover_m / 2]

    def stack_goals(self, state) -> dict[int, np.ndarray]:
        """Pinch goals of the Stack phases, from where the cube should go (the pinch
        moves by the cube's error, so a cube held low in the jaws still lands right)."""
        top = state.target_pos[:, 2] + state.target_half + state.cube_half
        resting = np.column_stack([state.target_pos[:, :2], top + 0.002])
        carry = resting + [0, 0, 0.035]
        # Lift straight up before carrying, so the cube clears the lower object.
        low = state.cube_pos[:, 2] < carry[:, 2] - 0.02
        far = np.linalg.norm(state.cube_pos[:, :2] - carry[:, :2], axis=1) > 0.03
        lift = np.column_stack([state.cube_pos[:, :2], carry[:, 2]])
        carry = np.where((low & far)[:, None], lift, carry)
        shift = state.pinch - state.cube_pos
        lower = resting.copy()  # down at most 1 cm a step: the cube must arrive still
        lower[:, 2] = np.maximum(resting[:, 2], state.cube_pos[:, 2] - 0.01)
        # Once let go, stay put with the jaws open: rising swings the open jaws into it.
        away = state.pinch
        return {3: carry + shift, 4: state.pinch, 5: lower + shift, 6: away}


def run_episodes(env: BatchedEnv, episodes: int, seed: int = 0) -> dict[str, float]:
    """Roll the scripted controller until ``episodes`` have finished; success statistics."""
    controller = ScriptedController(env)
    obs, _ = env.reset(seed=seed)
    # Memoryless, so an episode held still from its success changes no other env's.
    finished = rollout(
        env, lambda obs: controller.act(), obs, episodes=episodes, freeze_succeeded=True
    )
    return {
        "episodes": len(finished),
        "success_rate": success_rate(finished),
        "mean_length": float(np.mean([episode.length for episode in finished])),
    }


def expert_success(
    task: str,
    twin: TwinParams,
    speed: DeploySpeed | None = None,
    episodes: int = 64,
    seed: int = 0,
) -> float:
    """The scripted expert's success in ``twin`` (at ``speed``, or the twin's own rate
    and the full action scale), without images: seconds for 64 episodes. A heavy cube in
    weak jaws lowers it; as a retraining's teacher it can also score below a policy
    (random webcam arm 323's twin: the expert 37%, the policy 84%)."""
    randomization = DomainRandomization.none(twin)
    if speed is not None:
        randomization = randomization.at_speed(speed)
    env = BatchedEnv(task, min(episodes, 32), randomization=randomization, render=False, seed=seed)
    try:
        return run_episodes(env, episodes, seed=seed)["success_rate"]
    finally:
        env.close()
