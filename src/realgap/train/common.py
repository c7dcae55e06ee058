"""What every training recipe shares: evaluation and writing the finished run."""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from pathlib import Path

import torch
from torch import nn

from realgap import runs
from realgap.policy.checkpoint import save_policy
from realgap.policy.contract import PolicyContract
from realgap.policy.networks import MemoryRunner, is_recurrent, parameter_count
from realgap.runs import RunFolder
from realgap.sim.batched_env import BatchedEnv
from realgap.sim.calibration import Calibration, load_twin
from realgap.sim.randomization import DomainRandomization
from realgap.sim.rollout import rollout, success_rate
from realgap.sim.tasks import make_task
from realgap.sim.twin import TwinParams
from realgap.speed import TrainedSpeeds


def training_worlds(args) -> tuple[DomainRandomization | None, TwinParams | None]:
    """The randomization and the twin it is centred on, from a recipe's ``Args``
    (``randomize``, ``randomization`` file, ``twin`` file); None means nominal."""
    twin = load_twin(args.twin) if args.twin else None
    if not args.randomize:
        return None, twin
    # The task's own widths (can sizes, Stack's friction) over the defaults; a file's
    # keys over both.
    task_widths = replace(DomainRandomization(), **make_task(args.task).randomization)
    widths = (
        DomainRandomization.from_toml(args.randomization, base=task_widths)
        if args.randomization
        else task_widths
    )
    if args.twin and Path(args.twin).suffix == ".json":
        # A calibration: what it measured is randomized within its uncertainty.
        return widths.around(Calibration.load(args.twin)), twin
    return widths, twin


def trained_speeds(args) -> TrainedSpeeds:
    """The speeds a recipe's ``Args`` train over (the contract records them)."""
    randomization, twin = training_worlds(args)
    if randomization is None:
        randomization = DomainRandomization.none(twin or TwinParams())
    return randomization.trained_speeds


def evaluate(env: BatchedEnv, act, episodes: int, seed: int, on_step=None) -> float:
    """Success rate of ``act(obs) -> actions`` over ``episodes`` finished episodes
    (``on_step(transition)`` after every step, as :func:`~realgap.sim.rollout.rollout`).
    An episode is held still from its first success (the rate is the same, sooner)."""
    obs, _ = env.reset(seed=seed)
    finished = rollout(env, act, obs, episodes=episodes, on_step=on_step, freeze_succeeded=True)
    return success_rate(finished)


def policy_actor(policy: nn.Module, env: BatchedEnv):
    """``obs -> actions`` for a visual policy acting in ``env``, without gradients. A
    recurrent policy's memory is zeroed for the envs whose episode just began."""
    if is_recurrent(policy):
        runner = MemoryRunner(policy)

        def act_with_memory(obs):
            runner.reset(env.steps == 0)
            return runner(obs["image"], obs["state"])

        return act_with_memory

    def act(obs):
        with torch.no_grad():
            return policy(torch.from_numpy(obs["image"]), torch.from_numpy(obs["state"])).numpy()

    return act


class BestSnapshot:
    """The best evaluated weights so far. Success wobbles between evaluations (PPO
    teachers, DAgger students, SAC), so a run ships its best, not its last.
    ``later_wins_ties``: a tie replaces the kept weights (they trained longer)."""

    def __init__(self, module: nn.Module, later_wins_ties: bool = False):
        self.score = -1.0
        self.state = copy.deepcopy(module.state_dict())
        self.later_wins_ties = later_wins_ties

    def offer(self, score: float, module: nn.Module) -> bool:
        """Keep ``module``'s weights if ``score`` is the best yet; returns whether kept."""
        if score > self.score or (self.later_wins_ties and score == self.score):
            self.score, self.state = score, copy.deepcopy(module.state_dict())
            return True
        return False

    def restore(self, module: nn.Module) -> None:
        module.load_state_dict(self.state)


def beyond_noise(score: float, reference: float, episodes: int) -> bool:
    """Whether an evaluation's ``score`` beats ``reference`` (an earlier one's, negative
    for none) by more than one binomial standard error of an ``episodes``-episode
    evaluation at the reference's rate. Counting any new best as progress kept
    retrainings going on noise: at 64 episodes a score near 80% wobbles by 5 points, and
    a record falls by chance every few evaluations (arm 329's retraining: 75, 66, 59, 78,
    41, 78, 78% took 28 rounds where its best was in reach at 16)."""
    if reference < 0:
        return True
    rate = min(max(reference, 1.0 / episodes), 1.0 - 1.0 / episodes)
    return score > reference + (rate * (1.0 - rate) / episodes) ** 0.5


def save_best_so_far(run, best: BestSnapshot, module: nn.Module, nominal, speeds) -> Path:
    """Write the best evaluated weights so far as the run's policy (a stopped run leaves
    one to use), without the final evaluation."""
    kept = copy.deepcopy(module)
    best.restore(kept)
    contract = PolicyContract.for_env(nominal, speeds)
    return save_policy(run.policy, kept, contract)


def finish_run(
    run: RunFolder,
    policy: nn.Module,
    nominal: BatchedEnv,
    *,
    recipe: str,
    task: str,
    started: float,
    episodes: int,
    seed: int,
    extra: dict | None = None,
    speeds: TrainedSpeeds | None = None,
    known_success: float | None = None,
) -> dict:
    """Save the run's policy with its contract (``speeds``: those it trained over),
    evaluate it in the nominal sim (or the twin trained for), write the run's summary
    and return it. ``extra`` goes into the contract's metadata and the summary.
    ``known_success``: a success rate already measured for these weights, reported
    instead of a new evaluation (``success_source`` in the summary says which)."""
    parameters = parameter_count(policy)
    contract = PolicyContract.for_env(nominal, speeds)
    contract = PolicyContract(
        **{
            **contract.to_dict(),
            "extra": {"recipe": recipe, "parameters": parameters, **(extra or {})},
        }
    )
    save_policy(run.policy, policy, contract)
    if known_success is None:
        success = evaluate(nominal, policy_actor(policy, nominal), episodes, seed)
        source = f"{episodes} fresh episodes"
    else:
        success, source = known_success, "the kept student's own evaluation"
    summary = {
        "task": task,
        "recipe": recipe,
        "success_rate_nominal": success,
        "success_source": source,
        "seconds": round(time.perf_counter() - started, 1),
        "policy": str(run.policy),
        "parameters": parameters,
        **(extra or {}),
    }
    run.write_json(runs.SUMMARY, summary)
    return summary
