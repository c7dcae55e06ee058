"""Tiny end-to-end runs of the simulator commands."""

import json

from realgap.cli import main


def test_bench_sim_json(tmp_path):
    out = tmp_path / "bench.json"
    assert main(["bench", "sim", "--envs", "2", "--steps", "3", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result) == {"task", "envs", "res", "steps_per_s_image", "steps_per_s_state"}
    assert result["steps_per_s_image"] > 0 and result["steps_per_s_state"] > 0


def test_view_writes_png(tmp_path):
    out = tmp_path / "frames.png"
    assert main(["view", "Reach", "--episodes", "2", "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_bad_task_is_a_clean_error(capsys):
    assert main(["view", "Stack", "--out", "x.png"]) == 2
    assert "known tasks" in capsys.readouterr().err


def test_view_of_a_profile_shows_its_camera_beside_the_twin(tmp_path):
    from PIL import Image

    out = tmp_path / "view.png"
    assert main(["view", "Reach", "--profile", "wood_desk_lamp", "--out", str(out)]) == 0
    image = Image.open(out)
    assert image.size[0] > 800 and image.size[1] > 500  # four columns, three poses
