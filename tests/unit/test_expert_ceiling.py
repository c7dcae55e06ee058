"""Before a retraining, adapt asks the scripted expert what the arm's twin allows."""

from pathlib import Path

from realgap.adapt import run as adapt_run
from realgap.adapt.run import AdaptConfig, retraining_needed
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


def test_a_retraining_says_what_the_expert_reaches_in_the_arms_twin(tmp_path, monkeypatch):
    # The evaluations of the old policy stand in: nominal 90%, the arm's twin 40%.
    rates = {"old_nominal": 0.9, "old_twin": 0.4}
    monkeypatch.setattr(
        adapt_run,
        "evaluate",
        lambda *a, out, **k: {"overall": {"success_rate": rates[Path(out).name]}},
    )
    heavy = Calibration()
    heavy.measure("cube.mass_kg", 0.12)
    heavy.measure("fingers.friction", 0.3)
    config = AdaptConfig(policy=tmp_path / "policy", out=tmp_path)
    needed = retraining_needed(
        config, "PickCube", None, 13, heavy, TRAINING, RunFolder(tmp_path), {"success_rate": 0.3}
    )
    assert needed["retrain"]
    assert needed["expert"]["arm_twin"] <= 0.2 < 0.8 <= needed["expert"]["nominal"]
    assert "the scripted expert scores" in needed["note"]


def test_no_expert_is_asked_when_nothing_is_retrained(tmp_path, monkeypatch):
    monkeypatch.setattr(adapt_run, "evaluate", lambda *a, **k: {"overall": {"success_rate": 0.9}})
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
