"""Dressing a scene beyond the twin's: a textured desk, lamps and shadows, clutter.

:class:`SceneDressing` is what a fake arm's room adds to the compiled scene (its
profile's ``[desk]``, ``[lights]`` and ``[clutter]``), and :func:`desk_materials` the
bank of desk patterns the twin's randomization paints its floor with. Both go into the
model at compile time (MuJoCo uploads textures when a renderer starts), so
:func:`compile_dressed` is the one way a dressed scene is built.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from realgap.sim import robot
from realgap.sim.scene import FLOOR, SceneConfig, build_spec

DESK_EXTENT_M = 0.5
"""One desk texture covers this much desk (it repeats beyond); see sim/textures.py."""
SHADOW_MAP = 512
"""Shadow-map resolution when the room's light casts shadows (the twin's is 0: none):
the arm's shadow on the desk is soft-edged at 640x480 either way, and 2048 cost a frame
about 10 ms more on a CPU renderer."""


@dataclass(frozen=True)
class Lamp:
    """A further light: position (arm frame, metres) and intensity (the twin's top
    light is 0.6), aimed at the middle of the work area. Lamps light but cast no
    shadows: each shadow-casting light costs a depth pass per frame."""

    pos_m: tuple[float, float, float]
    intensity: float


@dataclass(frozen=True)
class Distractor:
    """A static everyday object on the desk (arm frame, metres)."""

    shape: str  # "box" or "cylinder"
    size_m: tuple[float, float, float]  # half sizes (a cylinder: radius, -, half height)
    xy_m: tuple[float, float]
    rgb: tuple[float, float, float]
    yaw: float = 0.0


@dataclass(frozen=True, eq=False)
class SceneDressing:
    """What a room adds to the twin's scene; the default adds nothing."""

    desk: np.ndarray | None = None
    """An RGB uint8 texture of ``DESK_EXTENT_M`` of desk, painted on the floor; None:
    the twin's flat colour."""
    shadows: bool = False
    lamps: tuple[Lamp, ...] = ()
    distractors: tuple[Distractor, ...] = ()
    desk_bank: tuple[np.ndarray, ...] = ()
    """Grey desk patterns for the twin's randomization (materials ``desk_0``...)."""
    shadow_map: int = 0
    """A shadow map to allocate although no light casts shadows yet (the twin's
    renderer switches them on per env)."""

    @property
    def is_plain(self) -> bool:
        return (
            self.desk is None
            and not self.shadows
            and not self.lamps
            and not self.distractors
            and not self.desk_bank
            and not self.shadow_map
        )


WORK_AREA_ARM = (0.2, 0.0)


def _add_texture(spec: mujoco.MjSpec, name: str, image: np.ndarray) -> None:
    height, width = image.shape[:2]
    texture = spec.add_texture(
        name=name, type=mujoco.mjtTexture.mjTEXTURE_2D, width=width, height=height, nchannel=3
    )
    # Measured on a marker: with these, image row r and column c land at sim
    # (c, r) / size * DESK_EXTENT_M, repeating every DESK_EXTENT_M (a uniform plane
    # texture repeats texrepeat times over two metres, and its rows run bottom-up).
    texture.data = np.ascontiguousarray(np.flipud(image)).tobytes()
    material = spec.add_material(name=name, texuniform=True)
    material.texrepeat = [2.0 / DESK_EXTENT_M, 2.0 / DESK_EXTENT_M]
    textures = [""] * len(material.textures)
    textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = name
    material.textures = textures


def dress_spec(spec: mujoco.MjSpec, dressing: SceneDressing) -> None:
    """Add the dressing to a scene spec (before it compiles)."""
    floor = spec.geom(FLOOR)
    if dressing.desk is not None:
        _add_texture(spec, "desk", dressing.desk)
        floor.material = "desk"
        floor.rgba = [1.0, 1.0, 1.0, 1.0]  # the texture carries the colour
    for index, pattern in enumerate(dressing.desk_bank):
        _add_texture(spec, f"desk_{index}", pattern)
    spec.visual.quality.shadowsize = SHADOW_MAP if dressing.shadows else dressing.shadow_map
    for light in spec.lights:
        light.castshadow = dressing.shadows
    target = np.array([*robot.arm_to_sim(WORK_AREA_ARM), 0.0])
    for index, lamp in enumerate(dressing.lamps):
        position = np.array([*robot.arm_to_sim(lamp.pos_m[:2]), lamp.pos_m[2]])
        direction = target - position
        spec.worldbody.add_light(
            name=f"lamp_{index}",
            pos=position.tolist(),
            dir=(direction / np.linalg.norm(direction)).tolist(),
            diffuse=[lamp.intensity] * 3,
            castshadow=False,
            cutoff=60.0,
        )
    for index, item in enumerate(dressing.distractors):
        box = item.shape == "box"
        size = list(item.size_m) if box else [item.size_m[0], item.size_m[2], 0.0]
        half_height = item.size_m[2]
        spec.worldbody.add_geom(
            name=f"distractor_{index}",
            type=mujoco.mjtGeom.mjGEOM_BOX if box else mujoco.mjtGeom.mjGEOM_CYLINDER,
            size=size,
            pos=[*robot.arm_to_sim(item.xy_m), half_height],
            quat=[np.cos(item.yaw / 2), 0.0, 0.0, np.sin(item.yaw / 2)],
            rgba=[*item.rgb, 1.0],
            contype=1,
            conaffinity=1,
        )


def compile_dressed(config: SceneConfig, dressing: SceneDressing | None = None):
    """The scene compiled with its dressing; returns the model and its spec."""
    spec = build_spec(config)
    if dressing is not None and not dressing.is_plain:
        dress_spec(spec, dressing)
    return spec.compile(), spec


def desk_materials(model: mujoco.MjModel) -> np.ndarray:
    """Ids of the twin's desk-pattern materials (``desk_0``, ``desk_1``...), in order."""
    ids = []
    while True:
        found = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_MATERIAL, f"desk_{len(ids)}")
        if found < 0:
            return np.array(ids, dtype=int)
        ids.append(found)
