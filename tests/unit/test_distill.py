"""The distill recipe's student loop: fixed steps per round, sparse evaluation, the
best evaluated student kept, and a fraction of the envs driven by the expert."""

import copy
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from realgap.errors import ConfigError
from realgap.runs import RunFolder
from realgap.sim.batched_env import BatchedEnv
from realgap.sim.scripted import ScriptedController
from realgap.train import dagger, distill, evaluations
from realgap.train.checkpoint import Checkpointer
from realgap.train.common import beyond_noise
from realgap.train.student_fit import WeightAverage


def _tiny_dagger(tmp_path, monkeypatch, evaluate, **overrides):
    """A tiny Reach DAgger run whose evaluations call ``evaluate(env, student, episodes,
    seed)``: the student it ships and the metrics rows it logged."""
    # The evaluation receives the student itself (no actor around it).
    monkeypatch.setattr(dagger, "policy_actor", lambda student, env: student)
    monkeypatch.setattr(dagger, "evaluate", evaluate)
    args = distill.args_for_task(
        "Reach",
        out=str(tmp_path),
        progress=False,
        **{
            **distill.QUICK,
            "dagger_rounds": 8,
            "dagger_steps": 4,
            "student_envs": 4,
            "student_updates": 1,
            "student_eval_every": 1,
            **overrides,
        },
    )
    rows = []
    student, nominal = distill.train_student(args, None, rows.append)
    nominal.close()
    return student, rows


def test_the_best_evaluated_student_is_kept_and_evaluations_are_sparse(tmp_path, monkeypatch):
    scores = iter([0.9, 0.2, 0.3])
    seen = []

    def fake_evaluate(env, act, episodes, seed, on_step=None):
        seen.append(copy.deepcopy(act.state_dict()))  # each evaluated state, recorded
        return next(scores)

    student, rows = _tiny_dagger(
        tmp_path,
        monkeypatch,
        fake_evaluate,
        dagger_rounds=6,
        student_updates=3,
        student_eval_every=2,
    )
    evaluated = [
        row["update"] for row in rows if "success_rate" in row and row["phase"] == "student"
    ]
    assert evaluated == [2, 4, 6]
    assert rows[-1] == {"phase": "student_best", "success_rate": 0.9}
    kept = student.state_dict()
    assert all(torch.equal(kept[name], seen[0][name]) for name in kept)
    assert not all(torch.equal(kept[name], seen[-1][name]) for name in kept)


def _evaluated_rounds(tmp_path, monkeypatch, scores, **overrides) -> tuple[list, list]:
    """The rounds and the logged phases of a tiny run whose evaluations return
    ``scores`` in turn."""
    scores = iter(scores)
    _, rows = _tiny_dagger(tmp_path, monkeypatch, lambda *_, **__: next(scores), **overrides)
    return _evaluations(rows), [row["phase"] for row in rows]


def _evaluations(rows: list[dict]) -> list[int]:
    """The rounds whose students were evaluated, in the order their scores were used."""
    return [row["update"] for row in rows if row["phase"] == "student" and "success_rate" in row]


def test_a_retraining_stops_once_it_reaches_its_target_success(tmp_path, monkeypatch):
    # adapt's target: the old policy's nominal success; reaching it closes the gap.
    evaluated, phases = _evaluated_rounds(
        tmp_path, monkeypatch, [0.5, 0.8, 0.93, 0.99, 1.0, 1.0, 1.0, 1.0], stop_at_success=0.92
    )
    assert evaluated == [1, 2, 3]
    assert "student_target_reached" in phases
    # Without a target the same scores run every round.
    evaluated, phases = _evaluated_rounds(
        tmp_path / "none", monkeypatch, [0.5, 0.8, 0.93, 0.99, 1.0, 1.0, 1.0, 1.0]
    )
    assert evaluated == list(range(1, 9))
    assert "student_target_reached" not in phases


def test_a_retraining_stops_after_evaluations_without_a_new_best(tmp_path, monkeypatch):
    evaluated, phases = _evaluated_rounds(
        tmp_path,
        monkeypatch,
        [0.5, 0.6, 0.6, 0.55, 0.6, 0.9, 0.9, 0.9],
        plateau_evals=3,
        eval_episodes=64,
    )
    assert evaluated == [1, 2, 3, 4, 5]
    assert "student_plateau" in phases


