"""The scripted teacher in an arm's twin, asked before a retraining: how far it gets
there, and whether the cube's unmeasured friction on the desk decides that.

A retraining distils this teacher, so its success in the arm's twin caps what the
student learns there. A twin's cube friction is nominal (1.0) unless ``rig.toml``
gives it, and it can decide a grasp: random webcam arm 323 (a soft gripper, a 29 g
cube) let the expert grasp 84% of the time on a cube that slides as easily as the desk
allows, 30% at the twin's 1.0; its true cube (0.70) slides as the former.
"""

from __future__ import annotations

from realgap.sim.calibration import Calibration
from realgap.sim.scene import DESK_FRICTION
from realgap.sim.scripted import expert_success
from realgap.sim.tasks import make_task
from realgap.speed import DeploySpeed

FRICTION_MATTERS = 0.10
"""The expert's success differing by more than this between a slippery cube and the
twin's decides that the cube's friction must be measured."""


def teacher_check(
    task: str, seen: Calibration, speed: DeploySpeed | None, seed: int = 0, episodes: int = 64
) -> dict:
    """The expert's success in the arm's twin (``arm_twin``) and the nominal one; where a
    grasping task's cube friction was not measured, also on a cube as slippery as the
    desk allows (``slippery_cube``), ``best`` being the better of the arm's two (the
    retraining draws the friction over both), and ``friction_note`` when they differ."""
    twin = seen.twin()
    out = {
        "arm_twin": expert_success(task, twin, speed, episodes, seed),
        "nominal": expert_success(task, Calibration().twin(), speed, episodes, seed),
    }
    out["best"] = out["arm_twin"]
    note = ""
    if make_task(task).grasps and "cube.friction" not in seen.values:
        slippery = with_slippery_cube(seen).twin()
        out["slippery_cube"] = expert_success(task, slippery, speed, episodes, seed)
        out["best"] = max(out["arm_twin"], out["slippery_cube"])
        if abs(out["slippery_cube"] - out["arm_twin"]) > FRICTION_MATTERS:
            note = (
                f"the cube's friction on the desk decides the grasp on this arm: the expert "
                f"scores {out['slippery_cube']:.0%} with a cube that slides easily "
                f"(friction up to {DESK_FRICTION}) and {out['arm_twin']:.0%} at the twin's "
                f"unmeasured {twin.cube.friction:g}; set the cube on a board of the desk's "
                "surface, tilt it until the cube slides, and give cube.friction = "
                "tan(angle) in rig.toml"
            )
    out["friction_note"] = note
    return out


def with_slippery_cube(seen: Calibration) -> Calibration:
    """``seen`` with a cube that slides on the desk as easily as the twin allows (any
    friction up to the desk's own): the other end of an unmeasured cube friction."""
    values = {**seen.values, "cube.friction": DESK_FRICTION}
    return Calibration(values, dict(seen.uncertainty), {**seen.source, "slippery_cube": True})
