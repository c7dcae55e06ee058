"""Build the simulated scene: the SO-101, a table, the object (a cube or a can) and,
for Place, a bin or, for Stack, a second object to put the first on.

The arm comes from an MJCF file -- the shipped primitive model by default, or
any other SO-101 description (for example the official mesh model) given as a
path. Everything downstream talks to it only through the joint-name contract in
:mod:`realgap.sim.robot`, so :func:`check_joint_contract` is the one place a
foreign model is validated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from realgap.errors import ConfigError
from realgap.sim import robot

CUBE = "cube"
"""The object the arm handles: a cube, or for the can tasks a can (the name is the body's)."""
BIN = "bin"
STACK_BASE = "stack_base"
"""Stack tasks: the lower object, a free body the cube goes on."""
ASIDE_XY = (-0.25, 0.30)
"""Where the bin or the lower object waits while a session needs the cube alone (the
calibration sweep), arm frame: behind the base, out of every view the sweep takes.
In view, it hid the cube's edges at some poses and the hand-eye fit read that as
joint offsets (lift off by 1 degree on a PlaceCube session)."""
FLOOR = "floor"
DESK_FRICTION = 0.8
"""The desk's sliding friction: a cube slides on it with the larger of this and its own
(MuJoCo's rule for two geoms of one priority), so no cube here is more slippery."""
OBJECT_SHAPES = ("cube", "can")


@dataclass(frozen=True)
class SceneConfig:
    """What goes into the compiled scene (nominal values; randomization changes them later)."""

    robot_xml: Path | None = None
    """Another MJCF of the arm; None uses the shipped primitive model."""
    cube_size_m: float = 0.025
    """Cube edge length."""
    cube_mass_kg: float = 0.012
    """A 2.5 cm printed PLA cube at ~40% infill; not the 3 g of the reference sim."""
    cube_friction: float = 1.0
    """Sliding friction of the cube on the desk, whose own 0.8 is the floor (MuJoCo takes
    the larger); the jaw pads' friction governs the grip (they take precedence)."""
    cube_rgba: tuple[float, float, float, float] = (0.85, 0.1, 0.1, 1.0)
    object_shape: str = "cube"
    """The object the arm handles: ``cube`` (edge ``cube_size_m``) or ``can`` (an upright
    cylinder of ``can_radius_m`` and ``can_half_height_m``; same mass, friction, colour)."""
    can_radius_m: float = 0.0165
    """The reference randomizes 14-19 mm; this is the middle."""
    can_half_height_m: float = 0.03
    """The reference randomizes 25-35 mm; this is the middle."""
    with_bin: bool = False
    """Add the PlaceCube bin (a mocap body, so resets can move it)."""
    stack_base: str | None = None
    """Stack tasks: the lower object, ``cube`` (edge ``base_cube_size_m``) or ``can``
    (the can's size), a free body the cube goes on; None: no lower object."""
    base_cube_size_m: float = 0.03
    """The reference's lower cube: 25-35 mm edges."""
    base_mass_kg: float = 0.03
    """Heavier than the cube, as a filled can or a printed block would be."""
    base_friction: float = 0.1
    """Low, so contacts with the cube use the cube's own (randomized) friction: MuJoCo
    takes the larger of the two geoms' values."""
    base_rgba: tuple[float, float, float, float] = (0.1, 0.25, 0.85, 1.0)
    """Blue, as in the reference, so the two objects look different."""
    bin_inner_m: float = 0.09
    bin_wall_height_m: float = 0.03
    background_rgb: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Floor and sky colour: pure black, a green screen matched by a black cloth."""
    timestep: float = 0.005
    """Physics step; 200 Hz keeps grasps stable at 20 substeps per 10 Hz control step."""

    def __post_init__(self) -> None:
        if self.object_shape not in OBJECT_SHAPES:
            raise ConfigError(
                f"object_shape must be one of {OBJECT_SHAPES}, got {self.object_shape!r}"
            )
        if self.stack_base not in (None, *OBJECT_SHAPES):
            raise ConfigError(f"stack_base must be None or one of {OBJECT_SHAPES}")
        if self.with_bin and self.stack_base:
            raise ConfigError("a scene has a bin or a lower object, not both")
        sizes = (self.cube_size_m, self.can_radius_m, self.can_half_height_m, self.base_cube_size_m)
        if min(sizes) <= 0:
            raise ConfigError("object sizes must be positive")

    def object_half_height(self) -> float:
        """Nominal half height of the object."""
        return self.can_half_height_m if self.object_shape == "can" else self.cube_size_m / 2

    def base_half_height(self) -> float:
        """Nominal half height of the lower object (Stack)."""
        return self.can_half_height_m if self.stack_base == "can" else self.base_cube_size_m / 2


def check_joint_contract(spec: mujoco.MjSpec, source: str) -> None:
    """Raise with a clear message unless the arm has exactly the contract's joints."""
    names = [joint.name for joint in spec.joints if joint.type == mujoco.mjtJoint.mjJNT_HINGE]
    missing = [name for name in robot.JOINT_NAMES if name not in names]
    if missing:
        raise ConfigError(
            f"{source}: arm model lacks joints {missing}; realgap needs hinge joints "
            f"named {list(robot.JOINT_NAMES)} (found {names})"
        )
    for body in (robot.GRIPPER_BODY,):
        if spec.body(body) is None:
            raise ConfigError(f"{source}: arm model lacks the body {body!r}")


def _load_arm(config: SceneConfig) -> mujoco.MjSpec:
    path = Path(config.robot_xml) if config.robot_xml else Path(str(robot.robot_xml_path()))
    if not path.exists():
        raise FileNotFoundError(f"arm model not found: {path}")
    spec = mujoco.MjSpec.from_file(str(path))
    check_joint_contract(spec, str(path))
    gripper = spec.body(robot.GRIPPER_BODY)
    # Foreign models (e.g. the official mesh MJCF) have no pinch site or wrist
    # camera; give them ours, in the same gripper frame.
    if spec.site(robot.PINCH_SITE) is None:
        gripper.add_site(name=robot.PINCH_SITE, pos=list(robot.PINCH_POS), size=[0.004], group=3)
    if spec.camera(robot.WRIST_CAMERA) is None:
        camera = gripper.add_camera(name=robot.WRIST_CAMERA, pos=list(robot.WRIST_CAMERA_POS))
        camera.alt.type = mujoco.mjtOrientation.mjORIENTATION_XYAXES
        camera.alt.xyaxes = list(robot.WRIST_CAMERA_XYAXES)
        camera.fovy = robot.WRIST_CAMERA_FOVY
    _apply_servos(spec)
    return spec


def _apply_servos(spec: mujoco.MjSpec) -> None:
    """Write robot.SERVOS into the joints and (possibly new) position actuators."""
    existing = {actuator.name: actuator for actuator in spec.actuators}
    for name in robot.JOINT_NAMES:
        servo = robot.SERVOS[name]
        joint = spec.joint(name)
        joint.damping[0] = servo.damping
        joint.frictionloss = servo.frictionloss
        joint.armature = servo.armature
        actuator = existing.get(name)
        if actuator is None:
            actuator = spec.add_actuator(name=name, target=name)
            actuator.trntype = mujoco.mjtTrn.mjTRN_JOINT
        actuator.target = name
        actuator.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        actuator.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        actuator.gainprm[:3] = [servo.kp, 0, 0]
        actuator.biasprm[:3] = [0, -servo.kp, -servo.kv]
        actuator.forcelimited = True
        actuator.forcerange = [-servo.torque_limit, servo.torque_limit]
        actuator.ctrllimited = True
        low, high = robot.JOINT_RANGES[robot.JOINT_NAMES.index(name)]
        actuator.ctrlrange = [low, high]


def build_spec(config: SceneConfig = SceneConfig()) -> mujoco.MjSpec:
    """The full scene as an editable spec."""
    spec = _load_arm(config)
    spec.modelname = "realgap_so101_scene"
    # One userdata slot as a sentinel: MuJoCo zeroes it when it resets a diverged sim.
    spec.nuserdata = 1
    spec.option.timestep = config.timestep
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    # Elliptic cones with a high impratio hold a squeezed cube without creep
    # (pyramidal cones let it slide down 1-3 mm/s).
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = 10
    # Rendering budget: no shadows, reflections or multisampling; a coarse floor.
    spec.visual.quality.shadowsize = 0
    spec.visual.quality.offsamples = 0
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.45, 0.45, 0.45]
    spec.visual.headlight.specular = [0.0, 0.0, 0.0]
    spec.visual.rgba.haze = [*config.background_rgb, 1.0]
    spec.stat.extent = 0.6
    spec.stat.center = [0.2, 0.0, 0.1]

    world = spec.worldbody
    world.add_geom(
        name=FLOOR,
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[1.0, 1.0, 0.1],
        rgba=[*config.background_rgb, 1.0],
        friction=[DESK_FRICTION, 0.02, 0.0002],
        contype=1,
        conaffinity=1,
    )
    world.add_light(
        name="top", pos=[0.2, 0, 1.0], dir=[0, 0, -1], diffuse=[0.6, 0.6, 0.6], castshadow=False
    )
    world.add_camera(
        name="overview", pos=[0.5, -0.42, 0.32], xyaxes=[0.65, 0.76, 0, -0.33, 0.28, 0.9], fovy=45
    )

    _add_free_object(
        world,
        CUBE,
        config,
        shape=config.object_shape,
        cube_edge_m=config.cube_size_m,
        arm_xy=[0.2, 0.0],
        half=config.object_half_height(),
        mass_kg=config.cube_mass_kg,
        rgba=config.cube_rgba,
        friction=config.cube_friction,
    )
    if config.with_bin:
        _add_bin(world, config)
    if config.stack_base:
        _add_free_object(
            world,
            STACK_BASE,
            config,
            shape=config.stack_base,
            cube_edge_m=config.base_cube_size_m,
            arm_xy=[0.2, 0.12],
            half=config.base_half_height(),
            mass_kg=config.base_mass_kg,
            rgba=config.base_rgba,
            friction=config.base_friction,
        )
    return spec


