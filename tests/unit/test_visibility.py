"""Which spots the wrist camera sees from the start pose, and an evaluation that says so."""

import json

from realgap.bridge.worlds import Spot
from realgap.cli import main
from realgap.eval.layout import load_layout
from realgap.eval.visibility import seen_at_start, unseen_at_start
from realgap.policy.checkpoint import save_policy
from realgap.policy.contract import PolicyContract
from realgap.policy.networks import VisualPolicy
from realgap.sim import robot
from realgap.sim.tasks import make_task
from realgap.sim.twin import CameraParams, TwinParams

UNDER_THE_JAWS = Spot("under the jaws", robot.START_PINCH_ARM[:2])
BEHIND = Spot("behind the base", (-0.15, 0.0))
WIDE_RIGHT = Spot("wide right", (0.18, -0.16))


def test_the_start_pose_sees_under_its_jaws_and_not_behind_or_wide():
    for task in ("PickCube", "PickCan"):
        seen = seen_at_start(task, [UNDER_THE_JAWS, BEHIND, WIDE_RIGHT])
        assert seen.tolist() == [True, False, False], task


def test_the_shipped_layout_has_spots_the_start_pose_cannot_see():
    # The wrist camera sits right of the jaws and looks down and ahead: the layout's
    # right column is out of its 75-degree view at the start pose, its centre is not.
    layout = load_layout(None).for_task("PickCube")
    unseen = unseen_at_start("PickCube", layout.spots)
    assert {"near-right", "mid-right", "far-right"} <= set(unseen)
    assert "centre" not in unseen and "near-left" not in unseen
    assert unseen == [spot.name for spot in layout.spots if spot.name in unseen]  # layout order


def test_the_twins_camera_decides():
    # The mount error lives in the twin's renderer, not the physics model's camera: a
    # camera turned by 25 degrees sees the right edge, or loses the centre.
    spots = [Spot("centre", (0.20, 0.0)), Spot("right", (0.20, -0.10))]
    assert seen_at_start("PickCube", spots).tolist() == [True, False]
    turned = TwinParams(camera=CameraParams(rotation_deg=(25.0, 0.0, 0.0)))
    assert seen_at_start("PickCube", spots, turned).tolist() == [True, True]
    turned = TwinParams(camera=CameraParams(rotation_deg=(0.0, -25.0, 0.0)))
    assert seen_at_start("PickCube", spots, turned).tolist() == [False, False]


def test_the_reaching_tasks_start_where_they_see_the_whole_square():
    # From ``start`` a reaching policy met an empty desk at the right column; from
    # ``survey`` every spot inside the training square is in view, cube and can alike.
    for task in ("Reach", "ReachCan"):
        assert make_task(task).config.start_pose == tuple(robot.KEYFRAMES["survey"])
        layout = load_layout(None).for_task(task)
        inside = [spot for spot in layout.spots if spot.in_distribution]
        assert seen_at_start(task, inside).all(), task
        # The same spots from ``start``, as a policy saved before the record starts.
        start = robot.KEYFRAMES["start"]
        assert not seen_at_start(task, inside, start_pose=start).all(), task


def test_an_evaluation_names_and_marks_the_unseen_spots(tmp_path, capsys):
    # A contract without a start pose (saved before realgap recorded it) starts at
    # ``start``, as its policy was trained: there the right column is out of view.
    config = make_task("Reach").config
    contract = PolicyContract("Reach", config.image_size, config.control_hz, config.action_scale)
    assert contract.start_pose is None
    folder = save_policy(tmp_path / "policy", VisualPolicy(), contract)
    out = tmp_path / "eval"
    assert main(["eval", str(folder), "--world", "sim", "--trials", "13", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "eval_sim.json").read_text())
    assert "far-right" in summary["unseen_at_start"]
    assert "far-right *" in printed and "not in the wrist camera's view" in printed
    assert "centre *" not in printed


def test_diagnose_coverage_looks_from_the_tasks_start_pose():
    from realgap.diagnose.workspace import coverage

    layout = load_layout(None)
    for task, hidden in (("Reach", set()), ("PickCube", {"near-right", "mid-right", "far-right"})):
        rows = coverage(layout, task)
        unseen = {
            r["spot"] for r in rows if r["in_training_square"] and not r["visible_from_start_pose"]
        }
        assert unseen == hidden, task
