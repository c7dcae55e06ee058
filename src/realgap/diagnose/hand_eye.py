"""Joint zero offsets and the wrist camera's mount, fitted together (hand-eye).

The camera rides on the gripper, so two things in every frame pin it down:

- **the jaws** sit still in the camera's view whatever the joints do: where they
  appear fixes the mount (offset, rotation, field of view) relative to the gripper,
  and no joint offset can move them;
- **the cube** on its mark moves through the view as the arm moves: given the
  mount, where it appears fixes the joint zero offsets.

A wrist-roll offset and a camera rolled on its mount move the cube alike; only the
second moves the jaws, which is why the two must be fitted together rather than one
assumed and the other blamed (the failure this replaces: a moved camera read as
"implausible" 24-degree joint offsets). The pose sweep varies the gripper opening
too, so the moving jaw separates the field of view from the mount's depth.

Stages: (1) the mount from the jaw silhouettes alone; (2) the joint offsets from the
cube's centroids with that mount (finds the basin); (3) all thirteen values, the lens's
k1 among them (:mod:`realgap.diagnose.lens`), by Levenberg-Marquardt on the jaw and cube
silhouettes together (rendered ``supersample`` times finer and averaged down, so
coverage varies smoothly; the camera's side is measured alike, its masks taken on the
full frame and averaged down, :func:`realgap.diagnose.joints.analysis_coverage`). Stages
1-3's coarse rounds run twice, with the lens fitted from the start and held at a
pinhole's until the last round (side by side where a second core allows); the better fit
goes on to the fine round. Every round takes central differences: the jaws' mismatch
rises steeply as the mount moves toward them and gently the other way, and one-sided
differences at that kink pointed uphill, so a third of random arms' fits stopped short
of their minimum (random arm 44: the wrist roll 2.2 degrees off, the mismatch 0.050
where the truth's is 0.035); (4) uncertainties
(:mod:`realgap.diagnose.hand_eye_uncertainty`): a bootstrap over poses on the final
linearization (resample the poses, take one Gauss-Newton step, repeat; poses, not
pixels, are the independent draws) combined with a resolution floor, because the
bootstrap alone cannot see that the camera's masks and the twin's differ systematically
at their edges, and with the spread a hand-placed cube (half a millimetre off its mark)
and the cube's size (measured or not) put on the fit: the lift and elbow offsets trade
against the cube's distance.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import cv2
import numpy as np
from scipy.ndimage import gaussian_filter

from realgap.diagnose.hand_eye_uncertainty import uncertainty
from realgap.diagnose.joints import (
    PLAUSIBLE_OFFSET_DEG,
    analysis_coverage,
    analysis_frames,
    fit_centroids,
    levenberg_marquardt,
)
from realgap.diagnose.lens import K1_LIMIT, K1_UNITS, Lens
from realgap.diagnose.recording import CalibrationRecording
from realgap.errors import ConfigError
from realgap.runtime import concurrent_rendering
from realgap.sim.render import centroid, cube_mask, jaw_mask
from realgap.sim.twin import TwinParams, check_value
from realgap.sim.twin_camera import TwinCamera

ARM_JOINTS = 5
PARAMETERS = (
    *(f"{name}_offset_deg" for name in ("pan", "lift", "elbow", "wrist_flex", "wrist_roll")),
    "mount_x_mm",
    "mount_y_mm",
    "mount_z_mm",
    "mount_rx_deg",
    "mount_ry_deg",
    "mount_rz_deg",
    "fov_delta_deg",
    "lens_k1_x100",
)
"""The fitted values, in units of similar size (degrees and millimetres) so one
finite-difference step of ``STEP`` moves every silhouette by a fraction of a pixel."""
LENS = PARAMETERS.index("lens_k1_x100")
STEP = 0.25
MIN_JAW_PIXELS = 30
MEASURED_CUBE_SIGMA_M = 0.0005
"""A cube's edge measured with a ruler or calipers (also ``rig.toml``'s default)."""
UNMEASURED_CUBE_SIGMA_M = 0.0025
"""A cube nobody measured, drawn at the twin's nominal 2.5 cm: cubes printed as "2.5
cm" come out a millimetre or two off (a different model, the slicer's first-layer
squash, shrinkage), and the random arms' 2.2-3.0 cm lie 2.5 mm from it on average
(root mean square)."""
MAX_SILHOUETTE_RMS = 0.1
"""Silhouette mismatch (coverage, 0..1 per analysis pixel) above which the fit is not
trusted: fits that found the arm sat at 0.03-0.05 on random arms; those at 0.16-0.47
had read a yellow-orange desk as jaws and were degrees off with small stated errors."""
MAX_CUBE_SHIFT_PX = 1.5
"""A cube that moved more than this during the sweep invalidates the fit: 3-4 mm
on the desk at the start pose's view (0.4-0.5 px per mm). What a still cube reads here
is the encoders' noise (see :data:`realgap.diagnose.recording.CHECK_READS`)."""
BLUR_SCHEDULE_PX = (3.0, 1.0)
"""Blur (analysis pixels) of the silhouette differences in the joint fit's two coarse
rounds (the lens is fitted in the second)."""
FINE_BLUR_PX = 0.5
TOLERANCE = 0.005
"""A fit round stops once no value moves more than this in a step (degrees, millimetres,
hundredths of k1): under a thirtieth of any stated sigma. Rounds that had converged
went on for up to eight more steps of a few thousandths each, a quarter of the fit."""