def _add_free_object(
    world,
    name: str,
    config: SceneConfig,
    *,
    shape: str,
    cube_edge_m: float,
    arm_xy,
    half: float,
    mass_kg: float,
    rgba,
    friction: float,
) -> None:
    """A free body (the object, or Stack's lower object) resting on the desk at ``arm_xy``."""
    body = world.add_body(name=name, pos=[*robot.arm_to_sim(arm_xy), half])
    body.add_freejoint(name=name)
    body.add_geom(
        name=name,
        **_shape(shape, config, cube_edge_m),
        mass=mass_kg,
        rgba=list(rgba),
        friction=[friction, 0.02, 0.0002],
        condim=4,
        solref=[0.01, 1],
        contype=1,
        conaffinity=1,
    )


def _shape(shape: str, config: SceneConfig, cube_edge_m: float) -> dict:
    """Geom type and size of a cube of edge ``cube_edge_m``, or of the scene's can
    (MuJoCo cylinders stand along their z axis: size is radius, half height)."""
    if shape == "can":
        return {
            "type": mujoco.mjtGeom.mjGEOM_CYLINDER,
            "size": [config.can_radius_m, config.can_half_height_m, 0.0],
        }
    return {"type": mujoco.mjtGeom.mjGEOM_BOX, "size": [cube_edge_m / 2] * 3}


