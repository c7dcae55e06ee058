"""Evaluations beside training: a copy is scored, in the thread that built its env,
errors surface where the score is used, a kept result comes back unchanged, and a
failing run cancels the evaluation in flight."""

import threading
import time

import pytest
from torch import nn

from realgap.train.evaluations import Evaluated, EvaluationCancelled, EvaluationsBeside


class RecordedEnv:
    def __init__(self):
        self.built_in = threading.get_ident()
        self.closed_in = None

    def close(self):
        self.closed_in = threading.get_ident()


@pytest.mark.parametrize("beside", [True, False])
def test_a_copy_is_scored_in_the_thread_that_built_the_env(beside):
    envs, scored = [], []

    def make_env():
        envs.append(RecordedEnv())
        return envs[-1]

    def score(env, student):
        scored.append((threading.get_ident(), float(student.weight.detach().sum())))
        return 0.25

    student = nn.Linear(2, 1, bias=False)
    nn.init.constant_(student.weight, 1.0)
    evaluations = EvaluationsBeside(make_env, score, beside=beside)
    evaluations.start(student, update=3)
    with pytest.raises(RuntimeError, match="pending"):
        evaluations.start(student, update=4)
    nn.init.constant_(student.weight, 5.0)  # training goes on
    result = evaluations.settle()
    assert (result.update, result.score) == (3, 0.25)
    assert float(result.student.weight.detach().sum()) == 2.0 and result.student is not student
    evaluations.start(student, update=4)
    assert evaluations.settle().score == 0.25 and evaluations.settle() is None
    evaluations.close()
    (env,) = envs  # built once
    here = threading.get_ident()
    assert env.built_in == env.closed_in == scored[0][0] == scored[1][0]
    assert (env.built_in != here) is beside


@pytest.mark.parametrize("beside", [True, False])
def test_an_evaluations_error_is_raised_where_its_score_is_used(beside):
    def score(env, student):
        raise ValueError("the twin broke")

    evaluations = EvaluationsBeside(RecordedEnv, score, beside=beside)
    evaluations.start(nn.Linear(1, 1), update=1)  # no error yet
    with pytest.raises(ValueError, match="the twin broke"):
        evaluations.settle()
    evaluations.close()


def test_a_kept_result_is_settled_unchanged():
    evaluations = EvaluationsBeside(RecordedEnv, lambda env, student: 0.0, beside=True)
    kept = Evaluated(update=7, score=0.8, student=nn.Linear(1, 1))
    evaluations.keep(kept)
    assert evaluations.settle() is kept
    evaluations.keep(None)
    assert evaluations.settle() is None
    evaluations.close()


def test_a_failing_run_cancels_the_evaluation_in_flight():
    # A second Ctrl-C or an error must not wait for a half-minute evaluation.
    started, stopped = threading.Event(), []
    evaluations = None

    def score(env, student):
        started.set()
        for _ in range(600):  # a minute, unless cancelled
            try:
                evaluations.check()
            except EvaluationCancelled:
                stopped.append("cancelled")
                raise
            time.sleep(0.1)
        stopped.append("ran to the end")
        return 1.0

    evaluations = EvaluationsBeside(RecordedEnv, score, beside=True)
    evaluations.start(nn.Linear(1, 1), update=1)
    assert started.wait(timeout=30)
    evaluations.close(cancel=True)
    assert stopped == ["cancelled"]