@dataclass
class HandEyeFit:
    """Joint zero offsets and the camera mount, each with one standard deviation."""

    offsets_deg: list[float]  # 6, gripper 0 (not measured)
    offsets_sigma_deg: list[float]
    mount_offset_m: list[float]
    mount_offset_sigma_m: list[float]
    mount_rotation_deg: list[float]
    mount_rotation_sigma_deg: list[float]
    fov_delta_deg: float
    fov_delta_sigma_deg: float
    frames_used: int
    silhouette_rms_before: float
    silhouette_rms_after: float
    warnings: list[str] = field(default_factory=list)
    cube_size_sigma_m: float = 0.0
    """The cube edge's uncertainty the stated sigmas carry (see :func:`fit_hand_eye`)."""
    lens_k1: float = 0.0
    """The lens's radial distortion (OpenCV's k1; barrel below 0), fitted with the mount
    (:mod:`realgap.diagnose.lens`)."""
    lens_k1_sigma: float = 0.0
    cube_shift_px: float | None = None
    """How far the cube moved in the image during the sweep, beyond what the arm's own
    movement between the two start-pose views explains (None: not recorded)."""

    @classmethod
    def from_twin(cls, twin: TwinParams) -> HandEyeFit:
        """The geometry a twin (say, a calibration's) already states, unfitted."""
        return cls(
            offsets_deg=list(twin.joints.zero_offset_deg),
            offsets_sigma_deg=[0.0] * 6,
            mount_offset_m=list(twin.camera.offset_m),
            mount_offset_sigma_m=[0.0] * 3,
            mount_rotation_deg=list(twin.camera.rotation_deg),
            mount_rotation_sigma_deg=[0.0] * 3,
            fov_delta_deg=twin.camera.fov_deg_delta,
            fov_delta_sigma_deg=0.0,
            frames_used=0,
            lens_k1=twin.camera.lens_k1,
            silhouette_rms_before=float("nan"),
            silhouette_rms_after=float("nan"),
        )

    @property
    def offsets_rad(self) -> np.ndarray:
        return np.deg2rad(np.asarray(self.offsets_deg))

    def to_dict(self) -> dict:
        return asdict(self)


