"""Gap attribution: each measured difference, alone and removed, with intervals."""

import json

from realgap.diagnose.attribute import attribute_with, differences
from realgap.eval.stats import rate
from realgap.sim.calibration import Calibration


def calibration(**values):
    measured = Calibration()
    for key, value in values.items():
        measured.measure(key.replace("__", "."), value)
    return measured


def test_differences_group_one_physical_change_and_skip_nominal_values():
    measured = calibration(
        camera__offset_m=[0.004, 0, 0],
        camera__rotation_deg=[3, 0, 0],
        servo__kp_scale=0.6,
        servo__latency_steps=0,  # measured, but the same as the twin: nothing to attribute
    )
    assert differences(measured) == {
        "camera mount": ("camera.offset_m", "camera.rotation_deg"),
        "servo.kp_scale": ("servo.kp_scale",),
    }


def test_attribution_names_the_difference_that_costs_the_points():
    measured = calibration(camera__background_rgb=[0.7, 0.7, 0.7], servo__kp_scale=0.6)
    seen = []

    def success_in(twin, label):
        seen.append(label)
        blind = twin.camera.background_rgb != (0.0, 0.0, 0.0)
        return rate(3 if blind else 36, 40)

    result = attribute_with(success_in, measured)
    first, second = result["differences"]
    assert first["difference"] == "camera.background_rgb"
    assert first["cost_alone"]["gap"] > 0.6 and first["cost_alone"]["ci95"][0] > 0
    assert first["gain_if_removed"]["gap"] > 0.6
    assert second["difference"] == "servo.kp_scale" and second["cost_alone"]["gap"] == 0
    assert result["gap"]["gap"] > 0.6
    assert len(seen) == 2 + 2 * 2  # nominal, calibrated, and each difference twice
    json.dumps(result)  # the CLI writes it as JSON
