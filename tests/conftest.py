"""Shared test setup: offscreen rendering and single-threaded torch, as the CLI uses."""

import os

import pytest

from realgap.runtime import configure_rendering, configure_torch_threads

configure_rendering()
configure_torch_threads()

MAX_WORKERS = 4
"""``pytest -n auto`` (the README's test command) runs one worker per core up to this:
each worker holds its own torch and MuJoCo (about 0.5 GB), and the suite's longest
files, not the core count, bound its time beyond a few workers."""


# optionalhook: the LeRobot venv (tools/test-lerobot.sh) has no pytest-xdist, and pytest
# refuses an unknown hook at collection (CI failed on exactly that).
@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))
