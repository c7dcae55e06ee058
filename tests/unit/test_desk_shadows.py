"""A desk learned in a room that casts shadows is learned under the shadowed twin's light.

MuJoCo clips a textured floor's light at 1 in one pass but draws a shadow-casting light
in a pass of its own, so the same texture renders brighter once the twin casts shadows.
A calibration that measured the desk's lighting without them painted a shadowed room's
desk lit twice over (tests/e2e/test_desk.py measures it end to end)."""

import numpy as np

from realgap.cli import build_parser
from realgap.diagnose.run import calibration_from
from realgap.sim.twin_camera import TwinCamera


def desk_brightness(shadows: bool, texture: bool) -> float:
    grey = np.full((8, 8, 3), 153, dtype=np.uint8)
    camera = TwinCamera("Reach", (48, 64), floor_texture=grey if texture else None, shadows=shadows)
    if not texture:
        camera.set_background((0.6, 0.6, 0.6))
    start = np.array([0.0, -0.6, 0.6, 1.2, 0.0, 0.6])
    angles, cube = start, np.array([0.2, 0.0])
    image = camera.render(angles, cube).astype(float)
    desk = camera.labels(angles, cube) == 0
    camera.close()
    return float(np.median(image[desk]))  # the arm's own shadow covers a minority


def test_a_textured_desk_renders_brighter_with_a_shadow_casting_light():
    # Why the lighting probe must cast the twin's shadows: with a plain colour the two
    # passes read the same outside the arm's own shadow, with a texture they do not.
    plain = desk_brightness(False, False), desk_brightness(True, False)
    textured = desk_brightness(False, True), desk_brightness(True, True)
    assert textured[1] > 1.15 * textured[0], textured  # 185 against 153
    assert abs(plain[1] - plain[0]) < 0.1 * plain[0], plain  # 187 against 197


def test_a_desk_learned_with_shadows_gives_the_twin_its_shadows(diagnosis):
    shadowed = diagnosis()
    shadowed["camera"]["shadows"] = True
    assert calibration_from(shadowed, "recording.npz").twin().scene.shadows
    assert not calibration_from(diagnosis(), "recording.npz").twin().scene.shadows


def test_diagnose_takes_the_users_word_on_shadows():
    parser = build_parser()
    assert parser.parse_args(["diagnose", "all", "r.npz", "--out", "o", "--shadows"]).shadows
    assert not parser.parse_args(["diagnose", "all", "r.npz", "--out", "o"]).shadows
    assert parser.parse_args(["diagnose", "camera", "r.npz", "--shadows"]).shadows