def test_a_new_best_within_an_evaluations_noise_is_no_progress(tmp_path, monkeypatch):
    # Arm 329's retraining in its twin (64 episodes each): every record after the first
    # lay within a standard error of it, and the plateau rule waited for 28 rounds.
    scores = iter([0.75, 0.66, 0.59, 0.78, 0.41, 0.78, 0.78, 0.78])
    _, rows = _tiny_dagger(
        tmp_path,
        monkeypatch,
        lambda *_, **__: next(scores),
        plateau_evals=3,
        eval_episodes=64,
    )
    assert _evaluations(rows) == [1, 2, 3, 4]
    assert rows[-1] == {"phase": "student_best", "success_rate": 0.78}  # noise or not
    # A gain beyond the noise starts the count again.
    evaluated, _ = _evaluated_rounds(
        tmp_path / "gain",
        monkeypatch,
        [0.5, 0.7, 0.6, 0.65, 0.72, 0.9, 0.9, 0.9],
        plateau_evals=3,
        eval_episodes=64,
    )
    assert evaluated == [1, 2, 3, 4, 5]


def test_progress_beyond_noise_follows_the_binomial_standard_error():
    assert beyond_noise(0.1, -1.0, 64)  # the first evaluation is progress
    assert not beyond_noise(0.80, 0.75, 64)  # 0.054 needed
    assert beyond_noise(0.81, 0.75, 64)
    assert not beyond_noise(0.80, 0.75, 16) and beyond_noise(0.87, 0.75, 16)  # 0.108
    assert beyond_noise(0.02, 0.0, 64)  # at 0% one episode's worth of noise: 1/64 floor


def test_the_expert_driven_fraction_of_envs_steps_with_the_teachers_labels(tmp_path, monkeypatch):
    sent, labelled = [], []
    real_step, real_act = BatchedEnv.step, ScriptedController.act

    def record_step(self, action):
        sent.append(action.copy())
        return real_step(self, action)

    def record_label(self):
        labelled.append(real_act(self))
        return labelled[-1]

    monkeypatch.setattr(BatchedEnv, "step", record_step)
    monkeypatch.setattr(ScriptedController, "act", record_label)
    monkeypatch.setattr(dagger, "evaluate", lambda env, act, episodes, seed, on_step=None: 0.0)
    args = distill.args_for_task(
        "Reach",
        out=str(tmp_path),
        progress=False,
        teacher="scripted",
        dagger_rounds=2,
        dagger_steps=3,
        student_envs=4,
        student_updates=1,
        expert_driven=0.5,
    )
    _student, nominal = distill.train_student(args, None, lambda row: None)
    nominal.close()
    # Round 0: the teacher drives every env; round 1: envs 0-1 follow the teacher, 2-3
    # the student (whose untrained actions differ from the expert's).
    for step in range(3):
        np.testing.assert_array_equal(sent[step], labelled[step])
    for step in range(3, 6):
        np.testing.assert_array_equal(sent[step][:2], labelled[step][:2])
        assert not np.allclose(sent[step][2:], labelled[step][2:])


def test_an_expert_driven_fraction_outside_zero_to_one_is_refused(tmp_path):
    args = distill.args_for_task("Reach", out=str(tmp_path), expert_driven=1.5)
    with pytest.raises(ConfigError, match="expert_driven"):
        distill.main(args)


def test_an_empty_sequence_batch_is_refused(tmp_path):
    args = distill.args_for_task("StackCube", out=str(tmp_path), sequence_batch=0)
    with pytest.raises(ConfigError, match="sequence_batch"):
        distill.main(args)


