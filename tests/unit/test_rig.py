"""rig.toml: what the camera cannot measure, with defaults for its uncertainty."""

import pytest

from realgap.adapt.rig import DEFAULT_SIGMA, load_rig
from realgap.adapt.section import calibration_lines
from realgap.sim.calibration import Calibration
from realgap.sim.twin import TwinParamsError


def test_rig_values_and_uncertainties(tmp_path):
    rig = tmp_path / "rig.toml"
    rig.write_text(
        '[cube]\nmass_kg = 0.011\nfriction = 0.6\n[uncertainty]\n"cube.friction" = 0.2\n'
    )
    values = load_rig(rig)
    assert values["cube.mass_kg"] == (0.011, DEFAULT_SIGMA["cube.mass_kg"])
    assert values["cube.friction"] == (0.6, 0.2)
    calibration = Calibration()
    for key, (value, sigma) in values.items():
        calibration.measure(key, value, sigma)
    assert calibration.twin().cube.mass_kg == 0.011


def test_a_room_that_casts_shadows_is_the_users_to_say(tmp_path):
    rig = tmp_path / "rig.toml"
    rig.write_text("[scene]\nshadows = true\n")
    values = load_rig(rig)
    assert values == {"scene.shadows": (True, None)}
    calibration = Calibration()
    calibration.measure("scene.shadows", *values["scene.shadows"])
    assert calibration.through_bridge().twin().scene.shadows is True
    assert "scene.shadows" not in calibration.uncertainty
    assert "scene.shadows = true" in calibration_lines(calibration)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[scene]\nlight_scale = 2.0\n", "scene.light_scale"),
        ("[scene]\nshadows = 1\n", "shadows"),
        ('[scene]\nshadows = true\n[uncertainty]\n"scene.shadows" = 0.1\n', "no uncertainty"),
        ("[servo]\nkp_scale = 0.5\n", "come from the calibration recording"),
        ("[cube]\nmass_kg = -1\n", "mass_kg"),
        ("[cube]\nweight = 1\n", "weight"),
        ('[cube]\nmass_kg = 0.01\n[uncertainty]\n"cube.size_m" = 0.1\n', "keys not given"),
    ],
)
def test_bad_rig_files_are_refused_with_the_key_named(tmp_path, text, message):
    rig = tmp_path / "rig.toml"
    rig.write_text(text)
    with pytest.raises(TwinParamsError, match=message):
        load_rig(rig)


def test_a_cube_friction_the_twins_desk_cannot_draw_is_said(tmp_path, caplog):
    # The desk's 0.8 is a floor (tests/unit/test_cube_friction.py): 0.6 is drawn as 0.8.
    rig = tmp_path / "rig.toml"
    rig.write_text("[cube]\nfriction = 0.6\n")
    with caplog.at_level("WARNING", logger="realgap.adapt.rig"):
        assert load_rig(rig)["cube.friction"][0] == 0.6  # kept as measured
    assert "slides on it as 0.8" in caplog.text
    caplog.clear()
    rig.write_text("[cube]\nfriction = 0.9\n")
    with caplog.at_level("WARNING", logger="realgap.adapt.rig"):
        load_rig(rig)
    assert caplog.text == ""
