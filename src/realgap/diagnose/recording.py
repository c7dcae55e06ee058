"""The calibration recording: a short, safe, scripted session on any arm.

``realgap calibrate record`` commands it (through :class:`SafeArm`, so the
same limits apply as in deployment) and stores it as one ``.npz``:

1. **Pose sweep.** A still cube on a printed mark; the arm visits poses around the
   start pose (wide on lift, elbow and wrist flex, the cube always in view), each the
   most informative for the joint offsets among seeded candidates
   (:mod:`realgap.diagnose.pose_design`), settles, and at each one stores averaged
   joint readings and a fresh full-resolution camera frame. The camera and
   joint-offset diagnostics use it.
   Optionally (``second_mark``) the operator moves the cube to a second mark halfway
   through: meant to separate lift and elbow zero errors, which near one extension
   move the camera alike; on six random arms it did not make the fit more accurate
   (docs/results/2026-12-05-calibration.md), so one mark stays the default.
2. **Step responses.** From the start pose, each arm joint in turn steps twice by
   ``2 * step_rad`` (two commands, each below the safety layer's max step) and
   back, commanded at the control rate while the readings are sampled four times
   per command. Servo identification uses it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from realgap.bridge.safety import SafeArm
from realgap.bridge.worlds import Spot, World, at_start_pose
from realgap.diagnose.pose_design import (
    SweepDesign,
    box_corners,
    joint_variance,
    prior_information,
)
from realgap.errors import ConfigError
from realgap.sim import robot
from realgap.sim.failures import cube_in_view
from realgap.sim.scene import ASIDE_XY, CUBE, compile_scene, joint_ids
from realgap.sim.tasks import make_task

MIN_PINCH_HEIGHT_M = 0.055
"""Lowest pinch point of a sweep pose: 3 cm above a 2.5 cm cube, with room for a few
degrees of joint zero error (the start pose holds it at 6 cm)."""
MIN_OBJECT_CLEARANCE_M = 0.02
"""Closest any part of the arm may come to the object on its mark, at a sweep pose and
on the way there, judged in the nominal twin: a 3-degree lift zero error moves the
jaws about 13 mm at the sweep's reach, a 3 cm cube stands 2.5 mm taller than the
twin's, and soft servos sag. Random arm 4's sweep passed 8.5 mm from the nominal cube
and pushed its 2.9 cm cube 4 mm off its mark, so its fit was refused. About 3% of
the paths the table rule alone allows come closer than this."""
SETTLE_S = 0.6
"""Wait at each pose before reading and capturing."""
HOLD_WRITES = 8
"""Writes at the start pose before each joint's steps (the first hold is the reference)."""
POSE_EXCURSION_RAD = np.array([0.60, 1.20, 1.30, 1.00, 0.40, 0.0])
"""Largest pose-sweep excursion per joint from the start pose. Wide on lift, elbow and
wrist flex: near one arm extension, lift and elbow offsets of opposite sign move the
camera along its view, and only views from other extensions tell them apart. With
excursions of 0.35 and 0.4 rad the lift offset came out up to 1.1 degrees off (mean
+0.63 over four fake arms and three seeds); with these, up to 0.55 (mean +0.24;
docs/adapt.md)."""
POSE_READS = 5
"""Readings averaged at each sweep pose (the fit pools 32 poses, so their noise averages
out there)."""
CHECK_READS = 40
"""Readings averaged at the start-pose views before and after the sweep, which decide
whether the sweep moved the cube: the arm's own small return error is taken out with
them, so their noise is the check's. Encoders that read 0.3-0.4 degrees noisy (random
arms draw up to 0.4) averaged over 5 reads put the predicted cube up to 2.8 px off, and
2 of 60 random arms whose cubes had not moved were refused; over 40 reads, at most 1.0
px over 120 arms against the 1.5 px limit (a 3 mm push). 40 reads take about 0.1 s of
bus time on an SO-101."""
ASIDE_VIEW_MARGIN = 1.2
"""No corner of the bin or lower object set aside may lie within this many half-widths
of the view's centre (a little beyond the frame: its walls reach past its corners)."""
POOL_PER_POSE = 40
"""Candidate poses drawn per pose wanted; the sweep takes the most informative in turn
(:mod:`realgap.diagnose.pose_design`)."""
CUBE_IN_VIEW = 0.6
"""A sweep pose must see the cube's centre within this central fraction of the view
(of each half-width, judged in the nominal twin), so that the cube is whole in the
frame whatever the camera's small differences."""


