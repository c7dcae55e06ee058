"""`realgap adapt --quick` end to end on a fake arm: record, calibrate, retrain (warm
start), matched before/after evaluation, report section; and its refusals."""

import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from realgap.adapt.config import AdaptConfig
from realgap.adapt.decide import physics_changed
from realgap.adapt.retrain import retrain_args
from realgap.bridge.profile import load_profile, shipped_profiles
from realgap.cli import main
from realgap.policy.checkpoint import load_policy, save_policy
from realgap.policy.contract import PolicyContract
from realgap.policy.networks import VisualPolicy
from realgap.runs import RunFolder
from realgap.sim.calibration import Calibration
from realgap.train import distill

BACK_EDGE = [-0.0388353, 0.0]
CONTRACT = PolicyContract(
    task="Reach", image_size=16, control_hz=10.0, action_scale=(0.1, 0.1, 0.1, 0.1, 0.1, 0.2)
)


@pytest.fixture(scope="module")
def adapted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("adapt")
    torch.manual_seed(0)
    policy = save_policy(folder / "run" / "policy", VisualPolicy(), CONTRACT)
    out = folder / "adapted"
    # typical_so101 with an operator who measures from the base's back edge, on a
    # wood-grain desk lit by a lamp: a room its twin cannot draw until adapt learns it.
    typical = shipped_profiles()["typical_so101"].read_text()
    profile = folder / "typical_back_edge.toml"
    typical = typical.replace('name = "typical_so101"', 'name = "typical_back_edge"')
    typical = typical.replace("offset_xy_m = [0.0, 0.0]", f"offset_xy_m = {BACK_EDGE}")
    room = (
        '\n[desk]\ntexture = "wood"\nrgb = [0.5, 0.38, 0.24]\ncontrast = 0.35\n'
        "\n[lights]\nextra = [{pos_m = [0.1, 0.3, 0.45], intensity = 0.3}]\n"
    )
    profile.write_text(typical + room)
    assert load_profile(profile).twin.placement.offset_xy_m == tuple(BACK_EDGE)
    argv = ["adapt", str(policy), "--world", "fake", "--profile", str(profile)]
    with pytest.MonkeyPatch.context() as patch:
        overlaps = _watch_overlaps(patch)
        assert main([*argv, "--out", str(out), "--quick"]) == 0
    # The calibration fit ran while the arm ran the old policy, and the twin predicted
    # while the arm ran the adapted one.
    assert overlaps == {"calibration fit": True, "twin": True}
    return policy, out


def _watch_overlaps(patch) -> dict:
    """Whether the fit started while the arm's "before" evaluation ran, and the twin's
    prediction while its "after" one did. Each arm evaluation waits (up to a minute) at
    its end for its companion to look, so the answer does not depend on timing; run one
    after the other, the companion finds the arm's evaluation finished."""
    from realgap.adapt import run as adapt_run

    found: dict = {}
    started = {name: threading.Event() for name in ("before", "after")}
    ended = {name: threading.Event() for name in ("before", "after")}
    looked = {name: threading.Event() for name in ("before", "after")}
    companion = {"before": "calibration fit", "after": "twin"}

    def look(arm_step: str) -> None:
        started[arm_step].wait(timeout=60)
        found[companion[arm_step]] = started[arm_step].is_set() and not ended[arm_step].is_set()
        looked[arm_step].set()

    real_evaluate, real_fit = adapt_run.evaluate, adapt_run.diagnose_recording

    def evaluate(policy, world, *args, out=None, **kwargs):
        step = Path(out).name if out is not None else ""
        if world != "sim" and step in started:
            started[step].set()
            try:
                return real_evaluate(policy, world, *args, out=out, **kwargs)
            finally:
                looked[step].wait(timeout=60)
                ended[step].set()
        if step == "twin":
            look("after")
        return real_evaluate(policy, world, *args, out=out, **kwargs)

    def fit(*args, **kwargs):
        look("before")
        return real_fit(*args, **kwargs)

    patch.setattr(adapt_run, "evaluate", evaluate)
    patch.setattr(adapt_run, "diagnose_recording", fit)
    return found