def _add_bin(world: mujoco.MjsBody, config: SceneConfig) -> None:
    inner, height, wall = config.bin_inner_m / 2, config.bin_wall_height_m / 2, 0.004
    body = world.add_body(name=BIN, pos=[*robot.arm_to_sim([0.2, 0.15]), 0.0], mocap=True)
    colour = [0.25, 0.3, 0.45, 1.0]
    body.add_geom(
        name="bin_floor",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[inner + wall, inner + wall, 0.002],
        pos=[0, 0, 0.002],
        rgba=colour,
    )
    for i, (x, y, sx, sy) in enumerate(
        [
            (inner + wall, 0, wall, inner + wall),
            (-inner - wall, 0, wall, inner + wall),
            (0, inner + wall, inner, wall),
            (0, -inner - wall, inner, wall),
        ]
    ):
        body.add_geom(
            name=f"bin_wall{i}",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[sx, sy, height],
            pos=[x, y, height],
            rgba=colour,
        )


def compile_scene(config: SceneConfig = SceneConfig()) -> tuple[mujoco.MjModel, mujoco.MjSpec]:
    """Compile the scene; returns the model and the spec it came from."""
    spec = build_spec(config)
    model = spec.compile()
    return model, spec


def joint_ids(model: mujoco.MjModel) -> dict[str, np.ndarray]:
    """qpos/dof/actuator indices of the contract joints, in contract order."""
    joints = [model.joint(name) for name in robot.JOINT_NAMES]
    return {
        "qpos": np.array([j.qposadr[0] for j in joints]),
        "dof": np.array([j.dofadr[0] for j in joints]),
        "actuator": np.array([model.actuator(name).id for name in robot.JOINT_NAMES]),
    }


