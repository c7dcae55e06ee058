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