class _SilhouetteModel:
    """Residuals (twin coverage - camera mask) of jaws and cube over the usable poses."""

    def __init__(
        self,
        recording: CalibrationRecording,
        supersample: int,
        cube_size_m: float | None,
        cube_size_sigma_m: float = 0.0,
    ):
        frames = analysis_frames(recording.pose_frames)
        jaws = np.array([jaw_mask(f) for f in frames])
        cubes = np.array([cube_mask(f) for f in frames])
        keep = [
            i
            for i in range(len(frames))
            if jaws[i].sum() >= MIN_JAW_PIXELS and centroid(cubes[i]) is not None
        ]
        self.keep = keep
        self.readings = recording.pose_readings[keep]
        # Which poses are usable is judged on the analysis frames; the targets are the
        # full frames' masks as coverage, measured as the twin's side is.
        full = recording.pose_frames[keep]
        self.jaw_targets = analysis_coverage(full, jaw_mask)
        self.cube_targets = analysis_coverage(full, cube_mask)
        self.cube_centroids = np.array([centroid(cubes[i]) for i in keep]) if keep else None
        self.cube_positions = recording.cube_positions[keep]  # the mark each pose saw
        self.shape = frames.shape[1:3]
        self.supersample = supersample
        self.blur_px = 0.0
        height, width = self.shape
        self.camera = TwinCamera(recording.task, (height * supersample, width * supersample))
        self.lens = Lens(self.camera.shape, self.camera.nominal["cam_fovy"])
        self.cube_size_m = TwinParams().cube.size_m if cube_size_m is None else cube_size_m
        self.cube_size_sigma_m = cube_size_sigma_m
        self.camera.set_cube_size(self.cube_size_m)
        self.helper: _PoseHelper | None = None

    def set_mount(self, x: np.ndarray) -> None:
        # The render is wider than the frame by the lens's margin; the lens maps it back.
        self.frame_fovy = self.camera.nominal["cam_fovy"] + x[11]
        self.k1 = x[LENS] / K1_UNITS
        wider = self.lens.render_fovy(self.frame_fovy) - self.camera.nominal["cam_fovy"]
        self.camera.set_camera(x[5:8] / 1000, x[8:11], wider)

    def _coverage(self, mask: np.ndarray) -> np.ndarray:
        height, width = self.shape
        seen = self.lens.apply(mask.astype(np.float32), self.frame_fovy, self.k1)
        # Each frame pixel's share of its supersampled render pixels: OpenCV's area
        # resize is that mean, ten times faster than numpy's over two strided axes.
        return cv2.resize(seen, (width, height), interpolation=cv2.INTER_AREA)

    def _blurred(self, image: np.ndarray) -> np.ndarray:
        return gaussian_filter(image, self.blur_px) if self.blur_px else image

    def per_pose(
        self, x: np.ndarray, jaws_only: bool = False, poses: slice | None = None
    ) -> list[np.ndarray]:
        """One residual vector per pose (jaws, then cube unless ``jaws_only``), both
        images blurred by ``blur_px``: wider basins, smoother finite differences. With a
        ``helper``, it renders the second half of the poses meanwhile; ``poses``: only
        those."""
        if poses is None and self.helper is not None:
            half = len(self.readings) // 2
            far = self.helper.per_pose(self, x, jaws_only, slice(half, None))
            return self.per_pose(x, jaws_only, slice(0, half)) + far.result()
        self.set_mount(x)
        offsets = np.append(np.deg2rad(x[:ARM_JOINTS]), 0.0)
        out = []
        for index in range(len(self.readings))[poses or slice(None)]:
            joints = self.readings[index]
            image = self.camera.render(joints - offsets, self.cube_positions[index])
            pairs = [(jaw_mask(image), self.jaw_targets[index])]
            if not jaws_only:
                pairs.append((cube_mask(image), self.cube_targets[index]))
            out.append(
                np.concatenate([(self._blurred(self._coverage(m) - t)).ravel() for m, t in pairs])
            )
        return out

    def residuals(self, x: np.ndarray, jaws_only: bool = False) -> np.ndarray:
        return np.concatenate(self.per_pose(x, jaws_only))

    def edge_pixels(self) -> tuple[float, float]:
        """Edge length (pixels, all poses) of the camera's jaw and cube masks."""

        def edges(masks: np.ndarray) -> float:
            inside = masks > 0.5
            shifted = np.zeros_like(inside)
            shifted[:, 1:, :] |= inside[:, 1:, :] != inside[:, :-1, :]
            shifted[:, :, 1:] |= inside[:, :, 1:] != inside[:, :, :-1]
            return max(float(shifted.sum()), 1.0)

        return edges(self.jaw_targets), edges(self.cube_targets)

    def close(self) -> None:
        if self.helper is not None:
            self.helper.close()
        self.camera.close()


