"""Domain randomization is pure, seeded, and changes only what it names."""

import tomllib
from dataclasses import fields, replace
from importlib import resources

import numpy as np
import pytest

from realgap.sim.draws import sample_episode, sample_step
from realgap.sim.randomization import DomainRandomization
from realgap.sim.twin import TwinParams


def rng(seed):
    return np.random.default_rng(seed)


def draw(config, seed=0, n=5):
    return sample_episode(config, np.random.default_rng(seed), n)


def as_dict(params):
    return {f.name: getattr(params, f.name) for f in fields(params) if f.name != "extra"}


def test_same_seed_same_draws_other_seed_other_draws():
    a, b, c = (
        draw(DomainRandomization()),
        draw(DomainRandomization()),
        draw(DomainRandomization(), 1),
    )
    for key, value in as_dict(a).items():
        assert np.array_equal(value, as_dict(b)[key]), key
    assert not np.allclose(a.cube_friction, c.cube_friction)
    step_a = sample_step(draw(DomainRandomization(), n=4), DomainRandomization(), rng(3))
    step_b = sample_step(draw(DomainRandomization(), n=4), DomainRandomization(), rng(3))
    assert np.array_equal(step_a.camera_rot, step_b.camera_rot)


def test_none_is_nominal():
    params = as_dict(draw(DomainRandomization.none()))
    twin = TwinParams()
    nominal = {
        "cube_mass_scale": 1,
        "cube_size_scale": 1,
        "cube_friction": 1,
        "finger_friction": 1,
        "kp_scale": 1,
        "damping_scale": 1,
        "frictionloss_scale": 1,
        "gamma": 1,
        "black_level": 0,
        "torque_scale": 1,
        "latency_steps": 0,
        "control_hz": 10,
        "camera_fov_delta": 0,
        "light_scale": 1,
        "exposure_scale": 1,
        "brightness": 0,
        "contrast": 1,
        "saturation": 1,
        "hue": 0,
    }
    for key, value in nominal.items():
        assert np.all(params[key] == value), key
    assert np.all(params["joint_offset"] == 0) and np.all(params["background_rgb"] == 0)
    assert np.all(params["cube_rgb"] == np.float32(twin.cube.color_rgb))  # as the model stores it
    noise = sample_step(draw(DomainRandomization.none(), n=3), DomainRandomization.none(), rng(0))
    assert np.all(noise.joint_noise == 0) and np.all(noise.camera_pos == 0)


@pytest.mark.parametrize(
    ("field", "value", "changed"),
    [
        ("cube_friction_scale", (0.5, 1.5), "cube_friction"),
        ("kp_scale", (0.5, 1.0), "kp_scale"),
        ("joint_offset_deg", 2.0, "joint_offset"),
        ("latency_steps", (0, 2), "latency_steps"),
        ("hue", 0.05, "hue"),
        ("background_value", (0.1, 0.4), "background_rgb"),
    ],
)
def test_only_the_intended_field_changes(field, value, changed):
    base = as_dict(draw(DomainRandomization.none()))
    widened = as_dict(draw(replace(DomainRandomization.none(), **{field: value})))
    for key in base:
        same = np.array_equal(base[key], widened[key])
        assert same == (key != changed), key


def test_toml_round_trip_and_clear_errors(tmp_path):
    shipped = resources.files("realgap.sim") / "configs" / "randomization_default.toml"
    assert DomainRandomization.from_toml(str(shipped)) == DomainRandomization()
    # The shipped file shows every width a user can set, so a new one is not hidden.
    named = set(tomllib.loads(shipped.read_text())["randomization"])
    assert named == {field.name for field in fields(DomainRandomization)} - {"centre"}
    bad = tmp_path / "bad.toml"
    bad.write_text("[randomization]\ncube_fricton_scale = [0.5, 1.0]\n")
    with pytest.raises(ValueError, match="cube_fricton_scale"):
        DomainRandomization.from_toml(bad)
    with pytest.raises(ValueError, match="kp_scale"):
        DomainRandomization(kp_scale=(1.2, 0.8))
    with pytest.raises(ValueError, match="joint_noise_deg"):
        DomainRandomization(joint_noise_deg=-1)
