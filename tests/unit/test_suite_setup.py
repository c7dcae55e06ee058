"""The suite's own setup runs where pytest-xdist is absent (the LeRobot venv)."""

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_the_shared_conftest_loads_without_pytest_xdist():
    # tools/test-lerobot.sh runs tests/real in a venv without xdist; an xdist hook
    # in tests/conftest.py not marked optional made pytest refuse the whole run.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            "--collect-only",
            "-q",
            str(TESTS / "unit" / "test_bridge_units.py"),
        ],
        capture_output=True,
        text=True,
        cwd=TESTS.parent,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "unknown hook" not in result.stdout + result.stderr
