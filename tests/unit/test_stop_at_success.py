"""A matched evaluation ends a fake arm's episode at its first success (success is
latched, so the result is the same); a plain session runs every episode to its length."""

import pytest

import realgap.bridge.deploy as deploy
import realgap.eval.matched as matched
from realgap.bridge.deploy import run_session
from realgap.bridge.env import DeployConfig
from realgap.bridge.worlds import Spot, open_fake_world
from realgap.eval.layout import Layout

STEPS = 40
SPOTS = [Spot("centre", (0.2, 0.0)), Spot("left", (0.16, 0.05))]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("REALGAP_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.mark.parametrize("stop", [False, True])
def test_a_session_stops_at_the_first_success_only_when_asked(home, stop, reach_expert):
    world = open_fake_world("Reach", "nominal")
    config = DeployConfig(episode_steps=STEPS, check_camera_lock=False, stop_at_success=stop)
    summary = run_session(world, None, SPOTS, home / "run", config, policy=reach_expert(world))
    results = summary["results"]
    assert all(r["success"] for r in results), results
    for result in results:
        assert 0 < result["success_step"] < STEPS
        assert result["steps"] == (result["success_step"] if stop else STEPS)


def test_a_matched_evaluation_on_a_fake_arm_stops_at_success(home, monkeypatch, reach_expert):
    world = open_fake_world("Reach", "nominal")
    expert = reach_expert(world)
    monkeypatch.setattr(deploy, "load_runtime_policy", lambda folder: expert)
    monkeypatch.setattr(matched, "load_runtime_policy", lambda folder: expert)
    layout = Layout("two", tuple(SPOTS))
    summary = matched.evaluate(
        "expert",
        "fake",
        layout,
        2,
        open_world=lambda task: world,
        deploy_config=DeployConfig(episode_steps=STEPS, check_camera_lock=False),
    )
    episodes = summary["episodes"]
    assert [e["success"] for e in episodes] == [True, True]
    assert all(e["steps"] == e["success_step"] < STEPS for e in episodes), episodes