def test_adapt_writes_calibration_policy_before_after_and_report(adapted):
    policy, out = adapted
    summary = json.loads((out / "adapt.json").read_text())
    assert summary["before"]["trials"] == summary["after"]["trials"] > 0
    assert summary["world"].startswith("fake:typical_back_edge")
    # The operator's offset was found, and the arm's twin places objects where they land.
    assert summary["placement_check"]["flagged"] is True
    assert "placement.offset_xy_m" in summary["physics_changed"]
    low, high = summary["gain"]["ci95"]
    assert low <= summary["gain"]["gap"] <= high
    # The arm was measured and the twin trained in was built from it.
    calibration = Calibration.load(out / "calibration.json")
    assert "camera.offset_m" in calibration.uncertainty
    # The desk, learned from the recording, is what the arm's twin trained on.
    desk = calibration.values["camera.background_texture"]
    assert Path(desk).is_file() and Path(desk).parent == out / "calibration"
    assert calibration.values["servo.latency_steps"] == 1
    seen = Calibration.load(out / "training_calibration.json")
    assert seen.values["joints.zero_offset_deg"] == [0.0] * 6
    for measured in (calibration, seen):
        offset = measured.values["placement.offset_xy_m"]
        assert abs(offset[0] - BACK_EDGE[0]) < 0.006 and abs(offset[1]) < 0.006
    config = json.loads((out / "train" / "config.json").read_text())
    assert config["init_student"] == str(policy) and config["twin"].endswith(".json")
    # One speed for the arm, the twin's prediction and the retraining: the reference's
    # 15 Hz x 0.15 for a policy whose contract records no speeds.
    assert summary["speed"] == {"control_hz": 15.0, "action_fraction": 0.15}
    assert config["eval_speed"] == [15.0, 0.15]
    twin = json.loads((out / "twin" / "eval_sim_calibrated.json").read_text())
    assert twin["speed"] == summary["speed"]
    # 50 steps' travel at 0.15; an episode that succeeded was recorded up to its success.
    for episode in twin["episodes"]:
        assert episode["steps"] == (episode["success_step"] if episode["success"] else 334)
    after = json.loads((out / "train" / "policy" / "contract.json").read_text())
    assert after["speeds"]["action_fraction"] == [0.15, 0.15]
    # A warm start, not a fresh network: the adapted weights moved from the old ones.
    new, _ = load_policy(out / "train" / "policy")
    old, _ = load_policy(policy)
    assert any(
        not torch.equal(a, b) for a, b in zip(new.state_dict().values(), old.state_dict().values())
    )
    assert (out / "before" / "eval_fake_typical_back_edge.json").exists()
    assert (out / "after" / "eval_fake_typical_back_edge_calibrated.json").exists()
    page = (out / "report.html").read_text()
    assert "Closing the gap" in page and "Newcombe" in page
    # The arm rows' gaps are to the twin (the adapted policy's "sim (calibrated)")...
    from realgap.report.html import gap_rows, load_evaluations

    rows = {row["world"]: row for row in gap_rows(load_evaluations(out))}
    after = next(
        row for name, row in rows.items() if name.endswith("(calibrated)") and "fake" in name
    )
    assert after["gap"] is not None
    # ... and the operator's offset, built into the twin, is said once and not in red.
    check = json.loads((out / "after" / "eval_fake_typical_back_edge_calibrated.json").read_text())[
        "placement_check"
    ]
    assert check["known_offset_cm"][0] < -3 and not check["flagged"]
    assert page.count("was measured and built into the arm") == 1
    assert 'class="bad">fake:typical_back_edge (calibrated): placement' not in page


def test_adapt_refuses_an_earlier_run_and_a_sim_world(adapted, capsys):
    policy, out = adapted
    assert main(["adapt", str(policy), "--world", "fake", "--out", str(out), "--quick"]) == 2
    assert "earlier run" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: adapt measures an arm
        main(["adapt", str(policy), "--world", "sim", "--out", str(out / "x")])


