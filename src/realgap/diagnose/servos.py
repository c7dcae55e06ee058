"""Servo identification from the recording's step responses.

The recording holds every goal the tool wrote (one per control tick) and the
joint readings sampled four times per tick. The twin replays exactly those
writes (:class:`~realgap.diagnose.twin.ServoTwin`) with candidate stiffness,
damping, friction-loss and torque-cap scales, for each whole number of commands of
latency, and a derivative-free optimizer (Nelder-Mead, in log scale) fits the
continuous parameters. Responses are compared relative to each joint's
settled start, so encoder zero offsets do not matter.

The torque cap matters: the twin's position servos are stiff (998 N*m/rad), so a step
of a few hundredths of a radian drives them into their cap, and a servo capped at 0.6
of nominal accelerates as if heavily damped. Without a term for the cap, the fit read
one such arm as damping x3.15.

Friction loss is fitted but not measured: it keeps the others right, and its sigma is
the spread of plausible friction (see :func:`friction_sigma`).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

from realgap.bridge.random_arms import RANGES
from realgap.diagnose.recording import HOLD_WRITES, CalibrationRecording
from realgap.diagnose.twin import ServoTwin
from realgap.runtime import available_cores
from realgap.sim.twin import ServoParams

LATENCIES = (0, 1, 2, 3)
FITTED = ("kp_scale", "damping_scale", "frictionloss_scale", "torque_limit_scale")
FRICTION_RANGE = RANGES["servo.frictionloss_scale"]
"""Plausible friction-loss scales: the range random arms draw from (judgement, no source)."""
MODEL_FLOOR = {
    "kp_scale": 0.10,
    "damping_scale": 0.08,
    "torque_limit_scale": 0.015,
}
"""Relative standard deviation no fit goes below: the curvature only sees reading noise,
and where the optimizer stops in the replay's shallow valleys varies by more (median
stiffness error 3-4%, one arm in ten over 14-20%). Chosen with :data:`AMBIGUOUS_RMS` on
30 random arms (seeds 0-29, their recordings and hand-eye offsets from ``benchmarks/
bench_calibration.py --random 30 --measured-cube``) and checked on 30 others (seeds
100-129, true offsets plus 0.5 degrees of noise), truth within one / two stated sigmas:
stiffness 90/100% and 80/90%, damping 97/97% and 77/90%, torque cap 87/97% and 80/100%
(docs/results/2026-12-05-calibration.md). The errors have long tails, so floors that
put 68% within one sigma on the first arms left the second's under 90% within two.
The torque cap's floor was sized again (2026-12-06, was 0.03) on 60 random arms' fits
(twin renders 30-89) by the hand-eye floors' rule, two sigmas holding 90% with one value
to spare and one sigma nearest 68%: 70/95% there, 69/90% on 39 webcam arms held out.
Stiffness's and damping's floors cover 87-97% within one sigma on those sets, but no
smaller floor keeps the webcams' two sigmas at 90% (stiffness at 0.05: 72/87%). These
arms' servos are the twin's own model, so a real servo's model error is not in these
floors: on a real arm read the servo sigmas as lower bounds."""


STIFFNESS_LINE = np.array([1.0, 1.0, 0.0, 0.0])
"""Log-scale direction of stiffness and damping scaled together."""
POLISH_SIMPLEX = 0.1
"""Size of the polishes' start simplex, in log scale (10%). SciPy's default is 5% of
each coordinate: in log scale near the nominal servo a few thousandths, so a polish
stopped about where it started. On 30 random arms 11 fits ended with a replay error
above the true servo's (random arm 25: 3% above, stiffness 22% low), and the
polishes from either side, stopped near their starts a factor of 2 away within 4% of
the best's error, widened the stated sigmas of 20 arms to 40-160% of the value. With
this simplex and the last, wider polish (:data:`FINAL_SIMPLEX`), none of those 30
ends above the truth's error and 5 of 30 others by 0.1-1.5%; mean stiffness error
10% -> 5%."""
FINAL_SIMPLEX = 0.3
"""The last polish's start simplex (see :func:`_basins`)."""
AMBIGUOUS_RMS = 0.002
"""Another basin whose replay error is within this fraction of the best's counts as an
equally good explanation of the recording, and widens the sigmas by how far it lies.
Was 4%, when the polishes stopped near their starts (see :data:`POLISH_SIMPLEX`); now
other basins lie 0.2-4% worse on most arms, and 4-6 of 30 are within this."""