class _PoseHelper:
    """A second copy of a silhouette model in a thread of its own (rendering through its
    own OpenGL context), which renders part of the poses while the caller renders the
    rest, so the final fine fit and its uncertainties render on two cores, with the same
    residuals (calibrate as a whole: 154 s -> 100 s with the servo fit's threads)."""

    def __init__(self, build: Callable[[], _SilhouetteModel]):
        self._pool = ThreadPoolExecutor(1)
        self._model = self._pool.submit(build).result()

    def per_pose(self, caller: _SilhouetteModel, x: np.ndarray, jaws_only: bool, poses: slice):
        """The caller's residuals of ``poses`` (its blur and cube marks), as a future."""
        blur_px, cube_positions = caller.blur_px, caller.cube_positions.copy()

        def render() -> list[np.ndarray]:
            self._model.blur_px, self._model.cube_positions = blur_px, cube_positions
            return self._model.per_pose(x, jaws_only, poses)

        return self._pool.submit(render)

    def close(self) -> None:
        self._pool.submit(self._model.close).result()
        self._pool.shutdown()


def fit_hand_eye(
    recording: CalibrationRecording,
    supersample: tuple[int, int] = (2, 4),
    bootstrap: int = 300,
    min_frames: int = 8,
    seed: int = 0,
    cube_size_m: float | None = None,
    cube_size_sigma_m: float | None = None,
) -> HandEyeFit:
    """Fit joint zero offsets and the camera mount together; see the module docstring.
    ``supersample``: the twin's render scale in the coarse rounds and the final one.
    ``cube_size_m``: the cube's measured edge (None: the twin's nominal cube), known to
    ``cube_size_sigma_m`` (default :data:`MEASURED_CUBE_SIGMA_M`, or
    :data:`UNMEASURED_CUBE_SIGMA_M` for the nominal cube); the stated uncertainties
    carry it."""
    if cube_size_m is not None:  # the twin's range check, which names unit slips
        cube_size_m = check_value(
            "--cube-size: cube.size_m", TwinParams().cube.size_m, cube_size_m, ConfigError
        )
    if cube_size_sigma_m is None:
        cube_size_sigma_m = (
            UNMEASURED_CUBE_SIGMA_M if cube_size_m is None else MEASURED_CUBE_SIGMA_M
        )
    if not 0 <= cube_size_sigma_m <= 0.01:
        raise ConfigError(
            f"the cube size's uncertainty {cube_size_sigma_m} m is outside 0-0.01 m "
            "(give metres: half a millimetre is 0.0005)"
        )
    coarse, fine = (
        _SilhouetteModel(recording, scale, cube_size_m, cube_size_sigma_m) for scale in supersample
    )
    try:
        if len(coarse.keep) < min_frames:
            raise ConfigError(
                f"the jaws and the cube are both visible in only {len(coarse.keep)} of "
                f"{len(recording.pose_frames)} pose-sweep frames (need {min_frames}); place the "
                "cube nearer the start pose's view, open the gripper, and record again"
            )
        if concurrent_rendering():
            fine.helper = _PoseHelper(
                lambda: _SilhouetteModel(recording, supersample[1], cube_size_m, cube_size_sigma_m)
            )
        coarse_fits = _both_coarse_fits(coarse, recording, cube_size_m, cube_size_sigma_m)
        fit = _fit(coarse, fine, coarse_fits, bootstrap, seed)
        fit.cube_size_sigma_m = cube_size_sigma_m
        fit.cube_shift_px = cube_shift_px(recording, fit)
        if fit.cube_shift_px is not None and fit.cube_shift_px > MAX_CUBE_SHIFT_PX:
            fit.warnings.append(
                f"the cube moved {fit.cube_shift_px:.1f} px between the sweep's first and last "
                "view at the start pose: the arm touched it, so the fit used a wrong cube "
                "position; fix the cube to its mark and record again"
            )
        return fit
    finally:
        coarse.close()
        fine.close()


