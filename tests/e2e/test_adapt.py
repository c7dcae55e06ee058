"""`realgap adapt --quick` end to end on a fake arm: record, calibrate, retrain (warm
start), matched before/after evaluation, report section; and its refusals."""

import json

import pytest
import torch

from realgap.adapt.run import physics_changed
from realgap.cli import main
from realgap.policy.checkpoint import load_policy, save_policy
from realgap.policy.contract import PolicyContract
from realgap.policy.networks import VisualPolicy
from realgap.sim.calibration import Calibration

CONTRACT = PolicyContract(
    task="Reach", image_size=16, control_hz=10.0, action_scale=(0.1, 0.1, 0.1, 0.1, 0.1, 0.2)
)


@pytest.fixture(scope="module")
def adapted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("adapt")
    torch.manual_seed(0)
    policy = save_policy(folder / "run" / "policy", VisualPolicy(), CONTRACT)
    out = folder / "adapted"
    argv = ["adapt", str(policy), "--world", "fake", "--profile", "typical_so101"]
    assert main([*argv, "--out", str(out), "--quick"]) == 0
    return policy, out


def test_adapt_writes_calibration_policy_before_after_and_report(adapted):
    policy, out = adapted
    summary = json.loads((out / "adapt.json").read_text())
    assert summary["before"]["trials"] == summary["after"]["trials"] > 0
    assert summary["world"].startswith("fake:typical_so101")
    assert summary["placement_check"]["flagged"] is False  # its operator measures from the axis
    low, high = summary["gain"]["ci95"]
    assert low <= summary["gain"]["gap"] <= high
    # The arm was measured and the twin trained in was built from it.
    calibration = Calibration.load(out / "calibration.json")
    assert "camera.offset_m" in calibration.uncertainty
    assert calibration.values["servo.latency_steps"] == 1
    seen = Calibration.load(out / "training_calibration.json")
    assert seen.values["joints.zero_offset_deg"] == [0.0] * 6
    config = json.loads((out / "train" / "config.json").read_text())
    assert config["init_student"] == str(policy) and config["twin"].endswith(".json")
    # A warm start, not a fresh network: the adapted weights moved from the old ones.
    new, _ = load_policy(out / "train" / "policy")
    old, _ = load_policy(policy)
    assert any(
        not torch.equal(a, b) for a, b in zip(new.state_dict().values(), old.state_dict().values())
    )
    assert (out / "before" / "eval_fake_typical_so101.json").exists()
    assert (out / "after" / "eval_fake_typical_so101_calibrated.json").exists()
    page = (out / "report.html").read_text()
    assert "Closing the gap" in page and "Newcombe" in page


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


def test_adapt_refuses_a_bad_rig_file_before_the_arm_moves(tmp_path, capsys):
    policy = save_policy(tmp_path / "policy", VisualPolicy(), CONTRACT)
    rig = tmp_path / "rig.toml"
    rig.write_text("[servo]\nkp_scale = 0.5\n")
    out = tmp_path / "adapted"
    argv = ["adapt", str(policy), "--world", "fake", "--rig", str(rig), "--out", str(out)]
    assert main(argv) == 2
    assert "come from the calibration recording" in capsys.readouterr().err
    assert not (out / "recording.npz").exists()
