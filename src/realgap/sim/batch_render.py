"""The batched twin's wrist camera: every env's view in one framebuffer, one readback.

:class:`BatchRenderer` draws env i's view into tile i of one offscreen framebuffer
(``mjr_render`` per viewport, then a single ``mjr_readPixels``) and post-processes the
whole batch in one vectorized pass (:func:`realgap.policy_io.postprocess_batch`).
Profiled at 64 envs, per-image readbacks and per-image numpy post-processing were
about 40% of a step with images; this is where that time went back.

Each env's view carries its episode's draws from the randomization: mount error and
wobble, light, colours, a desk pattern from :data:`DESK_BANK` or a flat desk,
shadows, and a camera's optics and sensor (motion blur, radial distortion,
vignetting, white balance, read noise, JPEG), all applied at render resolution.
"""

from __future__ import annotations

import contextlib
import copy
import math

import cv2
import mujoco
import numpy as np

from realgap.policy_io import postprocess_batch
from realgap.sim.camera_effects import distortion_maps, jpeg_roundtrip, vignetting_gain
from realgap.sim.draws import DESK_PATTERNS, StepNoise, TwinBatch
from realgap.sim.dressing import SceneDressing, desk_materials
from realgap.sim.randomization import DomainRandomization
from realgap.sim.render import TwinVisuals
from realgap.sim.textures import load_desk_image, pattern

DESK_KINDS = ("wood", "cloth", "mat", "paper")
DESK_CONTRASTS = (0.25, 0.5)
DESK_SCALES_M = {"wood": 0.02, "cloth": 0.006, "mat": 0.01, "paper": 0.03}
DESK_MEAN = 0.75
"""The bank's patterns swing around this grey; the material's colour (the drawn
background over it) tints them, so a drawn colour of 0.75 or brighter saturates."""
TWIN_SHADOW_MAP = 256
"""Shadow-map resolution of the twin's renders (64 x 64 pixels need no more)."""
TWIN_TESSELLATION = {"numslices": 24, "numstacks": 6, "numquads": 1}
"""How finely the twin's tiles draw capsules, cylinders and boxes (MuJoCo's defaults:
28, 16, 4). A CPU renderer's cost follows the triangles: on Mesa's llvmpipe a step of
32 PickCube envs in a shadowed room (three passes over every triangle) took 63-66 ms
at the defaults and 34-36 ms at these (12 slices: 29-32 ms, but a can's outline
moved: ReachCan's images by 0.38 grey levels on average). Along the scripted expert's
episodes the 16x16 images moved by under 0.1 grey levels on average and under 1% of
the values by more than 2 levels (`tests/unit/test_batch_render.py`). The fake
cameras' larger renders keep the defaults."""


def desk_bank(size: int = 256) -> tuple[np.ndarray, ...]:
    """The twin's desk patterns, grey RGB uint8 images (kinds x contrasts), fixed seeds."""
    bank = []
    for contrast in DESK_CONTRASTS:
        for index, kind in enumerate(DESK_KINDS):
            shape = pattern(kind, DESK_SCALES_M[kind], size, 0.5, seed=100 + index)
            grey = np.clip(DESK_MEAN * (1 + contrast * shape), 0.0, 1.0)
            bank.append((np.repeat(grey[:, :, None], 3, axis=2) * 255 + 0.5).astype(np.uint8))
    assert len(bank) == DESK_PATTERNS
    return tuple(bank)


def twin_dressing(randomization: DomainRandomization) -> SceneDressing | None:
    """What the batched twin's model needs: the arm's measured desk (its twin's
    ``camera.background_texture``), the desk bank when desks are textured, a shadow map
    when shadows are drawn; None: nothing."""
    bank = desk_bank() if randomization.desk_texture_p > 0 else ()
    drawn = randomization.shadow_p > 0 or randomization.centre.scene.shadows
    shadow_map = TWIN_SHADOW_MAP if drawn else 0
    measured = randomization.centre.camera.background_texture
    desk = load_desk_image(measured) if measured else None
    if not bank and not shadow_map and desk is None:
        return None
    return SceneDressing(desk=desk, desk_bank=bank, shadow_map=shadow_map)


