"""The distill recipe's student loop: fixed steps per round, sparse evaluation, and
the best evaluated student kept."""

import copy

import torch

from realgap.train import distill


def test_the_best_evaluated_student_is_kept_and_evaluations_are_sparse(tmp_path, monkeypatch):
    scores = iter([0.9, 0.2, 0.3])
    seen = []

    def fake_evaluate(env, act, episodes, seed):
        seen.append(copy.deepcopy(act.state_dict()))
        return next(scores)

    # The evaluation receives the student itself, so each evaluated state is recorded.
    monkeypatch.setattr(distill, "policy_actor", lambda student: student)
    monkeypatch.setattr(distill, "evaluate", fake_evaluate)
    args = distill.args_for_task(
        "Reach",
        out=str(tmp_path),
        progress=False,
        **{
            **distill.QUICK,
            "dagger_rounds": 6,
            "dagger_steps": 4,
            "student_envs": 4,
            "student_updates": 3,
            "student_eval_every": 2,
        },
    )
    rows = []
    student, nominal = distill.train_student(args, None, rows.append)
    nominal.close()
    evaluated = [
        row["update"] for row in rows if "success_rate" in row and row["phase"] == "student"
    ]
    assert evaluated == [2, 4, 6]
    assert rows[-1] == {"phase": "student_best", "success_rate": 0.9}
    kept = student.state_dict()
    assert all(torch.equal(kept[name], seen[0][name]) for name in kept)
    assert not all(torch.equal(kept[name], seen[-1][name]) for name in kept)