def test_a_weight_average_moves_by_one_minus_decay_and_copies_buffers():
    net = torch.nn.BatchNorm1d(3)  # parameters and a running-statistics buffer
    average = WeightAverage(net, decay=0.75)
    before = net.weight.detach().clone()
    with torch.no_grad():
        net.weight.add_(4.0)
        net.running_mean.fill_(2.0)
    average.update()
    torch.testing.assert_close(average.module.weight, before + 1.0)
    torch.testing.assert_close(average.module.running_mean, torch.full((3,), 2.0))
    assert not average.module.weight.requires_grad
    for decay in (0.0, 1.0):
        with pytest.raises(ValueError, match="decay"):
            WeightAverage(net, decay)


def test_the_student_average_is_what_is_evaluated_kept_and_shipped(tmp_path, monkeypatch):
    averages, evaluated = [], []

    class RecordedAverage(WeightAverage):
        def __init__(self, module, decay):
            super().__init__(module, decay)
            averages.append(self)

    def fake_evaluate(env, act, episodes, seed, on_step=None):
        evaluated.append(act)
        return 0.5

    monkeypatch.setattr(dagger, "WeightAverage", RecordedAverage)
    monkeypatch.setattr(dagger, "policy_actor", lambda policy, env: policy)
    monkeypatch.setattr(dagger, "evaluate", fake_evaluate)
    args = distill.args_for_task(
        "Reach",
        out=str(tmp_path),
        progress=False,
        **{
            **distill.QUICK,
            "dagger_rounds": 2,
            "dagger_steps": 4,
            "student_envs": 4,
            "student_updates": 3,
            "student_eval_every": 1,
            "student_average": 0.9,
        },
    )
    shipped, nominal = distill.train_student(args, None, lambda row: None)
    nominal.close()
    (average,) = averages
    assert shipped is average.module
    # Each evaluation scores a copy of the average as it was (training goes on beside
    # it): the last, at the last round, is not the trained weights; the first is kept.
    trained, kept = average.source.state_dict(), shipped.state_dict()
    first, last = (policy.state_dict() for policy in (evaluated[0], evaluated[-1]))
    assert len(evaluated) == 2 and all(policy is not shipped for policy in evaluated)
    assert not all(torch.equal(trained[name], last[name]) for name in last)
    assert all(torch.equal(first[name], kept[name]) for name in kept)
    assert not all(torch.equal(trained[name], kept[name]) for name in kept)


def test_a_student_average_outside_its_range_is_refused(tmp_path):
    args = distill.args_for_task("Reach", out=str(tmp_path), student_average=1.0)
    with pytest.raises(ConfigError, match="student_average"):
        distill.main(args)


@pytest.mark.parametrize("final_evaluation", [True, False])
def test_a_run_without_the_final_evaluation_reports_its_best_evaluation(
    tmp_path, monkeypatch, final_evaluation
):
    """``realgap adapt`` evaluates the adapted policy in the arm's twin right after its
    retraining; the retraining's own final evaluation would only repeat it, slowly."""
    from realgap.train import common

    scores = iter([0.4, 0.7, 0.5])
    monkeypatch.setattr(dagger, "evaluate", lambda *_, **__: next(scores))
    fresh = []

    def final(env, act, episodes, seed):
        fresh.append(episodes)
        return 0.25

    monkeypatch.setattr(common, "evaluate", final)
    args = distill.args_for_task(
        "Reach",
        out=str(tmp_path),
        progress=False,
        final_evaluation=final_evaluation,
        **{**distill.QUICK, "dagger_steps": 4, "student_envs": 4, "student_updates": 1},
    )
    summary = distill.main(args)
    if final_evaluation:
        assert fresh == [64] and summary["success_rate_nominal"] == 0.25
        assert summary["success_source"] == "64 fresh episodes"
    else:
        assert fresh == [] and summary["success_rate_nominal"] == 0.7
        assert summary["success_source"] == "the kept student's own evaluation"


