"""LeRobot's ACT through realgap: trained on realgap datasets with the sim/real mix
sampler, saved with a contract, loaded on the CPU, deployed by the bridge."""

import json

import numpy as np
import pytest

pytest.importorskip("lerobot", reason="needs the `real` extra (LeRobot, Python >= 3.12)")

from realgap.bridge.deploy import run_session
from realgap.bridge.env import DeployConfig
from realgap.bridge.worlds import Spot, open_fake_world
from realgap.cli import main
from realgap.eval.layout import load_layout
from realgap.eval.matched import evaluate
from realgap.imitate.act import ACTRunner
from realgap.imitate.demos import record_sim_demos
from realgap.policy.loaders import load_runtime_policy


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("act")
    record_sim_demos("Reach", 4, folder / "sim", seed=0, envs=4)
    record_sim_demos("Reach", 2, folder / "real", seed=1, envs=2)
    return folder


def _losses(run):
    rows = (run / "metrics.csv").read_text().splitlines()[1:]
    return [float(row.split(",")[2]) for row in rows]


def test_act_trains_on_mixed_demos_and_deploys(demos, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing may be downloaded
    monkeypatch.setenv("REALGAP_HOME", str(tmp_path / "home"))
    run = tmp_path / "act"
    args = ["imitate", "--policy", "act", "--sim", str(demos / "sim"), "--real"]
    args += [str(demos / "real"), "--mix", "0.25", "--steps", "60", "--out", str(run)]
    assert main(args) == 0
    losses = _losses(run)
    assert np.mean(losses[-1:]) < 0.7 * losses[0], losses  # ACT's L1 + KL went down
    contract = json.loads((run / "policy" / "contract.json").read_text())
    assert contract["action_mode"] == "absolute" and contract["extra"]["policy"] == "act"
    assert (run / "policy" / "model.safetensors").exists()  # LeRobot's own files

    policy, loaded = load_runtime_policy(run / "policy")
    assert isinstance(policy, ACTRunner) and loaded.control_hz == 10.0
    image, state = np.zeros((16, 16, 3), np.uint8), np.zeros(12, np.float32)
    first = policy(image, state)
    assert first.shape == (6,) and np.isfinite(first).all()
    assert policy(np.zeros((3, 16, 16, 3), np.uint8), np.zeros((3, 12), np.float32)).shape == (
        3,
        6,
    )

    layout = load_layout().for_task("Reach")
    result = evaluate(run / "policy", "sim", layout, 13)
    assert result["overall"]["trials"] == 9
    session = run_session(
        open_fake_world("Reach", "typical_so101"),
        run / "policy",
        [Spot("centre", (0.2, 0.0))],
        tmp_path / "deploy",
        DeployConfig(episode_steps=6, check_camera_lock=False),
    )
    assert session["episodes"] == 1 and session["timing"]["steps"] == 6
    assert session["timing"]["target_ms"] == 100.0


def test_act_fine_tunes_and_loads_a_gpu_saved_checkpoint_on_cpu(demos, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    base = tmp_path / "base"
    common = ["--policy", "act", "--steps", "10"]
    assert main(["imitate", "--sim", str(demos / "sim"), *common, "--out", str(base)]) == 0
    # A checkpoint written on a GPU machine names cuda in its config and processors.
    for name in ("config.json", "policy_preprocessor.json"):
        path = base / "policy" / name
        path.write_text(path.read_text().replace('"cpu"', '"cuda"'))
    tuned = tmp_path / "tuned"
    args = ["imitate", "--real", str(demos / "real"), "--init", str(base / "policy"), *common]
    assert main([*args, "--out", str(tuned)]) == 0
    policy, _ = load_runtime_policy(tuned / "policy")
    assert np.isfinite(policy(np.zeros((16, 16, 3), np.uint8), np.zeros(12, np.float32))).all()


def test_chunk_policy_refuses_an_act_init(demos, tmp_path, capsys):
    base = tmp_path / "base"
    args = ["imitate", "--sim", str(demos / "sim"), "--policy", "act", "--steps", "2"]
    assert main([*args, "--out", str(base)]) == 0
    args = ["imitate", "--real", str(demos / "real"), "--init", str(base / "policy")]
    assert main([*args, "--steps", "2", "--out", str(tmp_path / "x")]) != 0
    assert "holds a 'act' policy; pass --policy act" in capsys.readouterr().err