def _round(residuals, values: np.ndarray, iterations: int) -> np.ndarray:
    """One fit round: every round, coarse and fine, takes central differences of
    ``STEP`` (see the module docstring) and stops at ``TOLERANCE``."""
    return levenberg_marquardt(residuals, values, STEP, iterations, TOLERANCE, central=True)


def _coarse_fit(model: _SilhouetteModel, lens: bool) -> tuple[float, np.ndarray]:
    """Stages 1-3 at the coarse scale, the lens's k1 fitted from the start or held at a
    pinhole's until the last round; the residual cost at the end and the values."""
    x = np.zeros(len(PARAMETERS))
    free = slice(0, len(PARAMETERS) if lens else LENS)
    model.blur_px = 0.0

    # 1. The mount from the jaws: no joint offset moves them.
    def jaws(mount: np.ndarray) -> np.ndarray:
        values = x.copy()
        values[ARM_JOINTS : free.stop] = mount
        return model.residuals(values, jaws_only=True)

    x[ARM_JOINTS : free.stop] = _round(jaws, x[ARM_JOINTS : free.stop], 10)

    # 2. The joint offsets' basin from the cube's centroids, seen through that mount.
    height, width = model.shape
    coarse = TwinCamera(model.camera.task_name, (height, width))
    coarse.set_camera(x[5:8] / 1000, x[8:11], x[11])
    offsets_rad, _, _ = fit_centroids(
        coarse, model.readings, model.cube_centroids, model.cube_positions
    )
    coarse.close()
    x[:ARM_JOINTS] = np.rad2deg(offsets_rad)

    # 3. Everything together on both silhouettes, coarse to fine (the lens in the last
    # round either way).
    model.blur_px = BLUR_SCHEDULE_PX[0]

    def free_values(values: np.ndarray) -> np.ndarray:
        return model.residuals(np.concatenate([values, x[free.stop :]]))

    x[free] = _round(free_values, x[free], 15)
    model.blur_px = BLUR_SCHEDULE_PX[1]
    x = _lens_within_limit(_round(model.residuals, x, 15))
    residual = model.residuals(x)
    return float(residual @ residual), x


def _both_coarse_fits(
    model: _SilhouetteModel, recording, cube_size_m, cube_size_sigma_m
) -> list[tuple[float, np.ndarray]]:
    """The coarse stages twice: with the lens held at a pinhole's until the last round,
    and fitted from the start. They are independent and each is about a quarter of
    calibrate's time, so with a second core the second runs in a thread of its own."""
    if not concurrent_rendering():
        return [_coarse_fit(model, lens) for lens in (False, True)]
    # A thread, not a process: a spawned process re-imports the caller's main module
    # (an unguarded script would start over), a forked one would share this process's
    # OpenGL context. MuJoCo and OpenCV release the GIL; the thread renders through a
    # context of its own (109 s against 132 s for a 32-pose fit on 2 cores).
    with ThreadPoolExecutor(1) as pool:
        apart = pool.submit(
            _coarse_fit_apart, recording, model.supersample, cube_size_m, cube_size_sigma_m
        )
        here = _coarse_fit(model, lens=False)
        return [here, apart.result()]


def _coarse_fit_apart(recording, supersample: int, cube_size_m, cube_size_sigma_m):
    """:func:`_coarse_fit` with the lens from the start, on a model of its own."""
    model = _SilhouetteModel(recording, supersample, cube_size_m, cube_size_sigma_m)
    try:
        return _coarse_fit(model, lens=True)
    finally:
        model.close()


