"""A training's evaluations, each run beside the rounds that follow it.

A DAgger retraining in an arm's twin spent about half its time evaluating, with one
core idle: PickCube in a shadowed twin on a 2-core CPU, four rounds 21 s, then a
64-episode evaluation 25 s. Each evaluation now runs on a copy of the student, in a
thread of its own with an env built in that thread (a thread renders through OpenGL
contexts of its own: :func:`realgap.runtime.concurrent_rendering`), while the next
rounds train.

An evaluation's result is *used* -- the best kept, the plateau counted, the target
checked -- at a fixed round: when the next evaluation is due, or at the last round.
That holds whether it ran beside or, with one core or GLFW, here and now, so a run
takes the same decisions on every machine, and a checkpoint keeps a finished but
unused result for the resumed run to use at the same round.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from torch import nn

from realgap.runtime import concurrent_rendering


@dataclass
class Evaluated:
    """One finished evaluation: the round whose student it scored, the score, and the
    student's copy that was scored."""

    update: int
    score: float
    student: nn.Module


class EvaluationCancelled(Exception):
    """An evaluation stopped early because its training is ending on an error."""


class EvaluationsBeside:
    """At most one evaluation in flight. ``make_env()`` builds the env it evaluates in,
    once, in the thread that evaluates; ``score(env, student)`` is the success rate, and
    calls :meth:`check` between steps so that a failing run need not wait for it.
    ``beside``: None decides by :func:`~realgap.runtime.concurrent_rendering`."""

    def __init__(
        self,
        make_env: Callable[[], object],
        score: Callable[[object, nn.Module], float],
        beside: bool | None = None,
    ):
        self.beside = concurrent_rendering() if beside is None else beside
        self._pool = (
            ThreadPoolExecutor(1, thread_name_prefix="realgap-evaluation") if self.beside else None
        )
        self._make_env, self._score = make_env, score
        self._env = None
        self._pending: Future | None = None
        self._cancelled = threading.Event()

    def check(self) -> None:
        """Raise :class:`EvaluationCancelled` once :meth:`close` has cancelled."""
        if self._cancelled.is_set():
            raise EvaluationCancelled

    def start(self, student: nn.Module, update: int) -> None:
        """Evaluate a copy of ``student`` (so training may go on changing it)."""
        if self._pending is not None:
            raise RuntimeError("an evaluation is still pending: settle it first")
        snapshot = copy.deepcopy(student)
        if self._pool is not None:
            self._pending = self._pool.submit(self._evaluate, snapshot, update)
            return
        self._pending = Future()
        try:
            self._pending.set_result(self._evaluate(snapshot, update))
        except Exception as error:  # raised where it would have been used, as beside
            self._pending.set_exception(error)

    def settle(self) -> Evaluated | None:
        """The pending evaluation's result, waiting for it if need be; None if none."""
        if self._pending is None:
            return None
        pending, self._pending = self._pending, None
        return pending.result()

    def keep(self, evaluated: Evaluated | None) -> None:
        """Make a finished evaluation (a checkpoint's) the pending one again."""
        if evaluated is not None:
            self._pending = Future()
            self._pending.set_result(evaluated)

    def close(self, cancel: bool = False) -> None:
        """Wait for the evaluation in flight, if any (``cancel``: stop it at its next
        step: the run is failing or was interrupted), and close the env in its thread."""
        if cancel:
            self._cancelled.set()
        self._pending = None
        if self._pool is not None:
            self._pool.submit(self._close_env).result()
            self._pool.shutdown()
        else:
            self._close_env()

    def _evaluate(self, student: nn.Module, update: int) -> Evaluated:
        if self._env is None:
            self._env = self._make_env()
        return Evaluated(update, self._score(self._env, student), student)

    def _close_env(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None
