"""adapt's judgements: which of the arm's differences the teacher must learn, and, where
the arm outranks its twin, whether to retrain and which policy to keep.

They are pure functions of measurements, so they are tested without an arm. The twin
of an arm is a model; the old policy's matched evaluation on the arm is a measurement.
On a random arm the twin once predicted 67% for an old policy that scored 100% on the
arm; adapt retrained for a loss that was not there and handed back a policy at 81%.
"""

from __future__ import annotations

import numpy as np

from realgap.sim.calibration import Calibration

TEACHER_SECTIONS = ("cube", "fingers", "servo", "control", "placement")
"""What the privileged teacher's world is made of (physics, and where objects land); a
camera change does not touch it."""

ALREADY_FINE = 0.05
"""Within this of its own nominal success, a policy has no gap left to close."""


def retrain_decision(at_home: float, arm_twin: float, on_arm: float) -> dict:
    """Whether to retrain: the old policy's success in the nominal twin (``at_home``),
    in the arm's twin with the bridge's calibration (``arm_twin``) and on the arm itself
    (``on_arm``, the matched evaluation before adapt). Retrain only for a loss the twin
    predicts and the arm shows."""
    twin_loss = arm_twin < at_home - ALREADY_FINE
    arm_loss = on_arm < at_home - ALREADY_FINE
    scores = (
        f"the old policy scores {on_arm:.0%} on the arm, {arm_twin:.0%} in the arm's twin "
        f"and {at_home:.0%} in the nominal twin: "
    )
    if not arm_loss:
        why = "nothing to close on the arm" + (
            " (its twin predicts a loss the arm does not show: trust the arm)" if twin_loss else ""
        )
    elif not twin_loss:
        why = "the calibration alone closes the gap"
    else:
        why = "retraining for the difference"
    return {
        "retrain": twin_loss and arm_loss,
        "note": scores + why,
        "nominal": at_home,
        "arm_twin": arm_twin,
        "on_arm": on_arm,
    }


def policy_to_keep(before: dict, after: dict, old_policy: str, new_policy: str) -> dict:
    """The policy to deploy after adapt: the adapted one unless it scored lower on the arm
    than the old one did (``before``/``after``: matched evaluations' ``overall``)."""
    worse = after["success_rate"] < before["success_rate"]
    if not worse:
        return {"policy": new_policy, "adapted": True, "note": ""}
    return {
        "policy": old_policy,
        "adapted": False,
        "note": (
            f"the adapted policy scored {after['success_rate']:.0%} on the arm against the "
            f"old one's {before['success_rate']:.0%}: keep the old policy ({old_policy}) "
            "and check the calibration (a twin that mispredicts the arm trains for the "
            "wrong arm)"
        ),
    }


def physics_changed(calibration: Calibration, sigmas: float = 2.0) -> list[str]:
    """Measured values of the teacher's world (physics, placement) that differ from the
    nominal twin by more than ``sigmas`` standard deviations (or at all, where none was
    given)."""
    nominal = Calibration().twin()
    changed = []
    for key, value in calibration.values.items():
        section, name = key.split(".", 1)
        if section not in TEACHER_SECTIONS:
            continue
        default = np.asarray(getattr(getattr(nominal, section), name), dtype=float)
        sigma = np.asarray(calibration.uncertainty.get(key, 0.0), dtype=float)
        if np.any(
            np.abs(np.asarray(value, dtype=float) - default) > np.maximum(sigmas * sigma, 1e-9)
        ):
            changed.append(key)
    return changed