@dataclass
class _ReplayFit:
    """The recording's step responses, to compare with the twin's replays (each thread
    replays on its own twin)."""

    task: str
    start: np.ndarray
    writes: np.ndarray
    sample_write: np.ndarray
    control_hz: float
    sample_hz: float
    hold: np.ndarray
    observed: np.ndarray
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def residuals(self, log_scales: np.ndarray, latency: int) -> np.ndarray:
        twin = getattr(self._local, "twin", None)
        if twin is None:
            twin = self._local.twin = ServoTwin(self.task)
        kp, damping, friction, torque = np.exp(log_scales)
        replay = twin.replay(
            self.start,
            self.writes,
            self.sample_write,
            self.control_hz,
            self.sample_hz,
            kp,
            damping,
            friction,
            latency,
            torque_limit_scale=torque,
        )
        return (replay[:, :5] - replay[self.hold, :5].mean(axis=0)) - self.observed

    def error(self, log_scales: np.ndarray, latency: int) -> float:
        return float(np.mean(self.residuals(log_scales, latency) ** 2))


def _polish(job: tuple[_ReplayFit, int, np.ndarray, float]) -> tuple[float, np.ndarray]:
    """The fit at one latency polished from ``start``, with a start simplex of ``size``
    on every log scale."""
    fit, latency, start, size = job
    simplex = np.vstack([start, start + size * np.eye(len(start))])
    result = minimize(
        fit.error,
        start,
        args=(latency,),
        method="Nelder-Mead",
        options={"xatol": 0.005, "fatol": 1e-12, "maxfev": 160, "initial_simplex": simplex},
    )
    return float(result.fun), result.x


def _fit_latency(job: tuple[_ReplayFit, int]) -> tuple[float, int, np.ndarray]:
    """The continuous scales' fit at one latency, from the nominal servo."""
    fit, latency = job
    result = minimize(
        fit.error,
        np.zeros(len(FITTED)),
        args=(latency,),
        method="Nelder-Mead",
        options={"xatol": 0.01, "fatol": 1e-12, "maxfev": 200, "initial_simplex": _simplex()},
    )
    return float(result.fun), latency, result.x


def identify_servos(
    recording: CalibrationRecording, offsets=None, workers: int | None = None
) -> dict:
    """Fit ``kp_scale``, ``damping_scale``, ``frictionloss_scale``, the torque cap and
    ``latency_steps``. The fits at each latency, and the polishes from either side, are
    independent and replay the recording hundreds of times each in MuJoCo, which
    releases the GIL while it steps: they run on ``workers`` threads (default: one per
    core; the result is the same with any number). Threads, not processes: a spawned
    process would re-run the caller's script (one that records on an arm, say)."""
    problem = _replay_problem(recording, offsets)
    fits, latency, basins = _basins(problem, workers or available_cores())
    cost, best = basins[0]
    ambiguity = np.zeros(len(FITTED))
    for other_cost, other in basins:
        if np.sqrt(other_cost) <= (1 + AMBIGUOUS_RMS) * np.sqrt(cost):
            ambiguity = np.maximum(ambiguity, np.abs(other - best))
    values = np.exp(best)
    noise_sigma = _log_sigma(lambda x: problem.residuals(x, latency), best)
    floor = np.array([MODEL_FLOOR.get(k, 0.0) for k in FITTED])
    sigma = np.sqrt(noise_sigma**2 + floor**2 + ambiguity**2)
    out = {}
    for index, key in enumerate(FITTED):
        out[key] = float(values[index])
        # Standard deviations: the log scale's, times the value.
        out[f"{key}_sigma"] = float(values[index] * sigma[index])
    # Friction loss: fitted, but the steps do not measure it; its sigma says so.
    out["frictionloss_scale_sigma"] = friction_sigma(out["frictionloss_scale"])
    return {
        **out,
        "latency_steps": int(latency),
        "rms_rad": float(np.sqrt(cost)),
        "rms_rad_by_latency": {str(lat): float(np.sqrt(c)) for c, lat, _ in fits},
    }


def replay_rms(recording: CalibrationRecording, servo: ServoParams, offsets=None) -> float:
    """How well ``servo`` explains the recording's step responses: the RMS difference of
    the twin's replay from the readings (radians), as the fit measures it."""
    scales = np.log([getattr(servo, key) for key in FITTED])
    problem = _replay_problem(recording, offsets)
    return float(np.sqrt(problem.error(scales, servo.latency_steps)))