def test_physics_changed_names_only_differences_beyond_their_uncertainty():
    calibration = Calibration()
    calibration.measure("servo.kp_scale", 0.95, 0.05)  # within 2 sigma of nominal 1.0
    calibration.measure("servo.latency_steps", 2, 0.0)
    calibration.measure("camera.exposure_scale", 1.5)  # a camera change: not physics
    assert physics_changed(calibration) == ["servo.latency_steps"]
    # Where objects land changes the teacher's world too; judged axis by axis.
    calibration.measure("placement.offset_xy_m", [0.001, 0.0], [0.001, 0.001])
    assert physics_changed(calibration) == ["servo.latency_steps"]
    calibration.measure("placement.offset_xy_m", [-0.036, 0.001], [0.001, 0.001])
    assert physics_changed(calibration) == ["servo.latency_steps", "placement.offset_xy_m"]


def test_adapt_refuses_a_bad_rig_file_before_the_arm_moves(tmp_path, capsys):
    policy = save_policy(tmp_path / "policy", VisualPolicy(), CONTRACT)
    rig = tmp_path / "rig.toml"
    rig.write_text("[servo]\nkp_scale = 0.5\n")
    out = tmp_path / "adapted"
    argv = ["adapt", str(policy), "--world", "fake", "--rig", str(rig), "--out", str(out)]
    assert main(argv) == 2
    assert "come from the calibration recording" in capsys.readouterr().err
    assert not (out / "recording.npz").exists()


def test_retraining_is_ended_by_the_budget_not_the_task_round_count(tmp_path):
    """PickCube trains from scratch in 16 DAgger rounds (about 2 minutes); adapt's budget
    (10 minutes) must be what ends retraining, or most of it goes unused."""
    config = AdaptConfig(policy=tmp_path / "policy", out=tmp_path / "adapted")
    run = RunFolder(config.out)
    args = retrain_args(config, "PickCube", run, [])
    assert args.dagger_rounds >= 1000 and args.time_budget_s == 600.0
    assert not args.final_evaluation  # step 5 evaluates the adapted policy in the twin
    quick = retrain_args(replace(config, quick=True), "PickCube", run, [])
    assert quick.dagger_rounds == distill.QUICK["dagger_rounds"]


@pytest.mark.slow
def test_an_interrupted_adapt_resumes_from_its_last_finished_step(tmp_path, monkeypatch):
    from realgap.adapt import run as adapt_run

    monkeypatch.setenv("REALGAP_HOME", str(tmp_path / "home"))
    torch.manual_seed(0)
    policy = save_policy(tmp_path / "policy", VisualPolicy(), CONTRACT)
    out = tmp_path / "adapted"
    argv = ["adapt", str(policy), "--world", "fake", "--out", str(out), "--quick"]
    real_main = adapt_run.distill.main

    def interrupted(args):
        raise KeyboardInterrupt  # Ctrl-C during the retraining

    monkeypatch.setattr(adapt_run.distill, "main", interrupted)
    assert main(argv) == 130
    progress = json.loads((out / "adapt_progress.json").read_text())
    assert progress["done"] == ["record", "calibrate", "before"]
    kept = {name: (out / name).stat().st_mtime_ns for name in ("recording.npz", "calibration")}
    monkeypatch.setattr(adapt_run.distill, "main", real_main)
    assert main([*argv, "--resume"]) == 0
    assert {name: (out / name).stat().st_mtime_ns for name in kept} == kept  # not redone
    summary = json.loads((out / "adapt.json").read_text())
    assert set(summary["seconds"]) >= {"record", "calibrate", "before", "retrain", "after", "twin"}


@pytest.mark.slow
def test_a_ctrl_c_during_the_old_policys_evaluation_keeps_the_calibration_fit(
    tmp_path, monkeypatch
):
    """The fit runs beside the arm's first evaluation: stopping the arm must not lose it."""
    from realgap.adapt import run as adapt_run

    monkeypatch.setenv("REALGAP_HOME", str(tmp_path / "home"))
    torch.manual_seed(0)
    policy = save_policy(tmp_path / "policy", VisualPolicy(), CONTRACT)
    out = tmp_path / "adapted"

    def stopped(policy, world, *args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C while the old policy runs on the arm

    monkeypatch.setattr(adapt_run, "evaluate", stopped)
    argv = ["adapt", str(policy), "--world", "fake", "--out", str(out), "--quick"]
    assert main(argv) == 130
    progress = json.loads((out / "adapt_progress.json").read_text())
    assert progress["done"] == ["record", "calibrate"]
    assert progress["seconds"]["calibrate"] > 0
    assert (out / "calibration" / "calibration.json").is_file()
