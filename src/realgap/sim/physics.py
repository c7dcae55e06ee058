"""A twin's physics on a MuJoCo model, and the servos' command latency.

:meth:`TwinModel.apply` writes a :class:`~realgap.sim.randomization.TwinBatch`
into model rows -- the batched env's per-env arrays, or a single ``MjModel``
seen as one row -- so the batched twin, the fake arm and servo identification
cannot disagree about what "stiffness x0.6" or "a 9 g cube" means.
:class:`CommandDelay` is the one latency line they all use: a servo acts on the
goal written ``latency`` writes ago.
"""

from __future__ import annotations

import mujoco
import numpy as np

from realgap.sim.draws import NOMINAL, TwinBatch
from realgap.sim.scene import CUBE, STACK_BASE, SceneConfig, joint_ids

PHYSICS_FIELDS = (
    "body_mass",
    "body_inertia",
    "geom_friction",
    "geom_size",
    "actuator_gainprm",
    "actuator_biasprm",
    "actuator_forcerange",
    "dof_damping",
    "dof_frictionloss",
)
"""Model arrays a twin changes."""

JOINT_FIELDS = ("dof_damping", "dof_frictionloss")
"""Fields only some twins change: a batch expands them only then (every expanded field
costs batched-step time; these two cost ~9% at 64 envs)."""

PAD_GEOMS = ("fixed_jaw", "moving_jaw")


class TwinModel:
    """Where a twin's values go in one compiled scene, and that scene's nominal values."""

    def __init__(self, model: mujoco.MjModel):
        ids = joint_ids(model)
        self.dof, self.act = ids["dof"], ids["actuator"]
        self.cube_body = model.body(CUBE).id
        self.cube_geom = model.geom(CUBE).id
        # A can's size is a scale of the scene's can; a cube's is the twin's edge.
        self.cube_is_box = model.geom_type[self.cube_geom] == mujoco.mjtGeom.mjGEOM_BOX
        has_base = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, STACK_BASE) >= 0
        self.base_geom = model.geom(STACK_BASE).id if has_base else -1
        self.base_body = model.body(STACK_BASE).id if has_base else -1
        self.pads = [
            model.geom(name).id
            for name in PAD_GEOMS
            if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name) >= 0
        ]
        self.nominal = {name: getattr(model, name).copy() for name in PHYSICS_FIELDS}

    @staticmethod
    def single_row(model: mujoco.MjModel) -> dict[str, np.ndarray]:
        """A single model's arrays as one row (views: writes reach the model)."""
        return {name: getattr(model, name)[None] for name in PHYSICS_FIELDS}

    def apply(self, rows: dict[str, np.ndarray], ids: np.ndarray, twin: TwinBatch) -> None:
        """Write ``twin`` (len(ids) rows) into ``rows[name][ids]``. Callers then recompute
        the model's derived constants (``set_const`` / ``mj_setConst``): stale ones make
        light cubes blow up."""
        nom, body, geom, act, dof = self.nominal, self.cube_body, self.cube_geom, self.act, self.dof
        # Scales of this scene's cube (exactly the twin's scales for the default scene).
        mass_scale = twin.cube_mass_scale * (NOMINAL.cube.mass_kg / nom["body_mass"][body])
        size_scale = twin.cube_size_scale
        if self.cube_is_box:
            size_scale = size_scale * (NOMINAL.cube.size_m / (2 * nom["geom_size"][geom, 0]))
        rows["body_mass"][ids, body] = nom["body_mass"][body] * mass_scale
        rows["body_inertia"][ids, body] = (
            nom["body_inertia"][body] * (mass_scale * size_scale**2)[:, None]
        )
        rows["geom_size"][ids, geom] = nom["geom_size"][geom] * size_scale[:, None]
        rows["geom_friction"][ids, geom, 0] = twin.cube_friction
        for pad in self.pads:
            rows["geom_friction"][ids, pad, 0] = twin.finger_friction
        if self.base_geom >= 0:
            base, base_body, scale = self.base_geom, self.base_body, twin.base_size_scale
            rows["geom_size"][ids, base] = nom["geom_size"][base] * scale[:, None]
            rows["body_mass"][ids, base_body] = nom["body_mass"][base_body] * scale**3
            rows["body_inertia"][ids, base_body] = (
                nom["body_inertia"][base_body] * (scale**5)[:, None]
            )
        kp = nom["actuator_gainprm"][act, 0][None, :] * twin.kp_scale[:, None]
        rows["actuator_gainprm"][np.ix_(ids, act, [0])] = kp[:, :, None]
        rows["actuator_biasprm"][np.ix_(ids, act, [1])] = -kp[:, :, None]
        rows["actuator_forcerange"][np.ix_(ids, act)] = (
            nom["actuator_forcerange"][act][None] * twin.torque_scale[:, None, None]
        )
        for name, scale in (
            ("dof_damping", twin.damping_scale),
            ("dof_frictionloss", twin.frictionloss_scale),
        ):
            if name in rows:  # a batch expands these only when a twin changes them
                rows[name][np.ix_(ids, dof)] = nom[name][dof][None] * scale[:, None]
            elif np.any(scale != 1.0):
                raise ValueError(f"{name} is not expanded, but the twin scales it")


class CommandDelay:
    """Per-env command latency: ``push`` stores the newest goals and returns, for each
    env, the goals written ``latency[env]`` pushes ago (what its servos act on)."""

    def __init__(self, latency, start: np.ndarray, capacity: int | None = None):
        start = np.atleast_2d(np.asarray(start, dtype=float))
        self.latency = np.broadcast_to(np.asarray(latency, dtype=int), (len(start),)).copy()
        if (self.latency < 0).any():
            raise ValueError("latency must be >= 0")
        slots = max(int(self.latency.max()), capacity or 0) + 1
        # Slot k holds the goals pushed k pushes ago.
        self.slots = np.repeat(start[:, None, :], slots, axis=1)

    def reset(self, ids, value, latency=None) -> None:
        """Fill envs ``ids`` with ``value`` (as if held for ever), optionally new latencies."""
        if latency is not None:
            latency = np.asarray(latency, dtype=int)
            if (latency >= self.slots.shape[1]).any():
                raise ValueError(f"latency {latency.max()} beyond capacity")
            self.latency[ids] = latency
        self.slots[ids] = np.asarray(value, dtype=float)[..., None, :]

    def push(self, goals: np.ndarray) -> np.ndarray:
        self.slots = np.roll(self.slots, 1, axis=1)
        self.slots[:, 0] = goals
        return self.applied

    @property
    def applied(self) -> np.ndarray:
        """The goals each env's servos act on now."""
        return self.slots[np.arange(len(self.slots)), self.latency]


def object_half_height(scene: SceneConfig, twin: TwinBatch) -> np.ndarray:
    """Each env's object half height (n,): a cube's is the twin's edge over two, a
    can's the scene's half height scaled like its radius (the reference draws them
    apart; one scale keeps one size field in the twin)."""
    if scene.object_shape == "can":
        return scene.can_half_height_m * twin.cube_size_scale
    return twin.cube_size_m / 2


def target_half_height(scene: SceneConfig, twin: TwinBatch) -> np.ndarray:
    """Each env's lower-object half height (n,) for Stack tasks; zeros otherwise."""
    if not scene.stack_base:
        return np.zeros(len(twin.base_size_scale))
    return scene.base_half_height() * twin.base_size_scale
