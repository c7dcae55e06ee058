"""Matched-evaluation arithmetic and layouts."""

import numpy as np
import pytest

from realgap.eval.layout import load_layout
from realgap.eval.matched import summarize
from realgap.eval.stats import difference, rate, wilson
from realgap.sim import robot


def test_wilson_matches_known_values():
    # 8/10: the textbook Wilson 95% interval is [0.490, 0.943].
    low, high = wilson(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-3) and high == pytest.approx(0.9433, abs=1e-3)
    assert wilson(0, 10)[0] == pytest.approx(0.0, abs=1e-12)
    assert wilson(10, 10)[1] == pytest.approx(1.0)
    assert wilson(0, 0) == (0.0, 1.0)


def test_gap_interval_is_newcombe():
    # Newcombe (1998) example 1: 56/70 vs 48/80 -> difference 0.2, CI [0.0524, 0.3339].
    gap = difference(rate(56, 70), rate(48, 80))
    assert gap["gap"] == pytest.approx(0.2)
    assert gap["ci95"][0] == pytest.approx(0.0524, abs=2e-3)
    assert gap["ci95"][1] == pytest.approx(0.3339, abs=2e-3)


def test_default_layout_has_nine_spots_inside_and_some_outside():
    layout = load_layout().for_task("PlaceCube")
    inside = [s for s in layout.spots if s.in_distribution]
    assert len(inside) == 9 and len(layout.spots) - len(inside) >= 3
    assert all(s.target_xy is not None for s in layout.spots)
    split = layout.trials_per_spot(27)
    assert sum(split) == 27 and max(split) - min(split) == 1
    with pytest.raises(ValueError, match="fewer than"):
        layout.trials_per_spot(5)


def test_sim_frame_layout_is_converted_explicitly(tmp_path):
    path = tmp_path / "desk.toml"
    path.write_text('frame = "sim"\n[[spot]]\nname = "a"\ncube = [0.2388353, 0.0]\n')
    spot = load_layout(path).spots[0]
    assert np.allclose(spot.cube_xy, [0.2, 0.0])  # 3.9 cm: sim origin -> rotation axis
    assert np.allclose(robot.arm_to_sim(spot.cube_xy), [0.2388353, 0.0])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[spot]]\ncube = [200, 0]\n", "metres"),
        ("[[spot]]\ncube = [0.2]\n", "cube"),
        ('frame = "base"\n[[spot]]\ncube = [0.2, 0]\n', "frame"),
        ('[[spot]]\ncube = [0.2, 0]\ncolour = "red"\n', "colour"),
        ('name = "empty"\n', "at least one"),
    ],
)
def test_bad_layouts_say_what_is_wrong(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_layout(path)


def test_out_of_distribution_spots_are_not_averaged_in():
    layout = load_layout().for_task("Reach")
    episodes = []
    for index, spot in enumerate(layout.spots):
        for _ in range(2):
            episodes.append(
                {
                    "spot_index": index,
                    "success": spot.in_distribution,
                    "success_step": 10 if spot.in_distribution else None,
                    "reason": None if spot.in_distribution else "never saw the cube",
                }
            )
    result = summarize(episodes, layout, "sim", "Reach", "policy")
    assert result["overall"]["success_rate"] == 1.0 and result["overall"]["trials"] == 18
    assert result["out_of_distribution"]["success_rate"] == 0.0
    assert result["out_of_distribution"]["failures"] == {"never saw the cube": 8}
