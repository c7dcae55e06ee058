"""The servo fit's profiles (stiffness and damping held either side of the fit, the others
refitted): a fit that stopped short restarts from a lower profile point, and the stated
sigma widens with a flat valley and narrows with a steep one."""

import numpy as np
import pytest

from realgap.diagnose import servos


class Landscape:
    """Stands in for a recording's replay error: ``error(log_scales, latency)``."""

    def __init__(self, cost):
        self.cost = cost

    def error(self, log_scales, latency: int) -> float:
        return float(self.cost(np.asarray(log_scales, dtype=float)))


def two_wells(x: np.ndarray) -> float:
    """A narrow well in stiffness at 0, where the fit stopped, and a wider, deeper one at
    +0.3; the other scales quadratic about 0."""
    stiffness = x[0]
    wells = min(1.0 + 50.0 * stiffness**2, 0.2 + 5.0 * (stiffness - 0.3) ** 2)
    return wells + 10.0 * float(np.sum(x[1:] ** 2))


def test_a_fit_that_stopped_short_restarts_from_the_lower_profile_point():
    start = np.zeros(4)
    cost, best, rises = servos._profiles(Landscape(two_wells), 0, two_wells(start), start, 2)
    assert cost == pytest.approx(0.2, abs=0.01)
    assert best[0] == pytest.approx(0.3, abs=0.03)
    # The last profile is about the deeper well: both sides rise.
    assert np.all(np.concatenate(rises) > 0), rises


def test_a_fit_at_its_floor_stays_where_it_is():
    def bowl(x):
        return 1.0 + 5.0 * float(np.sum(x**2))

    start = np.zeros(4)
    cost, best, _ = servos._profiles(Landscape(bowl), 0, bowl(start), start, 2)
    assert cost == bowl(start) and np.array_equal(best, start)


def test_the_width_is_where_the_flatter_side_rises_by_the_allowed_amount():
    step, allowed = servos.PROFILE_STEP, servos.PROFILE_RISE
    for curvature in (0.02, 0.2, 2.0):  # RMS rise = curvature * offset**2
        up, down = curvature * step**2, 3 * curvature * step**2
        width = servos.profile_width(np.array([up, down]))
        assert width == pytest.approx(np.sqrt(allowed / curvature), rel=1e-9)
        assert curvature * width**2 == pytest.approx(allowed)
    # A side that fell, or did not rise: the recording does not pin the scale.
    assert servos.profile_width(np.array([0.01, -0.001])) == 1.0
    assert servos.profile_width(np.array([0.0, 0.01])) == 1.0