def _replay_problem(recording: CalibrationRecording, offsets=None) -> _ReplayFit:
    offsets = np.zeros(6) if offsets is None else np.asarray(offsets, dtype=float)
    samples = recording.step_samples - offsets
    writes = recording.step_writes - offsets
    # Responses relative to the first hold's mean: one noisy sample would bias a joint.
    hold = recording.step_sample_write < HOLD_WRITES
    return _ReplayFit(
        recording.task,
        samples[0],
        writes,
        recording.step_sample_write,
        recording.control_hz,
        recording.sample_hz,
        hold,
        samples[:, :5] - samples[hold, :5].mean(axis=0),
    )


def friction_sigma(value: float) -> float:
    """The fitted friction loss's standard deviation: the half-width of the interval
    about ``value`` that holds 68% of plausible scales (uniform over
    :data:`FRICTION_RANGE`), clipped where the range ends.

    The step responses do not measure friction loss. Over 99 random arms (twin renders
    and webcams) the fitted scale and the truth were uncorrelated (r = -0.04), and a
    sigma of half the value held the truth within two 78-87% of the time; on 30 webcam
    arms, holding it at half or twice the fit's and re-fitting the others left the
    replay error within 0.1% of the best on 16, while the truth's own error lay 0.6%
    under to 1.9% over it. It stays in the fit all the same: held at nominal, the
    stiffness's median error rose from 3% to 7% and the damping's from 3% to 5% (11
    webcam arms), since the truth's friction does shape the responses, together with the
    others. So the twin keeps the fitted value (the best replay of the recording) and
    the sigma says what is known: plausible friction, wherever the fit ended. On random
    arms, which draw from that range, it covers by construction; a real servo may lie
    outside it. (A 68% interval, not the spread's standard deviation, which holds only
    58% of a uniform range about its centre.)"""
    low, high = FRICTION_RANGE
    width = high - low
    return float(max(0.34 * width, low + 0.68 * width - value, value - (high - 0.68 * width)))


def _basins(problem: _ReplayFit, workers: int):
    """The fits at every latency; the best latency; its basins, best first (cost, log
    scales)."""
    with ThreadPoolExecutor(min(len(LATENCIES), workers)) as pool:
        fits = list(pool.map(_fit_latency, [(problem, lat) for lat in LATENCIES]))
        cost, latency, best = min(fits, key=lambda fit: fit[0])
        # Polish the best latency's fit from where it stopped: the cap and the stiffness
        # trade off along a valley the first simplex leaves early.
        polished_cost, polished = _polish((problem, latency, best, POLISH_SIMPLEX))
        if polished_cost < cost:
            cost, best = polished_cost, polished
        # Stiffness and damping scaled together barely change a capped servo's response,
        # and the replay's cost has shallow basins along that line: on random arm 3 the
        # simplex stopped at half the true stiffness and damping. Polish from both sides
        # as well and keep the best; basins that fit almost as well widen the uncertainty
        # by how far they lie, since the recording cannot tell them apart.
        shifts = (np.log(2.0), -np.log(2.0))
        starts = [best + shift * STIFFNESS_LINE for shift in shifts]
        jobs = [(problem, latency, start, POLISH_SIMPLEX) for start in starts]
        others = list(pool.map(_polish, jobs))
    basins = sorted([(cost, best), *others], key=lambda basin: basin[0])
    # A last, wider polish of the best: its simplex had collapsed short of the floor
    # of a shallow valley on 4 of 30 random arms (stiffness 10-23% off, replay errors
    # up to 1.8% above the true servo's); from a fresh simplex 3 times wider it got there.
    final = _polish((problem, latency, basins[0][1], FINAL_SIMPLEX))
    if final[0] < basins[0][0]:
        basins[0] = final
    return fits, latency, basins


def _log_sigma(residuals, x: np.ndarray, step: float = 0.05) -> np.ndarray:
    """Standard deviations of the log scales from the fit's curvature: sigma^2 (J^T J)^-1,
    with sigma^2 the residual variance (reading noise dominates it; responses are
    compared sample by sample, so the noise is independent between samples)."""
    base = residuals(x).ravel()
    jac = np.stack(
        [(residuals(x + step * e).ravel() - base) / step for e in np.eye(len(x))], axis=-1
    )
    variance = float(base @ base) / max(len(base) - len(x), 1)
    covariance = variance * np.linalg.pinv(jac.T @ jac)
    return np.sqrt(np.maximum(np.diag(covariance), 0.0))


def _simplex() -> np.ndarray:
    """A start simplex spanning x0.5 .. x2 in every scale (the cap: x0.6)."""
    return np.log(
        np.array(
            [[1, 1, 1, 1], [0.5, 1, 1, 1], [1, 2, 1, 1], [1, 1, 2, 1], [1, 1, 1, 0.6]],
            dtype=float,
        )
    )
