"""Before a retraining, adapt asks the scripted expert what the arm's twin allows."""

from pathlib import Path

from realgap.adapt import retrain as adapt_retrain
from realgap.adapt.config import AdaptConfig
from realgap.adapt.retrain import retraining_needed
from realgap.adapt.teacher import teacher_check
from realgap.runs import RunFolder
from realgap.sim.calibration import Calibration
from realgap.sim.scripted import expert_success
from realgap.sim.twin import TwinParams
from realgap.speed import DeploySpeed

TRAINING = DeploySpeed(10.0, 1.0)


def test_the_expert_says_what_an_arms_physics_allow():
    # A 120 g cube with slippery jaws defeats any grasp; the nominal cube does not.
    heavy = TwinParams().updated(
        {"cube": {"mass_kg": 0.12, "friction": 0.3}, "fingers": {"friction": 0.3}}
    )
    assert expert_success("PickCube", TwinParams(), TRAINING, episodes=32) >= 0.8
    assert expert_success("PickCube", heavy, TRAINING, episodes=32) <= 0.2


def _needed(
    tmp_path, monkeypatch, calibration: Calibration, arm_twin: float, scripted: bool = True
) -> dict:
    """The retraining decision with the old policy's evaluations standing in: nominal
    90%, the arm's twin ``arm_twin``, the arm 30%."""
    rates = {"old_nominal": 0.9, "old_twin": arm_twin}
    monkeypatch.setattr(
        adapt_retrain,
        "evaluate",
        lambda *a, out, **k: {"overall": {"success_rate": rates[Path(out).name]}},
    )
    config = AdaptConfig(policy=tmp_path / "policy", out=tmp_path)
    return retraining_needed(
        config,
        "PickCube",
        None,
        13,
        calibration,
        TRAINING,
        RunFolder(tmp_path),
        {"success_rate": 0.3},
        scripted_teacher=scripted,
    )


def test_a_retraining_says_how_the_teacher_does_in_the_arms_twin(tmp_path, monkeypatch):
    needed = _needed(tmp_path, monkeypatch, Calibration(), arm_twin=0.4)
    assert needed["retrain"]
    assert needed["expert"]["arm_twin"] >= 0.8 and needed["expert"]["nominal"] >= 0.8
    assert "the teacher (the scripted expert) scores" in needed["note"]


def test_no_retraining_from_a_teacher_worse_than_the_policy(tmp_path, monkeypatch):
    # Random webcam arm 323's twin defeated the expert (37%) where the old policy scored
    # 84%: distilling that teacher could only pull the policy down.
    heavy = Calibration()
    heavy.measure("cube.mass_kg", 0.12)
    heavy.measure("fingers.friction", 0.3)
    needed = _needed(tmp_path, monkeypatch, heavy, arm_twin=0.4)
    assert needed["expert"]["arm_twin"] <= 0.2
    assert not needed["retrain"] and "worse teacher" in needed["note"]
    # A policy trained with a PPO teacher retrains with that teacher: not judged so.
    assert _needed(tmp_path, monkeypatch, heavy, arm_twin=0.4, scripted=False)["retrain"]


def test_no_expert_is_asked_when_nothing_is_retrained(tmp_path, monkeypatch):
    ninety = {"overall": {"success_rate": 0.9}}
    monkeypatch.setattr(adapt_retrain, "evaluate", lambda *a, **k: ninety)
    config = AdaptConfig(policy=tmp_path / "policy", out=tmp_path)
    needed = retraining_needed(
        config,
        "PickCube",
        None,
        13,
        Calibration(),
        TRAINING,
        RunFolder(tmp_path),
        {"success_rate": 0.9},
    )
    assert not needed["retrain"] and "expert" not in needed


def _soft_gripper_heavy_cube() -> Calibration:
    """Random webcam arm 323's measured physics, less its unmeasured cube friction."""
    calibration = Calibration()
    for key, value in {
        "servo.kp_scale": 0.45,
        "servo.torque_limit_scale": 0.8,
        "cube.mass_kg": 0.029,
        "cube.size_m": 0.0228,
    }.items():
        calibration.measure(key, value, 0.01)
    return calibration


def test_an_unmeasured_cube_friction_that_decides_the_grasp_is_named():
    arm = _soft_gripper_heavy_cube()
    slow = DeploySpeed(15.0, 0.15)
    check = teacher_check("PickCube", arm, slow, episodes=32)
    # The twin's nominal 1.0 defeats the expert; a cube as slippery as the desk does not.
    assert check["arm_twin"] <= 0.5 and check["slippery_cube"] >= 0.8
    assert check["best"] == check["slippery_cube"]
    assert "cube.friction" in check["friction_note"] and "rig.toml" in check["friction_note"]
    arm.measure("cube.friction", 0.7, 0.1)  # tilt-tested: nothing left to guess
    measured = teacher_check("PickCube", arm, slow, episodes=32)
    assert measured["arm_twin"] >= 0.8 and "slippery_cube" not in measured
    assert measured["friction_note"] == ""


def test_a_teacher_held_back_only_by_the_unmeasured_friction_still_retrains(tmp_path, monkeypatch):
    # Arm 323 again: the expert below the old policy in the twin at friction 1.0 (before
    # this, no retraining), far above it with the slippery cube the retraining also draws.
    monkeypatch.setattr(
        adapt_retrain,
        "teacher_check",
        lambda *a, **k: {
            "arm_twin": 0.2,
            "nominal": 1.0,
            "slippery_cube": 0.95,
            "best": 0.95,
            "friction_note": "the cube's friction on the desk decides the grasp",
        },
    )
    needed = _needed(tmp_path, monkeypatch, _soft_gripper_heavy_cube(), arm_twin=0.4)
    assert needed["retrain"]
    assert "decides the grasp" in needed["note"]