def test_an_evaluation_runs_beside_the_next_round_and_is_used_at_the_next_one(
    tmp_path, monkeypatch
):
    """A retraining's evaluation scores a copy of the student in a thread of its own
    while the next round trains; with one core it runs at once. Either way its score
    is used at the same round, so the decisions are the same."""
    monkeypatch.setattr(evaluations, "concurrent_rendering", lambda: True)
    collecting = {}  # round -> set when that round's collection begins
    collect = dagger.DaggerLoop.collect

    def announced_collect(loop):
        collecting.setdefault(loop.round + 1, threading.Event()).set()
        collect(loop)

    monkeypatch.setattr(dagger.DaggerLoop, "collect", announced_collect)
    overlapped = {}

    def waiting_evaluate(env, student, episodes, seed, on_step=None):
        # Round k's evaluation waits for round k + 1 to begin: inline, it never would.
        update = len(overlapped) + 1
        if update < 4:
            event = collecting.setdefault(update + 1, threading.Event())
            overlapped[update] = event.wait(timeout=30)
        else:
            overlapped[update] = None
        return [0.5, 0.8, 0.6, 0.7][update - 1]

    _, rows = _tiny_dagger(tmp_path, monkeypatch, waiting_evaluate, dagger_rounds=4)
    assert overlapped == {1: True, 2: True, 3: True, 4: None}

    # The same run with every evaluation inline takes the same decisions, row for row.
    scores = [0.5, 0.6, 0.6, 0.55, 0.6, 0.9, 0.9, 0.9]
    runs = {}
    for beside in (True, False):
        monkeypatch.setattr(evaluations, "concurrent_rendering", lambda beside=beside: beside)
        left = iter(scores)
        torch.manual_seed(0)
        student, rows = _tiny_dagger(
            tmp_path / str(beside),
            monkeypatch,
            lambda env, act, episodes, seed, on_step=None, left=left: next(left),
            plateau_evals=3,
            eval_episodes=64,
        )
        runs[beside] = rows, student.state_dict()
    assert runs[True][0] == runs[False][0]
    assert all(torch.equal(runs[True][1][k], runs[False][1][k]) for k in runs[True][1])
    # The plateau is seen when round 5's score is used, at round 6.
    assert _evaluations(runs[True][0]) == [1, 2, 3, 4, 5]
    assert [row["update"] for row in runs[True][0] if row["phase"] == "student_plateau"] == [6]


def test_a_checkpoint_keeps_an_evaluation_not_yet_used(tmp_path, monkeypatch):
    """Stopped after round 1, whose evaluation was the best and not yet used: the
    resumed run uses it at round 2, as the uninterrupted run did."""
    scores = [0.9, 0.2, 0.3, 0.4]
    monkeypatch.setattr(dagger, "policy_actor", lambda student, env: student)
    args = distill.args_for_task(
        "Reach",
        progress=False,
        **{
            **distill.QUICK,
            "dagger_rounds": 4,
            "dagger_steps": 4,
            "student_envs": 4,
            "student_updates": 1,
            "student_eval_every": 1,
        },
    )

    class StopAfterRound:
        def __init__(self, loop, after):
            self.loop, self.after = loop, after

        @property
        def requested(self):
            return "SIGTERM" if self.loop.round >= self.after else None

    def run(out: Path, stop_after: int | None, resume: bool = False):
        left = iter(scores[offset:])
        monkeypatch.setattr(dagger, "evaluate", lambda *_, **__: next(left))
        torch.manual_seed(args.seed)
        checkpointer = Checkpointer(RunFolder(out), float("inf"))
        loop = dagger.DaggerLoop(replace(args, out=str(out)), None, checkpointer)
        if resume:
            loop.restore(checkpointer.load())
        rows = []
        stop = StopAfterRound(loop, stop_after or 99)
        return loop.run(rows.append, stop=stop), rows, loop

    offset = 0
    whole, whole_rows, _ = run(tmp_path / "whole", None)
    stopped, first_rows, loop = run(tmp_path / "stopped", 1)
    assert stopped is None and _evaluations(first_rows) == []  # round 1's not used yet
    assert loop.best.score == 0.9  # but the stopped run's best-so-far policy is round 1's
    offset = 1  # round 1's score was drawn before the stop
    resumed, later_rows, _ = run(tmp_path / "stopped", None, resume=True)
    assert first_rows + later_rows == whole_rows
    assert whole_rows[-1] == {"phase": "student_best", "success_rate": 0.9}
    assert all(torch.equal(resumed.state_dict()[k], v) for k, v in whole.state_dict().items())
