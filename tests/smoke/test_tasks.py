"""Every registered task: reset, random steps, shapes, finite values, determinism, bad input."""

import gymnasium as gym
import numpy as np
import pytest

from realgap.sim.batched_env import BatchedEnv
from realgap.sim.gym_env import register_envs
from realgap.sim.randomization import DomainRandomization
from realgap.sim.tasks import TASKS, make_task

ENVS = 3


def rollout(task, seed, steps=12):
    env = BatchedEnv(task, ENVS, randomization=DomainRandomization(), privileged=True, seed=seed)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    trace = [obs]
    for _ in range(steps):
        obs, reward, _terminated, _truncated, _info = env.step(rng.uniform(-1, 1, (ENVS, 6)))
        trace.append({**obs, "reward": reward})
    env.close()
    return trace


@pytest.mark.parametrize("task", sorted(TASKS))
def test_reset_and_random_steps(task):
    trace = rollout(task, seed=0)
    first = trace[0]
    size = make_task(task).config.image_size
    assert first["image"].shape == (ENVS, size, size, 3) and first["image"].dtype == np.uint8
    assert first["state"].shape == (ENVS, 12) and first["state"].dtype == np.float32
    assert first["privileged"].shape == (ENVS, 17)
    for obs in trace:
        assert np.all(np.isfinite(obs["state"])) and np.all(np.isfinite(obs["privileged"]))
    rewards = np.array([obs["reward"] for obs in trace[1:]])
    assert np.all(np.isfinite(rewards)) and rewards.shape == (12, ENVS)
    # The camera sees something: the jaws are yellow, the background black.
    assert first["image"].max() > 60


@pytest.mark.parametrize("task", sorted(TASKS))
def test_seeded_determinism(task):
    a, b, c = rollout(task, 1, 6), rollout(task, 1, 6), rollout(task, 2, 6)
    for x, y in zip(a, b):
        assert np.array_equal(x["state"], y["state"]) and np.array_equal(x["image"], y["image"])
    assert not np.array_equal(a[-1]["state"], c[-1]["state"])


@pytest.mark.parametrize("task", sorted(TASKS))
def test_nan_action_is_rejected_clearly(task):
    env = BatchedEnv(task, 2, render=False)
    env.reset(seed=0)
    action = np.zeros((2, 6))
    action[1, 3] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf \(envs \[1\]\)"):
        env.step(action)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros((2, 5)))


def test_actions_move_targets_by_the_scale_and_clip_at_limits():
    env = BatchedEnv("Reach", 1, render=False)
    obs, _ = env.reset(seed=0)
    before = obs["state"][0, 6:].copy()
    obs, *_ = env.step(np.array([[1, -1, 0.5, 0, 0, 1.0]]))
    delta = obs["state"][0, 6:] - before
    assert delta == pytest.approx([0.1, -0.1, 0.05, 0, 0, 0.2], abs=1e-6)
    for _ in range(40):
        obs, *_ = env.step(np.array([[1, 0, 0, 0, 0, 0.0]]))
    assert obs["state"][0, 6] == pytest.approx(1.9198621771937634, abs=1e-6)


def test_privileged_state_only_behind_the_flag():
    env = BatchedEnv("PickCube", 1, render=False)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"state"}


def test_episode_limit_and_auto_reset():
    env = BatchedEnv(
        "Reach", 2, render=False, config=make_task("Reach").config_type(episode_steps=5)
    )
    env.reset(seed=0)
    for _step in range(5):
        _, _, _terminated, truncated, info = env.step(np.zeros((2, 6)))
    assert truncated.all() and info["episode"]["length"].tolist() == [5, 5]
    assert env.steps.tolist() == [0, 0]


def test_unknown_task_lists_known_ones():
    with pytest.raises(ValueError, match="known tasks"):
        make_task("Stack")


@pytest.mark.parametrize("env_id", register_envs())
def test_gymnasium_env(env_id):
    from gymnasium.utils.env_checker import check_env

    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    env.close()


def test_diverged_simulation_is_caught_and_reset():
    env = BatchedEnv("PickCube", 2, render=False)
    env.reset(seed=0)
    qvel = env.qvel.copy()
    qvel[0, 6:9] = 1e12  # the cube's free joint: MuJoCo will reset this sim
    env.qvel[:] = qvel
    _, _, terminated, _, info = env.step(np.zeros((2, 6)))
    assert info["unstable"].tolist() == [True, False]
    assert terminated[0] and not info["success"][0]


def test_randomized_cube_mass_reaches_the_solver_constants():
    from dataclasses import replace

    randomization = replace(DomainRandomization.none(), cube_mass_scale=(2.0, 2.0))
    env = BatchedEnv("PickCube", 2, render=False, randomization=randomization)
    env.reset(seed=0)
    model = env.batch.get_model(1)
    cube = model.body("cube").id
    nominal = env.twin_model.nominal["body_mass"][cube]
    assert model.body_mass[cube] == pytest.approx(2 * nominal)
    # set_const must have refreshed the derived constants, or light cubes blow up.
    assert model.body_subtreemass[cube] == pytest.approx(2 * nominal)


def test_latency_delays_the_servo_target_by_whole_steps():
    from dataclasses import replace

    randomization = replace(DomainRandomization.none(), latency_steps=(3, 3))
    env = BatchedEnv("Reach", 1, render=False, randomization=randomization)
    env.reset(seed=0)
    start = env.target.copy()
    for step in range(4):
        env.step(np.array([[1.0, 0, 0, 0, 0, 0]]))
        applied = env.sim_state().target[0, 0]
        expected = start[0, 0] + 0.1 * max(0, step + 1 - 3)
        assert applied == pytest.approx(expected), step


def test_a_renderer_dropped_after_a_newer_one_leaves_the_newer_one_drawing():
    # ``env = BatchedEnv(...)`` in a loop frees the old env once the new one exists; its
    # render context, freed under the new one's GL context, took the new one's textures
    # and buffers with it, and every image after that was black.
    import gc

    def first_image(env):
        obs, _ = env.reset(seed=0)
        return obs["image"].copy()

    older = BatchedEnv("Reach", 2, seed=0)
    expected = first_image(older)
    newer = BatchedEnv("Reach", 2, seed=0)
    del older
    gc.collect()
    assert expected.max() > 60  # the yellow jaws, not a black frame
    np.testing.assert_array_equal(first_image(newer), expected)
    newer.close()
