"""A tiny end-to-end training run on Reach that beats a random policy, then export + bench."""

import json

import numpy as np

from realgap.cli import main
from realgap.policy.onnx_policy import OnnxPolicy
from realgap.sim.batched_env import BatchedEnv
from realgap.train.common import evaluate


def test_quick_train_export_bench(tmp_path):
    out = tmp_path / "run"
    assert main(["train", "Reach", "--out", str(out), "--quick", "--nominal"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (out / "metrics.csv").read_text().count("\n") > 2
    assert json.loads((out / "config.json").read_text())["recipe"] == "distill"

    assert main(["export", str(out)]) == 0
    assert (
        main(
            [
                "bench",
                "policy",
                str(out),
                "--decisions",
                "20",
                "--json",
                str(tmp_path / "latency.json"),
            ]
        )
        == 0
    )
    latency = json.loads((tmp_path / "latency.json").read_text())
    assert latency["parameters"] > 250_000 and latency["mean_ms"] > 0

    # The exported ONNX policy, run by onnxruntime alone, beats random actions.
    policy = OnnxPolicy(out / "policy")
    env = BatchedEnv("Reach", 16, seed=5)
    rng = np.random.default_rng(0)
    trained = evaluate(env, lambda obs: policy(obs["image"], obs["state"]), 32, seed=5)
    random = evaluate(env, lambda obs: rng.uniform(-1, 1, (16, 6)), 32, seed=5)
    assert trained > random + 0.1, (trained, random, summary)


def test_quick_sac_run_writes_a_loadable_policy(tmp_path):
    from realgap.policy.checkpoint import load_policy
    from realgap.policy.contract import PolicyContract

    out = tmp_path / "sac"
    assert main(["train", "Reach", "--recipe", "sac", "--out", str(out), "--quick"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["recipe"] == "sac"
    env = BatchedEnv("Reach", 1)
    _policy, contract = load_policy(out / "policy", expect=PolicyContract.for_env(env))
    assert contract.extra["recipe"] == "sac"
    rows = (out / "metrics.csv").read_text().splitlines()
    assert any(row.split(",")[1] for row in rows[1:])  # critic updates happened


def test_train_resolves_each_task_to_its_own_training_defaults(tmp_path, capsys):
    """`realgap train TASK` uses the task's defaults, like the benchmark does."""
    from realgap.train import distill

    resolved = {}
    for task in ("PlaceCube", "PickCube", "Reach"):
        assert main(["train", task, "--out", str(tmp_path / task), "--dry-run"]) == 0
        resolved[task] = json.loads(capsys.readouterr().out)
        assert resolved[task] == {
            **json.loads(json.dumps(vars(distill.args_for_task(task, out=str(tmp_path / task))))),
        }
    assert resolved["PlaceCube"]["teacher"] == "scripted"
    assert resolved["PickCube"]["teacher"] == "scripted"
    assert resolved["PickCube"]["student_updates"] == 80
    assert resolved["Reach"]["teacher"] == "scripted"
    assert resolved["Reach"]["student_updates"] == 60
    # --quick and explicit options go on top of the task's defaults.
    main(["train", "PlaceCube", "--out", str(tmp_path), "--dry-run", "--quick"])
    assert json.loads(capsys.readouterr().out)["teacher"] == "scripted"
    main(["train", "PickCube", "--out", str(tmp_path), "--dry-run", "--teacher-steps", "5"])
    assert json.loads(capsys.readouterr().out)["teacher_steps"] == 5
    main(["train", "Reach", "--out", str(tmp_path), "--dry-run", "--architecture", "squint"])
    assert json.loads(capsys.readouterr().out)["architecture"] == "squint"
    # Stack's student remembers what it saw on the way (the lower object leaves the view).
    # StackCan ships an average of its student's weights.
    for task, rounds, average in (("StackCube", 60, 0.0), ("StackCan", 90, 0.99)):
        main(["train", task, "--out", str(tmp_path), "--dry-run"])
        resolved = json.loads(capsys.readouterr().out)
        assert resolved["architecture"] == "recurrent" and resolved["dagger_rounds"] == rounds
        assert resolved["student_average"] == average
    main(["train", "StackCan", "--out", str(tmp_path), "--dry-run", "--architecture", "student"])
    assert json.loads(capsys.readouterr().out)["architecture"] == "student"


def test_sac_resolves_cpu_defaults_and_refuses_a_missing_gpu(tmp_path, capsys, monkeypatch):
    import torch

    from realgap.train import sac

    main(["train", "Reach", "--recipe", "sac", "--out", str(tmp_path), "--dry-run"])
    resolved = json.loads(capsys.readouterr().out)
    assert resolved["device"] == "cpu" and resolved["num_envs"] == sac.Args().num_envs
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    args = ["train", "Reach", "--recipe", "sac", "--out", str(tmp_path), "--device", "cuda"]
    assert main(args) == 2
    assert "no GPU" in capsys.readouterr().err
    assert main(["train", "Reach", "--out", str(tmp_path), "--device", "cuda"]) == 2
    sac_student = ["train", "Reach", "--recipe", "sac", "--architecture", "student"]
    assert main([*sac_student, "--out", str(tmp_path)]) == 2


def test_train_in_a_twin_file(tmp_path):
    twin = tmp_path / "arm.toml"
    twin.write_text("[servo]\nkp_scale = 0.6\nlatency_steps = 1\n[camera]\nexposure_scale = 1.3\n")
    widths = tmp_path / "widths.toml"
    widths.write_text("[randomization]\nkp_scale = [0.9, 1.1]\nlatency_steps = [0, 0]\n")
    out = tmp_path / "run"
    argv = ["train", "Reach", "--out", str(out), "--quick", "--twin", str(twin)]
    assert main([*argv, "--randomization", str(widths)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["twin"] == str(twin) and config["randomization"] == str(widths)
    bad = tmp_path / "bad.toml"
    bad.write_text("[servo]\nstiffness = 1\n")
    assert main(["train", "Reach", "--out", str(out), "--twin", str(bad)]) != 0
