"""The one batched rollout: a policy acting in a :class:`BatchedEnv` until a stop rule.

Matched evaluation, training evaluation, the scripted expert's episodes and
demonstration recording all run this loop; what differs between them (recorders,
failure trackers, demo buffers) hooks in through ``on_step``, which sees every
transition before the next action is chosen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from realgap.sim.batched_env import BatchedEnv


@dataclass
class Transition:
    """One batched step, as ``on_step`` sees it."""

    step: int
    """Steps since the rollout began."""
    obs: dict
    """What the policy saw."""
    action: np.ndarray
    """What the env was given."""
    next_obs: dict
    """The observation after the step (fresh episodes' first, for envs that reset)."""
    reward: np.ndarray
    info: dict
    held: np.ndarray | None = None
    """Envs held still through this step (``freeze_succeeded``): their ``obs`` is stale
    and their episode already decided; None without freezing."""


@dataclass
class FinishedEpisode:
    env: int
    success: bool
    """The task's success flag held at some step."""
    success_at_end: bool
    episode_return: float
    length: int


def rollout(
    env: BatchedEnv,
    act: Callable[[dict], np.ndarray],
    obs: dict,
    *,
    episodes: int | None = None,
    steps: int | None = None,
    until: Callable[[], bool] | None = None,
    on_step: Callable[[Transition], None] | None = None,
    freeze_succeeded: bool = False,
) -> list[FinishedEpisode]:
    """Step ``env`` from observation ``obs`` with ``act(obs) -> (n, 6)`` until
    ``episodes`` episodes finished, ``steps`` steps passed, or ``until()`` is true
    (exactly one rule); returns every episode that finished meanwhile.

    ``freeze_succeeded`` holds an episode still from its first success to its end
    (:meth:`BatchedEnv.freeze`): success is latched, so an evaluation's results are the
    same and its successful episodes cost only their steps to success. ``on_step``
    sees the envs held still through a step in ``Transition.held``; with ``steps``, the
    rollout ends once every env is frozen. Every env is thawed when it returns."""
    if sum(rule is not None for rule in (episodes, steps, until)) != 1:
        raise ValueError("rollout needs exactly one of episodes, steps or until")
    finished: list[FinishedEpisode] = []
    step = 0
    while True:
        if episodes is not None and len(finished) >= episodes:
            break
        if steps is not None and step >= steps:
            break
        if until is not None and until():
            break
        held = env.frozen.copy() if freeze_succeeded else None
        action = act(obs)
        next_obs, reward, _, _, info = env.step(action)
        if on_step is not None:
            on_step(Transition(step, obs, action, next_obs, reward, info, held))
        if freeze_succeeded:
            env.freeze(np.nonzero(env.success_once & ~env.frozen)[0])
        if "episode" in info:
            done = info["episode"]
            finished += [
                FinishedEpisode(int(i), bool(s), bool(e), float(r), int(n))
                for i, s, e, r, n in zip(
                    done["env"],
                    done["success"],
                    done["success_at_end"],
                    done["return"],
                    done["length"],
                )
            ]
        obs = next_obs
        step += 1
        if freeze_succeeded and steps is not None and env.frozen.all():
            break  # nothing left that the remaining steps could change
    env.frozen[:] = False
    return finished


def success_rate(finished: list[FinishedEpisode]) -> float:
    return float(np.mean([episode.success for episode in finished])) if finished else float("nan")
