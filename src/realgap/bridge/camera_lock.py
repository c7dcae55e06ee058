"""Camera lock and check: fixed exposure, gain and white balance, verified every session.

Auto-exposure is the camera brightening a dark scene: the reference's black
cloth turned brown on camera and the policy, trained on black, failed. A lock
is also known to be forgotten when the camera is unplugged. So:

- ``realgap camera lock`` applies fixed settings and stores them, with the mean
  brightness of a reference region seen from the start pose, in a JSON file per
  camera id (like LeRobot's calibration files per robot id);
- ``realgap camera check`` (and every deployment before its first episode)
  reads the settings back and re-measures the reference region, and refuses to
  run with a message that says what changed.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from realgap.bridge.interfaces import Camera, CameraSettings
from realgap.errors import ConfigError, RealgapStop

DEFAULT_SETTINGS = CameraSettings(auto_exposure=False, exposure=1.0, gain=1.0, white_balance=4600.0)
"""What ``lock`` applies unless told otherwise (fake cameras: the twin's exposure)."""

REFERENCE_REGION = (0.0, 0.0, 1.0, 0.45)
"""(left, top, right, bottom) as fractions of the frame: the top of the wrist view
at the start pose, which sees only the cloth beyond the jaws."""


class CameraCheckFailed(RealgapStop):
    """The camera's settings or brightness differ from its lock."""


def lock_dir() -> Path:
    """Where lock files live: ``$REALGAP_HOME/cameras`` (default ``~/.cache/realgap``)."""
    home = Path(os.environ.get("REALGAP_HOME", Path.home() / ".cache" / "realgap"))
    return home / "cameras"


@dataclass
class CameraLock:
    camera_id: str
    settings: CameraSettings
    reference_mean: float
    """Mean pixel value (0..1) of the reference region when locked."""
    region: tuple[float, float, float, float] = REFERENCE_REGION
    joint_offsets_deg: tuple[float, ...] = (0.0,) * 6
    """The calibration the arm had when the lock was taken (its joint zero offsets): a
    calibration moves the start pose, so the reference region sees another patch of
    desk under another one."""

    def to_dict(self) -> dict:
        return {**asdict(self), "settings": asdict(self.settings)}

    @classmethod
    def from_dict(cls, data: dict) -> CameraLock:
        return cls(
            camera_id=data["camera_id"],
            settings=CameraSettings(**data["settings"]),
            reference_mean=float(data["reference_mean"]),
            region=tuple(data["region"]),
            joint_offsets_deg=tuple(data.get("joint_offsets_deg", (0.0,) * 6)),
        )


def region_mean(image: np.ndarray, region=REFERENCE_REGION) -> float:
    """Brightness (0..1) of a fractional region of a uint8 frame: the median pixel
    value, so that a cube or the jaws entering the region do not move it."""
    height, width = image.shape[:2]
    left, top, right, bottom = region
    patch = image[
        int(top * height) : max(int(bottom * height), 1), int(left * width) : int(right * width)
    ]
    return float(np.median(patch) / 255.0)


def lock_path(camera_id: str, folder: Path | None = None) -> Path:
    return Path(folder or lock_dir()) / f"{camera_id}.json"


def lock_camera(
    camera: Camera,
    settings: CameraSettings = DEFAULT_SETTINGS,
    folder: Path | None = None,
    region=REFERENCE_REGION,
    joint_offsets_rad=None,
) -> CameraLock:
    """Apply fixed settings, measure the reference region, store the lock; returns it.
    The arm should be at the start pose (the region must see the cloth);
    ``joint_offsets_rad`` is the calibration the arm runs with (None: none)."""
    if settings.auto_exposure or settings.white_balance is None:
        raise ConfigError("a lock needs auto_exposure=False and a fixed white_balance")
    camera.apply_settings(settings.check())
    frame = camera.read_fresh(not_before=-np.inf)
    pixels = frame.image.astype(np.float32) / 255.0
    if pixels.std() < 0.01 or not 0.005 < pixels.mean() < 0.995:
        # All black or all white: a check against this lock would pass a blind policy.
        raise ConfigError(
            f"camera {camera.camera_id!r} sees nothing with {settings} (mean "
            f"{pixels.mean():.3f}, spread {pixels.std():.3f}): choose another exposure or gain"
        )
    offsets = _degrees(joint_offsets_rad)
    lock = CameraLock(camera.camera_id, settings, region_mean(frame.image, region), region, offsets)
    _save(lock, folder)
    return lock


def _save(lock: CameraLock, folder: Path | None) -> None:
    path = lock_path(lock.camera_id, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(lock.to_dict(), indent=2))


def _degrees(offsets_rad) -> tuple[float, ...]:
    if offsets_rad is None:
        return (0.0,) * 6
    return tuple(round(float(v), 3) for v in np.rad2deg(np.asarray(offsets_rad, dtype=float)))


def load_lock(camera_id: str, folder: Path | None = None) -> CameraLock:
    path = lock_path(camera_id, folder)
    if not path.exists():
        raise CameraCheckFailed(
            f"camera {camera_id!r} has no lock ({path}); run `realgap camera lock` first"
        )
    return CameraLock.from_dict(json.loads(path.read_text()))


def load_lock_if_any(camera_id: str, folder: Path | None = None) -> CameraLock | None:
    """The camera's stored lock, or None when it has none."""
    path = lock_path(camera_id, folder)
    return CameraLock.from_dict(json.loads(path.read_text())) if path.exists() else None


def check_camera(
    camera: Camera,
    folder: Path | None = None,
    tolerance: float = 0.25,
    floor: float = 0.02,
    joint_offsets_rad=None,
) -> dict:
    """Verify the camera still has its locked settings and brightness.

    Brightness may differ from the lock by ``tolerance`` (relative) or ``floor``
    (absolute, 0..1), whichever is larger. ``joint_offsets_rad`` is the calibration the
    arm runs with now: under another one than the lock's, the start pose looks at
    another patch of desk, so with the settings unchanged the reference region is
    re-measured there (and the lock updated) instead of blaming the exposure. Returns a
    report dict; raises :class:`CameraCheckFailed` naming every problem.
    """
    lock = load_lock(camera.camera_id, folder)
    now = _degrees(joint_offsets_rad)
    pose_moved = not np.allclose(now, lock.joint_offsets_deg, atol=0.05)
    settings = camera.get_settings()
    problems = []
    if settings.auto_exposure:
        problems.append(
            "auto-exposure is ON (a lock is lost when the camera is unplugged): "
            "run `realgap camera lock` again"
        )
    for name in ("exposure", "gain", "white_balance"):
        if getattr(settings, name) != getattr(lock.settings, name):
            problems.append(
                f"{name} is {getattr(settings, name)}, locked at {getattr(lock.settings, name)}"
            )
    frame = camera.read_fresh(not_before=-np.inf)
    mean = region_mean(frame.image, lock.region)
    allowed = max(tolerance * lock.reference_mean, floor)
    relocked = None
    if pose_moved and not problems:
        # The settings are the lock's: what changed is where the start pose looks.
        relocked = (
            f"the lock was taken with joint offsets {list(lock.joint_offsets_deg)} degrees, "
            f"this session's calibration has {list(now)}: the start pose looks at another "
            f"patch of desk, so its reference brightness was re-measured ({mean:.3f}, was "
            f"{lock.reference_mean:.3f})"
        )
        lock = replace(lock, reference_mean=mean, joint_offsets_deg=now)
        _save(lock, folder)
    elif pose_moved and abs(mean - lock.reference_mean) > allowed:
        problems.append(
            f"reference region brightness {mean:.3f}, locked at {lock.reference_mean:.3f} "
            f"under another calibration (joint offsets {list(lock.joint_offsets_deg)} "
            f"degrees, now {list(now)}): relock with `realgap camera lock --calibration "
            "FILE` (the calibration this session uses)"
        )
    elif abs(mean - lock.reference_mean) > allowed:
        problems.append(
            f"reference region brightness {mean:.3f}, locked at {lock.reference_mean:.3f} "
            f"(allowed +-{allowed:.3f}): a dark cloth that reads bright is the auto-exposure "
            "failure; check the lighting and the camera settings"
        )
    report = {
        "camera_id": camera.camera_id,
        "settings": asdict(settings),
        "reference_mean": mean,
        "locked_mean": lock.reference_mean,
        "ok": not problems,
        "problems": problems,
        "relocked": relocked,
    }
    if problems:
        raise CameraCheckFailed(f"camera {camera.camera_id!r} check failed: " + "; ".join(problems))
    return report
