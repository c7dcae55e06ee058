"""Friction loss is fitted (it keeps stiffness and damping right) but not measured by the
step responses: its sigma is the interval of plausible friction about the fitted value."""

import numpy as np
import pytest

from realgap.bridge.random_arms import sample_arm
from realgap.diagnose.servos import friction_sigma


def test_one_friction_sigma_about_any_value_holds_68_percent_of_plausible_arms():
    truths = np.array([sample_arm(seed).twin.servo.frictionloss_scale for seed in range(400)])
    for value in (0.05, 0.5, 1.0, 1.25, 2.0, 2.5):
        sigma = friction_sigma(value)
        assert np.mean(np.abs(truths - value) <= sigma) == pytest.approx(0.68, abs=0.06), value
        assert np.mean(np.abs(truths - value) <= 2 * sigma) >= 0.95, value


def test_a_fit_far_outside_the_plausible_range_says_so_in_its_sigma():
    """The old sigma was half the value: a fit at 0.05 claimed +-0.025 for a truth that
    random arms put anywhere in 0.5-2."""
    assert friction_sigma(0.05) > 1.0 > friction_sigma(1.25)