@dataclass
class CalibrationRecording:
    task: str
    world: str
    cube_xy: tuple[float, float]
    """Where the cube was placed for the pose sweep (arm frame, as the operator measured);
    the first mark when there were two (``pose_cube_xy`` says which each pose saw)."""
    control_hz: float
    sample_hz: float
    step_rad: float
    pose_readings: np.ndarray  # (P, 6) averaged readings, radians
    pose_frames: np.ndarray  # (P, H, W, 3) uint8, the camera's native frames
    step_writes: np.ndarray  # (W, 6) goals written, one per control tick
    step_samples: np.ndarray  # (S, 6) readings, sample_hz
    step_sample_write: np.ndarray  # (S,) index of the last write before each sample
    meta: dict = field(default_factory=dict)
    check_readings: np.ndarray | None = None  # (2, 6) at the start pose, before and after
    check_frames: np.ndarray | None = None  # (2, H, W, 3) the views there: did the cube move?
    pose_cube_xy: np.ndarray | None = None  # (P, 2) the mark each pose saw (None: cube_xy)

    @property
    def cube_positions(self) -> np.ndarray:
        """Where the cube was for each pose of the sweep, (P, 2)."""
        if self.pose_cube_xy is not None:
            return np.asarray(self.pose_cube_xy, dtype=float)
        return np.tile(np.asarray(self.cube_xy, dtype=float), (len(self.pose_readings), 1))

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {k: v for k, v in asdict(self).items() if isinstance(v, np.ndarray)}
        header = {k: v for k, v in asdict(self).items() if not isinstance(v, np.ndarray)}
        np.savez_compressed(path, header=np.array(json.dumps(header)), **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> CalibrationRecording:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"calibration recording not found: {path}")
        with np.load(path, allow_pickle=False) as data:
            if "header" not in data:
                raise ConfigError(f"{path}: not a realgap calibration recording")
            header = json.loads(str(data["header"]))
            header["cube_xy"] = tuple(header["cube_xy"])
            arrays = {k: data[k] for k in data.files if k != "header"}
        return cls(**header, **arrays)


SECOND_MARK_XY = (0.27, 0.05)
"""The second mark of the pose sweep, arm frame: 7 cm farther and to the side."""