@dataclass(frozen=True)
class TargetSlots:
    """Where a compiled scene keeps its target, so every world sets it down the same way:
    the bin is a mocap body (a position), the lower object a free joint (position,
    orientation, velocity). -1 where the scene has none."""

    bin_mocap: int = -1
    base_qpos: int = -1
    base_dof: int = -1

    @classmethod
    def of(cls, model: mujoco.MjModel) -> TargetSlots:
        names = {model.body(i).name for i in range(model.nbody)}
        slots = {}
        if BIN in names:
            slots["bin_mocap"] = int(model.body(BIN).mocapid[0])
        if STACK_BASE in names:
            joint = model.joint(STACK_BASE)
            slots["base_qpos"], slots["base_dof"] = int(joint.qposadr[0]), int(joint.dofadr[0])
        return cls(**slots)

    def base_pose(self, qpos: np.ndarray) -> np.ndarray:
        """The lower object's position and quaternion (7 numbers, a view) in one world's
        ``qpos`` or a batch's; it can be pushed, so this is where it is now."""
        return qpos[..., self.base_qpos : self.base_qpos + 7]

    def place(self, xyz, qpos, mocap_pos, qvel=None, yaw=0.0) -> None:
        """Put the target at ``xyz`` (sim frame; the bin's floor or the lower object's
        centre), the lower object turned ``yaw`` about the vertical and, given ``qvel``,
        at rest. Arrays are one world's (``qpos`` (nq,), ``mocap_pos`` (nmocap, 3)) or a
        batch's (a leading env axis, with ``xyz`` (n, 3) and ``yaw`` (n,)); written in place."""
        xyz = np.asarray(xyz, dtype=float)
        if self.bin_mocap >= 0:
            mocap_pos[..., self.bin_mocap, :] = xyz
        if self.base_qpos >= 0:
            half = np.asarray(yaw, dtype=float) / 2
            zero = np.zeros_like(half)
            pose = self.base_pose(qpos)
            pose[..., :3] = xyz
            pose[..., 3:] = np.stack([np.cos(half), zero, zero, np.sin(half)], axis=-1)
            if qvel is not None:
                qvel[..., self.base_dof : self.base_dof + 6] = 0.0
