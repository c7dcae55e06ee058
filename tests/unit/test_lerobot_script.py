"""tools/test-lerobot.sh refuses up front when the disk cannot hold LeRobot's venv."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "test-lerobot.sh"


def _fake_checkout(tmp_path: Path, free_kib: int) -> tuple[Path, dict[str, str]]:
    """A folder holding only the script, and a PATH whose df reports ``free_kib`` free."""
    (tmp_path / "tools").mkdir()
    shutil.copy(SCRIPT, tmp_path / "tools" / SCRIPT.name)
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    df = bin_dir / "df"
    df.write_text(
        "#!/bin/sh\n"
        "echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n"
        f"echo '/dev/x 100000000 1 {free_kib} 1% /'\n"
    )
    # Stands in for Python >= 3.12: the version check only asks for exit code 0.
    python = bin_dir / "python3.12"
    python.write_text("#!/bin/sh\nexit 0\n")
    for exe in (df, python):
        exe.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    env["REALGAP_LEROBOT_PYTHON"] = str(python)
    env.pop("REALGAP_SKIP_LEROBOT_TESTS", None)
    return tmp_path, env


def test_a_disk_too_small_for_lerobots_venv_stops_before_installing(tmp_path):
    root, env = _fake_checkout(tmp_path, free_kib=3 * 1024 * 1024)
    result = subprocess.run(
        ["bash", str(root / "tools" / SCRIPT.name)], env=env, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "needs about 9 GB free" in result.stderr
    assert "3 GB is free" in result.stderr
    assert not (root / ".venv-lerobot").exists()