class BatchRenderer(TwinVisuals):
    """Renders the wrist views of ``envs`` envs at once (see the module docstring)."""

    def __init__(self, model: mujoco.MjModel, envs: int, image_size: int, supersample: int):
        super().__init__(copy.deepcopy(model))
        for name, value in TWIN_TESSELLATION.items():  # before the context builds its shapes
            setattr(self.model.vis.quality, name, value)
        self.data = mujoco.MjData(self.model)
        self.envs, self.image_size = envs, image_size
        self.side = side = image_size * supersample
        self.columns = math.ceil(math.sqrt(envs))
        self.rows = math.ceil(envs / self.columns)
        width, height = self.columns * side, self.rows * side
        visual = self.model.vis.global_
        visual.offwidth, visual.offheight = (
            max(visual.offwidth, width),
            max(visual.offheight, height),
        )
        self.desks = desk_materials(self.model)
        self.shadow_light = self.model.light_castshadow.copy()
        self.gl = mujoco.GLContext(width, height)
        self.gl.make_current()
        self.context = mujoco.MjrContext(self.model, mujoco.mjtFontScale.mjFONTSCALE_150)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.context)
        self.scene = mujoco.MjvScene(self.model, maxgeom=1000)
        self.option, self.perturb = mujoco.MjvOption(), mujoco.MjvPerturb()
        self.view = mujoco.MjvCamera()
        self.view.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self.view.fixedcamid = self.camera
        self.pixels = np.empty((height, width, 3), dtype=np.uint8)
        self.full = mujoco.MjrRect(0, 0, width, height)
        self.viewports = [
            mujoco.MjrRect(
                (i % self.columns) * side, (self.rows - 1 - i // self.columns) * side, side, side
            )
            for i in range(envs)
        ]
        self.lens: dict[int, tuple] = {}  # env -> (k1, maps) of its episode's lens
        self.previous_qpos: np.ndarray | None = None
        self.rng = np.random.default_rng(0)

    def render(
        self, qpos, mocap_pos, twin: TwinBatch, noise: StepNoise, skip: np.ndarray | None = None
    ) -> np.ndarray:
        """Policy images of every env, uint8 (n, R, R, 3); envs flagged in ``skip`` are
        not drawn (their tile keeps its last image)."""
        self.gl.make_current()
        model, data = self.model, self.data
        floor_material = model.geom_matid[self.floor_geom]
        drawn = range(self.envs) if skip is None else np.nonzero(~np.asarray(skip))[0]
        for i in drawn:
            desk = twin.desk_pattern[i]
            model.geom_matid[self.floor_geom] = self.desks[desk] if desk >= 0 else floor_material
            self.apply_twin(twin, i, noise)
            if desk >= 0:  # the material tints the grey pattern with the drawn colour
                tint = np.clip(twin.background_rgb[i] / DESK_MEAN, 0.0, 1.0)
                model.mat_rgba[self.desks[desk], :3] = tint
                model.geom_rgba[self.floor_geom, :3] = 1.0
            model.light_castshadow[:] = self.shadow_light | bool(twin.shadows[i])
            data.qpos[:] = qpos[i]
            if mocap_pos is not None and model.nmocap:
                data.mocap_pos[:] = mocap_pos[i]
            mujoco.mj_kinematics(model, data)
            mujoco.mj_camlight(model, data)
            mujoco.mjv_updateScene(
                model,
                data,
                self.option,
                self.perturb,
                self.view,
                mujoco.mjtCatBit.mjCAT_ALL,
                self.scene,
            )
            mujoco.mjr_render(self.viewports[i], self.scene, self.context)
        model.geom_matid[self.floor_geom] = floor_material
        mujoco.mjr_readPixels(self.pixels, None, self.full, self.context)
        side, rows, columns = self.side, self.rows, self.columns
        tiles = np.flipud(self.pixels).reshape(rows, side, columns, side, 3)
        raw = tiles.transpose(0, 2, 1, 3, 4).reshape(rows * columns, side, side, 3)[: self.envs]
        raw = self._compress(raw, twin)
        linear = self._optics(raw, qpos, twin)
        return postprocess_batch(
            linear,
            self.image_size,
            twin.exposure_scale,
            twin.brightness,
            twin.contrast,
            twin.saturation,
            twin.hue,
            twin.gamma,
            twin.black_level,
            linear=True,
            gain=twin.exposure_jitter,
        )

    def _compress(self, raw: np.ndarray, twin: TwinBatch) -> np.ndarray:
        """JPEG for the envs whose episode drew it (most draw none: the call is free)."""
        compressed = np.nonzero(twin.jpeg_quality > 0)[0]
        if len(compressed) == 0:
            return raw
        raw = raw.copy()
        for i in compressed:
            raw[i] = jpeg_roundtrip(raw[i], int(twin.jpeg_quality[i]))
        return raw

    def _optics(self, raw: np.ndarray, qpos: np.ndarray, twin: TwinBatch) -> np.ndarray:
        """Linear float32 frames with the episode's motion blur, lens, vignetting, white
        balance and read noise (each skipped where no env drew it)."""
        linear = raw.astype(np.float32) * np.float32(1.0 / 255.0)
        joints = np.asarray(qpos)[:, :6]
        moved = np.zeros(self.envs)
        if self.previous_qpos is not None and self.previous_qpos.shape == joints.shape:
            moved = np.abs(joints - self.previous_qpos).max(axis=1)
        self.previous_qpos = joints.copy()
        supersample = self.side / self.image_size
        for i in np.nonzero(twin.blur_px * moved > 0)[0]:
            length = float(twin.blur_px[i] * moved[i] * supersample)
            if length >= 1.0:
                size = round(length) | 1
                linear[i] = cv2.blur(linear[i], (size, size))
        for i in np.nonzero(twin.distortion_k1)[0]:
            linear[i] = cv2.remap(
                linear[i], *self._lens(i, twin), cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
            )
        if np.any(twin.vignetting):
            falloff = 1.0 - vignetting_gain((self.side, self.side), 1.0)
            linear *= (
                1.0 - twin.vignetting[:, None, None, None] * falloff[None, :, :, None]
            ).astype(np.float32)
        if np.any(twin.white_balance != 1.0):
            linear *= twin.white_balance[:, None, None, :].astype(np.float32)
        if np.any(twin.sensor_noise):
            spread = twin.sensor_noise[:, None, None, None].astype(np.float32)
            linear += spread * self.rng.standard_normal(linear.shape, dtype=np.float32)
        return linear

    def _lens(self, i: int, twin: TwinBatch) -> tuple:
        """Env i's remap maps for its episode's k1 (computed once per episode)."""
        k1 = float(twin.distortion_k1[i])
        cached = self.lens.get(i)
        if cached is None or cached[0] != k1:
            fovy = float(self.model.cam_fovy[self.camera])
            # Barrel: sample a little beyond the frame's edge (replicated).
            maps = distortion_maps((self.side, self.side), fovy, k1, 0.0)
            self.lens[i] = cached = (k1, maps)
        return cached[1]

    def get_state(self) -> dict:
        """What the next render depends on beyond the env: the last joints (motion blur)
        and the noise stream."""
        previous = None if self.previous_qpos is None else self.previous_qpos.copy()
        return {"previous_qpos": previous, "rng": self.rng.bit_generator.state}

    def set_state(self, state: dict) -> None:
        previous = state["previous_qpos"]
        self.previous_qpos = None if previous is None else np.array(previous)
        self.rng.bit_generator.state = state["rng"]

    def close(self) -> None:
        """Free the GL context and its render context, with this renderer's context
        current: freed under another renderer's, the render context deletes that one's
        textures and buffers, and it draws black from then on."""
        if getattr(self, "gl", None) is not None:
            self.gl.make_current()
            self.context.free()
            self.gl.free()
            self.gl = None

    def __del__(self) -> None:
        # A renderer dropped without close() (``env = BatchedEnv(...)`` in a loop frees
        # the old env after the new one exists) would otherwise free its render context
        # under the newest renderer's GL context (mujoco.Renderer does the same).
        with contextlib.suppress(Exception):  # at interpreter exit EGL may be gone first
            self.close()