def record_calibration(
    world: World,
    cube_xy: tuple[float, float] = (0.2, 0.0),
    poses: int = 32,
    step_rad: float = 0.05,
    control_hz: float = 15.0,
    seed: int = 0,
    second_mark: tuple[float, float] | None = None,
) -> CalibrationRecording:
    """Run the scripted calibration session on ``world`` and return the recording; with
    a ``second_mark`` (e.g. :data:`SECOND_MARK_XY`), half the poses see the cube there."""
    clock = world.clock
    start = robot.KEYFRAMES["start"]
    readings, frames, seen = [], [], []
    marks = [cube_xy] if second_mark is None else [cube_xy, second_mark]
    counts = [poses] if second_mark is None else [poses - poses // 2, poses // 2]
    with at_start_pose(world) as arm:
        # The cube alone in view: a bin or lower object waits aside, as in the twin.
        aside = ASIDE_XY if make_task(world.task).has_target else None
        checks = []
        for index, (mark, count) in enumerate(zip(marks, counts)):
            world.place_scene(Spot("calibration", mark, target_xy=aside, marked=True))
            clock.sleep(SETTLE_S)
            if index == 0:
                checks.append(_view(world, arm, CHECK_READS))
                height, width = checks[0][1].shape[:2]
            for pose in sweep_poses(world.task, count, seed + index, mark, aspect=width / height):
                arm.move_to(pose)
                clock.sleep(SETTLE_S)
                reading, frame = _view(world, arm, POSE_READS)
                readings.append(reading)
                frames.append(frame)
                seen.append(mark)
            arm.move_to(start)
            clock.sleep(1.0)
            if index == 0:  # before the cube moves on: did the sweep knock it?
                checks.append(_view(world, arm, CHECK_READS))
        writes, samples, sample_write = _step_responses(arm, clock, step_rad, control_hz)
    return CalibrationRecording(
        task=world.task,
        world=world.name,
        cube_xy=tuple(float(v) for v in cube_xy),
        control_hz=control_hz,
        sample_hz=4 * control_hz,
        step_rad=step_rad,
        pose_readings=np.array(readings),
        pose_frames=np.array(frames),
        step_writes=np.array(writes),
        step_samples=np.array(samples),
        step_sample_write=np.array(sample_write),
        meta={"seed": seed, "poses": poses, "marks": [list(mark) for mark in marks]},
        check_readings=np.array([readings for readings, _ in checks]),
        check_frames=np.array([frame for _, frame in checks]),
        pose_cube_xy=np.array(seen, dtype=float),
    )


def _view(world: World, arm: SafeArm, reads: int) -> tuple[np.ndarray, np.ndarray]:
    """The joints' readings averaged over ``reads`` and a fresh camera frame."""
    readings = np.mean([arm.read_positions() for _ in range(reads)], axis=0)
    return readings, world.camera.read_fresh(world.clock.now()).image


def sweep_poses(
    task: str,
    count: int,
    seed: int,
    cube_xy: tuple[float, float] = (0.2, 0.0),
    aspect: float = 4 / 3,
) -> list[np.ndarray]:
    """``count`` poses around the start pose, each in turn the candidate (of
    :data:`POOL_PER_POSE` per pose, seeded) that most shrinks the joint offsets'
    uncertainty (:mod:`realgap.diagnose.pose_design`), checked in the twin: within the
    joint ranges; the object's centre in the middle of the view (:data:`CUBE_IN_VIEW`;
    ``aspect`` is the camera frame's width over its height) and the bin or lower object
    set aside out of it; and, at the pose and on the way there from the one before, the
    pinch point at least ``MIN_PINCH_HEIGHT_M`` above the table and every part of the
    arm at least ``MIN_OBJECT_CLEARANCE_M`` from the object -- a sweep that touches the cube knocks
    it off its mark (by 7 mm dipping toward the table on a soft-servo arm, by 4 mm
    passing beside a big cube), and every frame after that lies about where it is."""
    scene = make_task(task).scene_config()
    model, _ = compile_scene(scene)
    data = mujoco.MjData(model)
    qpos = joint_ids(model)["qpos"]
    pinch = model.site(robot.PINCH_SITE).id
    camera = model.camera(robot.WRIST_CAMERA).id
    cube = np.array([[*robot.arm_to_sim(cube_xy), scene.object_half_height()]])
    placed = model.joint(CUBE).qposadr[0]
    data.qpos[placed : placed + 7] = [*cube[0], 1.0, 0.0, 0.0, 0.0]
    target, arm_geoms = model.geom(CUBE).id, _arm_geoms(model)

    def clear(pose: np.ndarray) -> bool:
        data.qpos[qpos] = pose
        mujoco.mj_kinematics(model, data)
        if data.site_xpos[pinch][2] < MIN_PINCH_HEIGHT_M:
            return False
        # mj_geomDistance returns its cap (cheaply) for pairs farther apart than it.
        cap, unused = MIN_OBJECT_CLEARANCE_M, np.zeros(6)
        return all(
            mujoco.mj_geomDistance(model, data, geom, target, cap, unused) >= cap
            for geom in arm_geoms
        )

    aside = _aside_corners(scene)

    def object_in_view(pose: np.ndarray) -> bool:
        """The cube in the middle of the view, and the bin or lower object set aside out of
        it (the poses chosen for what they tell look around more than random ones)."""
        data.qpos[qpos] = pose
        mujoco.mj_kinematics(model, data)
        mujoco.mj_camlight(model, data)  # camera poses are computed here
        position, turn = data.cam_xpos[camera][None], data.cam_xmat[camera][None]
        fovy = model.cam_fovy[camera]
        if not cube_in_view(cube, position, turn, fovy, fraction=CUBE_IN_VIEW, aspect=aspect)[0]:
            return False
        if aside is None:
            return True
        seen = cube_in_view(
            aside,
            np.repeat(position, len(aside), axis=0),
            np.repeat(turn, len(aside), axis=0),
            fovy,
            fraction=ASIDE_VIEW_MARGIN,
            aspect=aspect,
        )
        return not seen.any()

    start = robot.KEYFRAMES["start"]
    low, high = robot.JOINT_RANGES[:, 0] + 0.05, robot.JOINT_RANGES[:, 1] - 0.05
    rng = np.random.default_rng(seed)
    candidates: list[np.ndarray] = []
    for _ in range(500 * count):
        pose = start + rng.uniform(-1, 1, 6) * POSE_EXCURSION_RAD
        if np.any(pose < low) or np.any(pose > high):
            continue
        if clear(pose) and object_in_view(pose):
            candidates.append(pose)
            if len(candidates) == POOL_PER_POSE * count:
                break
    design = SweepDesign(model, scene, cube[0])
    information = np.array([design.information(pose) for pose in candidates])
    known, out, previous = prior_information(), [], start
    taken = np.zeros(len(candidates), dtype=bool)
    while len(out) < count and not taken.all():
        # The most informative candidate the arm can reach from the last pose: the way
        # there must clear the table and the object too, and from the last pose so must
        # the way back to the start pose.
        variance = np.where(taken, np.inf, joint_variance(known + information))
        for index in np.argsort(variance)[: len(candidates) - int(taken.sum())]:
            pose = candidates[index]
            ways = [(previous, pose)] + ([(pose, start)] if len(out) == count - 1 else [])
            if all(clear(point) for a, b in ways for point in ramp_points(a, b)):
                break
        else:
            break
        taken[index] = True
        known = known + information[index]
        out.append(pose)
        previous = pose
    if len(out) == count:
        return out
    raise ConfigError(
        f"found only {len(out)} of {count} sweep poses that keep clear of the table and "
        f"{MIN_OBJECT_CLEARANCE_M * 100:.0f} cm from the cube with the cube in view: put the "
        "mark where the start pose looks (the default: 20 cm in front of the pan axis)"
    )


def ramp_points(start: np.ndarray, goal: np.ndarray, spacing_rad: float = 0.05) -> list:
    """Points on the way :meth:`SafeArm.move_to` takes from ``start`` to ``goal``, at
    most ``spacing_rad`` apart (at least four): every joint at the ramp speed until it
    arrives, so the joints with little to go arrive first and the way bends off the
    straight line in joint space (random arm 13's jaw, checked on the line alone, pushed
    its cube 3 cm). Four points on every way were enough for random poses; the chosen
    ones hug the checks' limits, and between four points one passed 14.7 mm from the
    cube where the rule is 20."""
    distance = np.abs(goal - start).max()
    count = max(4, int(np.ceil(distance / spacing_rad)))
    travelled = distance * np.arange(1, count + 1) / (count + 1)
    return [start + np.clip(goal - start, -s, s) for s in travelled]


def _aside_corners(scene) -> np.ndarray | None:
    """The corners of the bin or lower object waiting at :data:`ASIDE_XY` (sim frame),
    or None for a scene without one."""
    if scene.with_bin:
        half = np.array([scene.bin_inner_m / 2 + 0.01] * 2 + [scene.bin_wall_height_m / 2])
    elif scene.stack_base == "can":
        half = np.array([scene.can_radius_m] * 2 + [scene.can_half_height_m])
    elif scene.stack_base:
        half = np.full(3, scene.base_cube_size_m / 2)
    else:
        return None
    return box_corners([*robot.arm_to_sim(ASIDE_XY), half[2]], half)


def _arm_geoms(model: mujoco.MjModel) -> list[int]:
    """The geoms that move with the arm's joints (the base stays put)."""
    shoulder = model.joint(robot.JOINT_NAMES[0]).bodyid[0]
    moving = set()
    for body in range(model.nbody):
        ancestor = body
        while ancestor not in (0, shoulder):
            ancestor = model.body_parentid[ancestor]
        if ancestor == shoulder:
            moving.add(body)
    return [geom for geom in range(model.ngeom) if model.geom_bodyid[geom] in moving]


STEP_CYCLES = 2
"""Up-and-back steps per joint: soft servos differ from stiff ones only in the few
samples after each edge, so more edges (and two-command steps) resolve stiffness."""


def _step_responses(arm: SafeArm, clock, step_rad: float, control_hz: float):
    """Hold; then, twice, step one joint up by two commands of ``step_rad`` (each
    within the safety layer's max step), hold, and step back; each arm joint in turn."""
    base = arm.last_sent.copy()
    plan = []
    for joint in range(5):
        mid, up = base.copy(), base.copy()
        mid[joint] += step_rad
        up[joint] += 2 * step_rad
        plan += [base] * HOLD_WRITES
        plan += ([mid] + [up] * 9 + [mid] + [base] * 9) * STEP_CYCLES
    writes, samples, sample_write = [], [], []
    period = 1.0 / control_hz
    with arm.control_loop():
        for index, goal in enumerate(plan):
            writes.append(arm.command(goal))
            for _ in range(4):  # sample the readings between commands
                clock.sleep(period / 4)
                # Three reads at one instant: reading noise, not motion, is averaged.
                samples.append(np.mean([arm.read_positions() for _ in range(3)], axis=0))
                sample_write.append(index)
    return writes, samples, sample_write