def _fit(
    model: _SilhouetteModel,
    fine: _SilhouetteModel,
    coarse_fits: list[tuple[float, np.ndarray]],
    bootstrap: int,
    seed: int,
) -> HandEyeFit:
    before = _rms(model.residuals(np.zeros(len(PARAMETERS))))
    # The coarse stages twice, the better kept: with the lens fitted from the start,
    # k1 found webcams' -0.04 to -0.07 (held at a pinhole's until the joints were near,
    # it stayed in a local minimum near 0) but wandered to +0.07-0.13 on two plain arms
    # of eight (silhouette RMS 0.07 against 0.035), taking the joints 1-3 degrees off.
    _, x = min(coarse_fits, key=lambda pair: pair[0])
    # ... and a last round on finer renders: edges to a quarter pixel.
    fine.blur_px = FINE_BLUR_PX
    x = _lens_within_limit(_round(fine.residuals, x, 12))
    fine.blur_px = 0.0
    after = _rms(fine.residuals(x))

    # 4. Uncertainties on the final linearization.
    sigma = uncertainty(fine, x, STEP, bootstrap, seed)
    offsets = [*map(float, x[:ARM_JOINTS]), 0.0]
    warnings = []
    if after > MAX_SILHOUETTE_RMS:
        warnings.append(
            f"the twin's jaws and cube do not fit the camera's ({after:.2f} mismatch after the "
            f"fit; a good fit is under {MAX_SILHOUETTE_RMS}): the masks may take the desk "
            "for the jaws or the cube (a yellow, orange or red desk?); lay a grey or dark "
            "cloth under the work area and record again"
        )
    if np.abs(offsets).max() > PLAUSIBLE_OFFSET_DEG:
        warnings.append(
            f"offsets up to {np.abs(offsets).max():.0f} degrees are implausible for a "
            "calibrated arm even with the camera mount fitted: was the cube's mark where the "
            "recording says, measured from the rotation axis (`realgap diagnose frame`)?"
        )
    return HandEyeFit(
        offsets_deg=offsets,
        offsets_sigma_deg=[*map(float, sigma[:ARM_JOINTS]), 0.0],
        mount_offset_m=[float(v) / 1000 for v in x[5:8]],
        mount_offset_sigma_m=[float(v) / 1000 for v in sigma[5:8]],
        mount_rotation_deg=[float(v) for v in x[8:11]],
        mount_rotation_sigma_deg=[float(v) for v in sigma[8:11]],
        fov_delta_deg=float(x[11]),
        fov_delta_sigma_deg=float(sigma[11]),
        lens_k1=float(x[12] / K1_UNITS),
        lens_k1_sigma=float(sigma[12] / K1_UNITS),
        frames_used=len(model.keep),
        silhouette_rms_before=before,
        silhouette_rms_after=after,
        warnings=warnings,
    )


def _lens_within_limit(x: np.ndarray) -> np.ndarray:
    """``x`` with k1 held inside the lens model's range (beyond it the silhouettes stop
    moving and its sigma is meaningless)."""
    x = x.copy()
    x[LENS] = np.clip(x[LENS], -K1_LIMIT * K1_UNITS, K1_LIMIT * K1_UNITS)
    return x


def cube_shift_px(recording: CalibrationRecording, fit: HandEyeFit) -> float | None:
    """The cube's image shift between the start-pose views before and after the sweep,
    minus the shift the twin predicts from the two readings (soft servos with friction
    come back a little elsewhere): what is left is the cube itself moving."""
    if recording.check_frames is None:
        return None
    frames = analysis_frames(recording.check_frames)
    seen = [centroid(cube_mask(frame)) for frame in frames]
    if any(point is None for point in seen):
        return None
    camera = TwinCamera(recording.task, frames.shape[1:3])
    camera.set_camera(fit.mount_offset_m, fit.mount_rotation_deg, fit.fov_delta_deg)
    angles = recording.check_readings - fit.offsets_rad
    predicted = [camera.project_cube(a, recording.cube_xy) for a in angles]
    camera.close()
    return float(np.linalg.norm((seen[1] - seen[0]) - (predicted[1] - predicted[0])))


def _rms(residuals: np.ndarray) -> float:
    return float(np.sqrt(np.mean(residuals**2)))
