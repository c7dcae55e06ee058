"""Shared test setup: offscreen rendering and single-threaded torch, as the CLI uses."""

import os

import pytest

from realgap.diagnose.servos import FITTED
from realgap.imitate.demos import expert_operator
from realgap.policy.contract import PolicyContract
from realgap.runtime import configure_rendering, configure_torch_threads
from realgap.sim.tasks import make_task

configure_rendering()
configure_torch_threads()

MAX_WORKERS = 4
"""``pytest -n auto`` (the README's test command) runs one worker per core up to this:
each worker holds its own torch and MuJoCo (about 0.5 GB), and the suite's longest
files, not the core count, bound its time beyond a few workers."""


@pytest.fixture(autouse=True, scope="session")
def _own_realgap_home(tmp_path_factory):
    """Camera locks and other state in a folder of the test run's own, never the
    developer's ``~/.cache/realgap``: a test that expects no lock failed once a
    developer had locked that fake camera with ``realgap camera lock``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REALGAP_HOME", str(tmp_path_factory.mktemp("realgap_home")))
        yield


# optionalhook: the LeRobot venv (tools/test-lerobot.sh) has no pytest-xdist, and pytest
# refuses an unknown hook at collection (CI failed on exactly that).
@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


def _diagnosis(lens_k1=-0.068, lens_sigma=0.004, warnings=()):
    """The parts of a diagnosis ``calibration_from`` reads (the lens and warnings as given)."""
    servos = {key: 1.0 for key in FITTED} | {f"{key}_sigma": 0.05 for key in FITTED}
    return {
        "world": "fake",
        "hand_eye": {
            "warnings": list(warnings),
            "offsets_deg": [0.5, -0.2, 0.1, 0.3, 0.0, 0.0],
            "offsets_sigma_deg": [0.1] * 6,
            "mount_offset_m": [0.001, 0.0, -0.001],
            "mount_offset_sigma_m": [0.0002] * 3,
            "mount_rotation_deg": [0.5, -0.5, 0.2],
            "mount_rotation_sigma_deg": [0.1] * 3,
            "fov_delta_deg": 0.3,
            "fov_delta_sigma_deg": 0.2,
            "lens_k1": lens_k1,
            "lens_k1_sigma": lens_sigma,
        },
        "servos": servos | {"latency_steps": 1},
        "camera": {
            "exposure_gain_needed": 1.1,
            "gamma": 1.0,
            "black_level": 0.02,
            "background_rgb": None,
            "desk_texture": None,
            "warnings": [],
        },
    }


def _reach_expert(world):
    """The scripted expert as the operator's policy on ``world`` (a fake arm), with the
    target-predicting contract ``run_session(..., policy=)`` takes."""
    config = make_task("Reach").config
    contract = PolicyContract(
        task="Reach",
        image_size=config.image_size,
        control_hz=config.control_hz,
        action_scale=tuple(config.action_scale),
        action_mode="absolute",
    )
    return expert_operator(world, "Reach"), contract


@pytest.fixture
def reach_expert():
    """``reach_expert(world)``: the scripted Reach expert and its contract, for sessions
    on a fake arm that should succeed."""
    return _reach_expert


@pytest.fixture
def diagnosis():
    """Builds a diagnosis as ``realgap.diagnose.run.calibration_from`` reads it."""
    return _diagnosis
