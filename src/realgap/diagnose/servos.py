"""Servo identification from the recording's step responses.

The recording holds every goal the tool wrote (one per control tick) and the
joint readings sampled four times per tick. The twin replays exactly those
writes (:class:`~realgap.diagnose.twin.ServoTwin`) with candidate stiffness,
damping and friction-loss scales, for each whole number of commands of
latency, and a derivative-free optimizer (Nelder-Mead, in log scale) fits the
continuous parameters. Responses are compared relative to each joint's
settled start, so encoder zero offsets do not matter.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from realgap.diagnose.recording import CalibrationRecording
from realgap.diagnose.twin import ServoTwin

LATENCIES = (0, 1, 2, 3)


def identify_servos(recording: CalibrationRecording, offsets=None) -> dict:
    """Fit ``kp_scale``, ``damping_scale``, ``frictionloss_scale`` and ``latency_steps``."""
    offsets = np.zeros(6) if offsets is None else np.asarray(offsets, dtype=float)
    samples = recording.step_samples - offsets
    writes = recording.step_writes - offsets
    observed = samples[:, :5] - samples[0, :5]
    twin = ServoTwin(recording.task)

    def error(log_scales: np.ndarray, latency: int) -> float:
        kp, damping, friction = np.exp(log_scales)
        replay = twin.replay(
            samples[0],
            writes,
            recording.step_sample_write,
            recording.control_hz,
            recording.sample_hz,
            kp,
            damping,
            friction,
            latency,
        )
        return float(np.mean(((replay[:, :5] - replay[0, :5]) - observed) ** 2))

    fits = []
    for latency in LATENCIES:
        result = minimize(
            error,
            np.zeros(3),
            args=(latency,),
            method="Nelder-Mead",
            options={"xatol": 0.01, "fatol": 1e-12, "maxfev": 120, "initial_simplex": _simplex()},
        )
        fits.append((result.fun, latency, np.exp(result.x)))
    cost, latency, (kp, damping, friction) = min(fits, key=lambda fit: fit[0])
    return {
        "kp_scale": float(kp),
        "damping_scale": float(damping),
        "frictionloss_scale": float(friction),
        "latency_steps": int(latency),
        "rms_rad": float(np.sqrt(cost)),
        "rms_rad_by_latency": {str(lat): float(np.sqrt(c)) for c, lat, _ in fits},
    }


def _simplex() -> np.ndarray:
    """A start simplex spanning x0.5 .. x2 in every scale."""
    return np.log(np.array([[1, 1, 1], [0.5, 1, 1], [1, 2, 1], [1, 1, 2]], dtype=float))
