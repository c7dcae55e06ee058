"""Worlds a policy can be deployed in: the fake arm, or the real SO-101.

A :class:`World` bundles an arm, a camera, a clock, how the scene is set for
an episode (the fake world places the cube itself; on the real arm the
operator is asked to), and how success is judged (the fake world's task flag;
on the real arm the operator's key, with the twin's estimate beside it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from realgap.bridge.fake import FakeArm, FakeWorld
from realgap.bridge.fake_camera import FakeCamera
from realgap.bridge.interfaces import Arm, Camera, Clock, VirtualClock
from realgap.bridge.lerobot_arm import LeRobotArm
from realgap.bridge.opencv_camera import OpenCVCamera
from realgap.bridge.profile import RealityProfile, load_profile
from realgap.bridge.safety import SafeArm
from realgap.sim import robot
from realgap.sim.tasks import make_task


@dataclass(frozen=True)
class Spot:
    """Where the object (and the bin or lower object, ``target_xy``) go for one episode,
    in the arm frame (from the rotation axis)."""

    name: str
    cube_xy: tuple[float, float]
    target_xy: tuple[float, float] | None = None
    yaw: float = 0.0
    in_distribution: bool = True
    """Inside the training square (spots outside are reported separately)."""
    marked: bool = False
    """Placed on a printed mark aligned to the base (calibration), not measured with a
    tape: millimetre-accurate, and immune to measuring from the wrong origin."""


@dataclass
class World:
    kind: Literal["fake", "real"]
    task: str
    arm: Arm
    camera: Camera
    clock: Clock
    place_scene: Callable[[Spot], None]
    """Set the scene for a spot (returns once the objects are in place)."""
    begin_episode: Callable[[int], None] = lambda index: None
    """Called with an episode's index in its session before its scene is set: the fake
    world keys that episode's noise to it (:meth:`FakeWorld.begin_episode`)."""
    truth: Callable[[], tuple] | None = None
    """Privileged state where the world has it (fake): ``(SimState, camera position,
    camera matrix, fovy)`` for success flags and failure reasons; None on the real arm."""
    ask: Callable[[str], str] = input
    """How the real world asks the operator (replaced in tests)."""
    name: str = ""
    extra: dict = field(default_factory=dict)
    close: Callable[[], None] = lambda: None

    def judge(self, estimate: bool | None, success_flag: bool | None) -> bool:
        """Episode success: the task flag in the fake world, the operator's key on the arm."""
        if success_flag is not None:
            return success_flag
        hint = "" if estimate is None else f" (twin estimate: {'yes' if estimate else 'no'})"
        while True:
            answer = self.ask(f"Success?{hint} [y/n] ").strip().lower()
            if answer in ("y", "yes", "n", "no"):
                return answer.startswith("y")


@contextmanager
def at_start_pose(world: World) -> Iterator:
    """Camera connected, torque on without a jump, the arm at the start pose -- where
    camera locks and checks are defined -- then torque off and the camera released."""

    world.camera.connect()
    try:
        with SafeArm(world.arm, clock=world.clock) as arm:
            arm.enable()
            arm.move_to(robot.KEYFRAMES["start"])
            yield arm
    finally:
        world.camera.disconnect()


def open_fake_world(
    task: str,
    profile: RealityProfile | str | None = None,
    seed: int = 0,
    realtime: bool = False,
    operator_s: float = 10.0,
) -> World:
    """A fake arm with a hidden reality profile (virtual time unless ``realtime``);
    ``operator_s`` of virtual time pass while the "operator" resets each episode."""

    if not isinstance(profile, RealityProfile):
        profile = load_profile(profile)
    clock = Clock() if realtime else VirtualClock()
    world = FakeWorld(task, profile, clock, seed=seed)
    camera = FakeCamera(world, camera_id=f"fake_{profile.name}")
    camera_id = world.model.camera(robot.WRIST_CAMERA).id

    def truth() -> tuple:
        state = world.sim_state()  # advances the physics to now, then reads
        fovy = float(world.model.cam_fovy[camera_id])
        return (
            state,
            world.data.cam_xpos[camera_id][None],
            world.data.cam_xmat[camera_id][None],
            fovy,
        )

    def place(spot: Spot) -> None:
        if not realtime:
            # Resetting the scene takes an operator a while; the servos cool meanwhile.
            clock.sleep(operator_s)
        # An operator is a few millimetres off every time; half a millimetre on a mark.
        jitter = world.placement_rng.normal(0.0, 0.0005 if spot.marked else 0.002, 2)
        world.place_objects(
            np.asarray(spot.cube_xy) + jitter, spot.target_xy, spot.yaw, spot.marked
        )

    return World(
        kind="fake",
        task=task,
        arm=FakeArm(world),
        camera=camera,
        clock=clock,
        place_scene=place,
        begin_episode=world.begin_episode,
        truth=truth,
        name=f"fake:{profile.name}",
        extra={"world": world, "profile": profile},
    )


def open_real_world(
    task: str,
    port: str,
    robot_id: str,
    camera_index: int | str = 0,
    calibration_dir=None,
    ask: Callable[[str], str] = input,
) -> World:
    """The real SO-101 through LeRobot, with an OpenCV wrist camera."""

    arm = LeRobotArm(port=port, robot_id=robot_id, calibration_dir=calibration_dir)
    camera = OpenCVCamera(camera_index)

    def place(spot: Spot) -> None:
        where = f"x={spot.cube_xy[0] * 100:.1f} cm, y={spot.cube_xy[1] * 100:.1f} cm"
        if spot.marked:
            where += " (on the printed mark)"
        task_obj = make_task(task)
        target_text = ""
        if spot.target_xy is not None:
            what = "bin" if task_obj.has_bin else f"the {task_obj.target_object} to stack on"
            x, y = spot.target_xy
            target_text = f"; {what} at x={x * 100:.1f} cm, y={y * 100:.1f} cm"
        ask(
            f"[{spot.name}] place the {task_obj.object_shape} at {where} from the "
            f"shoulder_pan rotation axis{target_text}, then press Enter "
        )

    return World(
        kind="real",
        task=task,
        arm=arm,
        camera=camera,
        clock=Clock(),
        place_scene=place,
        ask=ask,
        name=f"real:{robot_id}",
    )
