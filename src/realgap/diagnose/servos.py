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

Stiffness and damping are then profiled (each held a step either side of the fit, the
others refitted): a lower point restarts a fit that stopped short, and how little the
replay error rises says how flat the valley is, which sizes their sigmas
(:func:`_profiles`).
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
    "kp_scale": 0.02,
    "damping_scale": 0.025,
    "torque_limit_scale": 0.015,
}
"""Relative standard deviation no fit goes below: the curvature only sees reading noise,
and where the fit ends in the replay's shallow valleys varies by more. Stiffness's and
damping's sigmas also widen with their profiles (:data:`PROFILE_RISE`), so their floors
are small; the three were chosen with it on 99 random arms' fits (twin renders 30-89,
webcams 200-239; their recordings and hand-eye offsets from ``benchmarks/
bench_calibration.py --random N --measured-cube``, webcams ``--appearance``), the truth
within one / two stated sigmas: stiffness 78/95% (twin renders) and 69/87% (webcams),
damping 83/93% and 64/87%, torque cap 75/97% and 69/92%; on 81 held out (the chosen
calibration poses' recordings) stiffness 78/85%, damping 63/89%, torque cap 74/94%
(docs/results/2026-12-05-calibration.md). Before the profiles the stiffness's and
damping's floors were 0.10 and 0.08 and covered 87-95% within one sigma: constant floors
wide enough for the long tails. These arms' servos are the twin's own model, so a real
servo's model error is not in these floors: on a real arm read the servo sigmas as lower
bounds."""


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
PROFILED = (0, 1)
"""Stiffness and damping (indices into :data:`FITTED`): the scales whose errors had long
tails (see :func:`_profiles`)."""
PROFILE_STEP = 0.15
"""How far (log scale, about 16%) a profile pins a scale on either side of the fit."""
PROFILE_ROUNDS = 3
"""At most this many times a profile's lower point restarts the fit."""
PROFILE_RISE = 1e-4
"""The relative rise in replay RMS that one stated sigma allows along a profile (see
:func:`profile_width`): chosen with :data:`MODEL_FLOOR` on 99 random arms' fits, the
truth's own replay lies within a few hundredths of a percent of the fit's on most."""


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


def _nelder_mead(cost, start: np.ndarray, size: float, maxfev: int):
    """A polish's simplex search from ``start``, its start simplex ``size`` on every log
    scale."""
    simplex = np.vstack([start, start + size * np.eye(len(start))])
    return minimize(
        cost,
        start,
        method="Nelder-Mead",
        options={"xatol": 0.005, "fatol": 1e-12, "maxfev": maxfev, "initial_simplex": simplex},
    )


def _polish(job: tuple[_ReplayFit, int, np.ndarray, float]) -> tuple[float, np.ndarray]:
    """The fit at one latency polished from ``start``, with a start simplex of ``size``
    on every log scale."""
    fit, latency, start, size = job
    result = _nelder_mead(lambda x: fit.error(x, latency), start, size, maxfev=160)
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
    workers = workers or available_cores()
    fits, latency, basins = _basins(problem, workers)
    cost, best = basins[0]
    ambiguity = np.zeros(len(FITTED))
    for other_cost, other in basins:
        if np.sqrt(other_cost) <= (1 + AMBIGUOUS_RMS) * np.sqrt(cost):
            ambiguity = np.maximum(ambiguity, np.abs(other - best))
    cost, best, rises = _profiles(problem, latency, cost, best, workers)
    values = np.exp(best)
    noise_sigma = _log_sigma(lambda x: problem.residuals(x, latency), best)
    floor = np.array([MODEL_FLOOR.get(k, 0.0) for k in FITTED])
    profile_sigma = np.zeros(len(FITTED))
    profile_sigma[list(PROFILED)] = [profile_width(rise) for rise in rises]
    sigma = np.sqrt(noise_sigma**2 + floor**2 + ambiguity**2 + profile_sigma**2)
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
        # Where each stated sigma comes from (log scale), and the profiles' rises in
        # replay error at PROFILE_STEP above and below the fit.
        "log_sigma_parts": {
            "curvature": noise_sigma.tolist(),
            "basins": ambiguity.tolist(),
            "profile": profile_sigma.tolist(),
            "floor": floor.tolist(),
        },
        "profile_rise": {FITTED[i]: rise.tolist() for i, rise in zip(PROFILED, rises)},
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


def _pinned_polish(job: tuple[_ReplayFit, int, np.ndarray, int, float]):
    """The fit at one latency with scale ``index`` held at ``pin`` (log), the others
    polished from ``start``."""
    fit, latency, start, index, pin = job
    free = [i for i in range(len(FITTED)) if i != index]

    def pinned(x: np.ndarray) -> np.ndarray:
        full = np.empty(len(FITTED))
        full[index], full[free] = pin, x
        return full

    result = _nelder_mead(
        lambda x: fit.error(pinned(x), latency), start[free], POLISH_SIMPLEX, maxfev=120
    )
    return float(result.fun), pinned(result.x)


def _profiles(problem: _ReplayFit, latency: int, cost: float, best: np.ndarray, workers: int):
    """Stiffness's and damping's profiles: each held :data:`PROFILE_STEP` above and
    below the fit, the other scales refitted. Returns the (possibly moved) fit and each
    profiled scale's rises in replay RMS, (above, below), relative to the fit's.

    Why: on random arms their errors had long tails, and the tails were of two kinds.
    Some fits had stopped short: a pinned refit replayed the recording better, always on
    the truth's side (random arm 40: 17% better, stiffness 8% and damping 17% off). So
    a lower profile point restarts the fit, at most :data:`PROFILE_ROUNDS` times. The
    others sat in valleys so flat that the truth replays within 0.05% of the fit 14%
    away (random arm 34): the profile's rise measures that flatness, and the stated
    sigma widens with it (:func:`profile_width`), where the curvature (reading noise)
    and a constant floor had said the same for every arm."""
    with ThreadPoolExecutor(min(2 * len(PROFILED), workers)) as pool:
        for attempt in range(PROFILE_ROUNDS + 1):
            jobs = [
                (problem, latency, best, index, best[index] + sign * PROFILE_STEP)
                for index in PROFILED
                for sign in (1.0, -1.0)
            ]
            pinned = list(pool.map(_pinned_polish, jobs))
            lowest = min(pinned, key=lambda fit: fit[0])
            if lowest[0] >= cost or attempt == PROFILE_ROUNDS:
                break
            polished = _polish((problem, latency, lowest[1], POLISH_SIMPLEX))
            cost, best = min(lowest, polished, key=lambda fit: fit[0])
    rms = np.sqrt([fit[0] for fit in pinned]) / np.sqrt(cost) - 1
    return cost, best, rms.reshape(len(PROFILED), 2)


def profile_width(rises) -> float:
    """A profiled scale's standard deviation (log scale) from its rises in replay RMS at
    :data:`PROFILE_STEP` either side: the step scaled to where a quadratic through the
    flatter side rises by :data:`PROFILE_RISE`. A side that fell (the fit ran out of
    restarts there) or barely rose says the recording does not pin the scale: 1.0, a
    factor of e."""
    flattest = float(np.min(rises))
    if flattest <= PROFILE_RISE * PROFILE_STEP**2:
        return 1.0
    return float(PROFILE_STEP * np.sqrt(PROFILE_RISE / flattest))


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
