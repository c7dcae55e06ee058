"""The silhouette fits' Levenberg-Marquardt: finds a minimum and stops once its steps
are below the tolerance, not after every allowed iteration."""

import numpy as np

from realgap.diagnose.joints import levenberg_marquardt


def test_levenberg_marquardt_stops_once_its_steps_fall_below_the_tolerance():
    # A narrow valley, as the lift and elbow offsets make: Gauss-Newton on residuals
    # that are slightly non-linear, so the steps shrink over a few iterations.
    target = np.array([1.0, -2.0])
    calls = []

    def residuals(x):
        calls.append(1)
        d = x - target
        return np.array([10 * (d[0] + d[1]), d[0] - d[1], 0.3 * d[0] ** 2])

    strict = levenberg_marquardt(residuals, np.zeros(2), step=1e-4, iterations=30)
    strict_calls = len(calls)
    calls.clear()
    loose = levenberg_marquardt(residuals, np.zeros(2), 1e-4, 30, tolerance=0.005)
    assert np.allclose(strict, target, atol=1e-3) and np.allclose(loose, target, atol=0.01)
    assert len(calls) < strict_calls
