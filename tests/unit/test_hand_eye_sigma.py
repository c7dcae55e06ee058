"""The hand-eye fit's stated sigmas mean what they say on the random arms' fits."""

import json
from pathlib import Path

import numpy as np

from realgap.diagnose.hand_eye_uncertainty import RESOLUTION_FLOOR_PX, combined

ERRORS = Path(__file__).parent.parent / "data" / "hand_eye_errors.json"
FIELDS = {
    "joints.zero_offset_deg": slice(0, 5),
    "camera.offset_m": slice(5, 8),
    "camera.rotation_deg": slice(8, 11),
    "camera.fov_deg_delta": slice(11, 12),
    "lens.k1": slice(12, 13),
}


def scaled_errors(fits: list[dict], floor_px=RESOLUTION_FLOOR_PX) -> np.ndarray:
    """|error| / stated sigma per fit and value, the sigma rebuilt from its stored parts
    with the resolution floor ``floor_px``."""
    parts = ("spread", "floor_per_px", "placement", "size")
    return np.array(
        [np.asarray(fit["error"]) / combined(*(fit[p] for p in parts), floor_px) for fit in fits]
    )


def coverage(z: np.ndarray) -> tuple[float, float]:
    return float(np.mean(z < 1)), float(np.mean(z < 2))


def test_the_stated_sigmas_cover_as_a_standard_deviation_should_on_a_real_cameras_images():
    # 30 random arms with webcams, the floors chosen on them: the truth within one stated
    # sigma about 68% of the time, within two at least 90%, for every field.
    sets = json.loads(ERRORS.read_text())["sets"]
    z = scaled_errors(sets["webcam 210-239 (chosen on)"])
    for field, values in FIELDS.items():
        within_one, within_two = coverage(z[:, values])
        assert 0.60 <= within_one <= 0.75 and within_two >= 0.90, (field, within_one, within_two)
    # The nine not used to choose them, on the fields with three values or more per arm
    # (27-45 values: one value moves a share by 2-4 points); never tight there (the
    # mount held 23 of 27 within one sigma: wide).
    held_out = scaled_errors(sets["webcam 200-208 (held out)"])
    for field in ("joints.zero_offset_deg", "camera.offset_m", "camera.rotation_deg"):
        within_one, within_two = coverage(held_out[:, FIELDS[field]])
        assert 0.60 <= within_one <= 0.90 and within_two >= 0.85, (field, within_one, within_two)


def test_on_the_twins_own_renders_the_webcam_floors_cover_as_well():
    # A fake arm without [sensor] is drawn by the twin's renderer. With poses drawn at
    # random its masks matched the twin's better than a webcam's, and a floor sized on
    # them covered webcams only 55% / 84%; with the poses chosen for what they tell the
    # two agree, and the webcam's floors cover the twin's renders as a standard
    # deviation should (30 arms: one value moves a three-value share by about a point).
    sets = json.loads(ERRORS.read_text())["sets"]
    twins = [fit for name, fits in sets.items() if name.startswith("twin") for fit in fits]
    z = scaled_errors(twins)
    for field, values in FIELDS.items():
        within_one, within_two = coverage(z[:, values])
        assert 0.60 <= within_one <= 0.85 and within_two >= 0.85, (field, within_one, within_two)
