"""The hand-eye fit's lens reaches the arm's twin: the calibration file keeps k1 with
its standard deviation, and a randomization around the calibration spreads the lens by
it (the twin used to stay a pinhole whatever the fit found)."""

import numpy as np
import pytest

from realgap.diagnose.run import calibration_from
from realgap.sim.draws import sample_episode
from realgap.sim.randomization import DomainRandomization


def test_the_calibration_keeps_the_lens_with_its_sigma(diagnosis):
    calibration = calibration_from(diagnosis(), "recording.npz")
    assert calibration.values["camera.lens_k1"] == pytest.approx(-0.068)
    assert calibration.uncertainty["camera.lens_k1"] == pytest.approx(0.004)
    assert calibration.twin().camera.lens_k1 == pytest.approx(-0.068)
    assert calibration.through_bridge().twin().camera.lens_k1 == pytest.approx(-0.068)


def test_a_geometry_the_fit_distrusts_leaves_the_twin_a_pinhole(diagnosis):
    calibration = calibration_from(diagnosis(warnings=["implausible"]), "recording.npz")
    assert "camera.lens_k1" not in calibration.values
    assert calibration.twin().camera.lens_k1 == 0.0


def test_the_twin_around_a_calibration_draws_lenses_within_two_sigmas_of_the_fit(
    diagnosis,
):
    around = DomainRandomization().around(calibration_from(diagnosis(), "recording.npz"))
    assert around.distortion_k1 == pytest.approx((-0.008, 0.008))
    k1 = sample_episode(around, np.random.default_rng(0), 400).distortion_k1
    assert -0.076 <= k1.min() < -0.074 and -0.062 < k1.max() <= -0.060
