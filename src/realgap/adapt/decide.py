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


def policy_to_keep(
    before: dict,
    after: dict,
    old_policy: str,
    new_policy: str,
    retrained: bool = True,
    twin: dict | None = None,
) -> dict:
    """What to deploy after adapt: the adapted policy with the calibration's joint
    correction, unless that scored lower on the arm than the old policy did without it
    (``before``/``after``: matched evaluations' ``overall``); then the old policy as it
    ran before adapt, uncorrected. ``retrained``: whether the adapted policy is a new one
    (without a retraining only the correction changed); ``twin``: the arm's twin's
    prediction for what step 5 ran. ``calibrated``: whether to deploy with the
    calibration (``--calibration``)."""
    worse = after["success_rate"] < before["success_rate"]
    if not worse:
        return {"policy": new_policy, "adapted": True, "calibrated": True, "note": ""}
    scores = f"{after['success_rate']:.0%} on the arm against {before['success_rate']:.0%}"
    if retrained:
        note = (
            f"the adapted policy scored {scores} for the old one: keep the old policy "
            f"({old_policy}) as it ran before adapt, without the calibration, and check the "
            "calibration (a twin that mispredicts the arm trains for the wrong arm)"
        )
    else:
        # Random arms 305 and 306: a calibration within 0.55 degrees on every joint, the
        # policy 100% and 85% uncorrected, 78% and 56% corrected, as the twin predicted:
        # the arm's zero errors had kept it out of the policy's weak spots.
        predicted = f" (its twin predicted {twin['success_rate']:.0%})" if twin else ""
        note = (
            f"with the calibration's joint correction the old policy scored {scores} "
            f"without it{predicted}: keep running {old_policy} as before adapt, without "
            "the calibration. Corrected, the arm moves as the nominal twin's does, into the "
            "policy's own weak spots; retrain it for more success in the sim first"
        )
    return {"policy": old_policy, "adapted": False, "calibrated": False, "note": note}


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
