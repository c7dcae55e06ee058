"""The report on a folder of several policies' evaluations (e.g. ``realgap cotrain``)."""

import json

from realgap.eval.stats import rate
from realgap.report.html import build_report, gap_rows, load_evaluations


def _write(folder, policy, world, successes):
    folder.mkdir(parents=True, exist_ok=True)
    result = {
        "world": world,
        "task": "Reach",
        "policy": str(policy),
        "overall": {**rate(successes, 20), "failures": {}},
        "out_of_distribution": rate(1, 8),
        "spots": [],
    }
    name = world.replace(":", "_")
    (folder / f"eval_{name}.json").write_text(json.dumps(result))


def test_each_policy_gets_its_own_gap_and_label(tmp_path):
    for policy, sim, fake in (("sim_only", 18, 8), ("cotrained_10", 17, 15)):
        folder = tmp_path / "eval" / policy
        _write(folder, tmp_path / policy / "policy", "sim", sim)
        _write(folder, tmp_path / policy / "policy", "fake:typical_so101", fake)
    evaluations = load_evaluations(tmp_path)
    labels = [e["label"] for e in evaluations]
    assert labels == [
        "cotrained_10: sim",
        "cotrained_10: fake:typical_so101",
        "sim_only: sim",
        "sim_only: fake:typical_so101",
    ]
    gaps = {row["world"]: row.get("gap") for row in gap_rows(evaluations)}
    assert gaps["sim_only: sim"] is None and gaps["cotrained_10: sim"] is None
    assert gaps["sim_only: fake:typical_so101"]["gap"] == 0.5  # 18/20 - 8/20, own sim
    assert gaps["cotrained_10: fake:typical_so101"]["gap"] == 0.1  # 17/20 - 15/20
    page = build_report(tmp_path).read_text()
    assert page.count("cotrained_10: fake:typical_so101") >= 2  # table and failures


def test_one_policy_keeps_plain_world_names(tmp_path):
    _write(tmp_path / "eval", tmp_path / "student" / "policy", "sim", 18)
    _write(tmp_path / "eval", tmp_path / "student" / "policy", "fake:nominal", 16)
    assert [e["label"] for e in load_evaluations(tmp_path)] == ["sim", "fake:nominal"]
