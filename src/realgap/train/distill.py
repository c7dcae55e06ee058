"""Distill recipe: a privileged state-based PPO teacher, then a visual DAgger student.

Read top to bottom:
1. Teacher: PPO on batched envs *without rendering*, observing the 12 joint
   numbers plus privileged state (cube and pinch positions...), under the
   task's domain randomization.
2. Student: the visual policy that ships (16x16 wrist image + 12 joint numbers;
   ``recurrent``: with a memory, regressed on whole episodes).
   DAgger: the student acts (after a first teacher-driven round), the teacher
   labels every visited state, the labelled states are aggregated and the
   student is regressed onto them. Because the student acts, it is trained on
   its own failure states (dropped cubes, views that lost the cube), with the
   full visual randomization on.
3. Evaluation in the nominal sim, checkpoint with its contract, metrics.csv.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import torch
from rich.progress import Progress

from realgap import runs
from realgap.errors import ConfigError
from realgap.policy.networks import StateTeacher
from realgap.runs import RunFolder
from realgap.sim.batched_env import BatchedEnv
from realgap.sim.tasks import make_task
from realgap.train.checkpoint import (
    EVERY_S,
    Checkpointer,
    StopSignals,
    TrainingStopped,
    field_defaults,
    resume_hint,
    resume_state,
)
from realgap.train.common import (
    BestSnapshot,
    evaluate,
    finish_run,
    save_best_so_far,
    trained_speeds,
    training_worlds,
)
from realgap.train.dagger import DaggerLoop, teacher_obs


@dataclass
class Args:
    task: str = "Reach"
    """Registered task name."""
    out: str = "runs/distill"
    """Run folder: config.json, metrics.csv, teacher.pt and the exported policy/."""
    seed: int = 0
    """Seed for envs and torch."""
    randomize: bool = True
    """Train under domain randomization (False: exactly the twin, no randomization)."""
    randomization: str | None = None
    """A randomization TOML (``[randomization]`` widths); None: the default widths."""
    twin: str | None = None
    """The twin to train in: a calibration.json or a TwinParams TOML. The randomization
    is centred on it and evaluation runs in it; None: the nominal twin."""
    num_envs: int = 64
    """Parallel envs for teacher PPO."""
    teacher_steps: int = 150_000
    """Total env steps for the PPO teacher."""
    rollout_steps: int = 32
    """Steps per env per PPO rollout."""
    ppo_epochs: int = 4
    """Passes over each rollout."""
    minibatches: int = 4
    """Minibatches per pass."""
    gamma: float = 0.95
    """Discount."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip: float = 0.2
    """PPO ratio clip."""
    teacher_lr: float = 1e-3
    """Adam learning rate of the teacher."""
    teacher: str = "ppo"
    """Who labels the student's states: ``ppo`` (the privileged state teacher trained
    here) or ``scripted`` (the privileged IK expert of ``realgap.sim.scripted``)."""
    student_envs: int = 32
    """Parallel rendering envs for DAgger."""
    dagger_rounds: int = 10
    """DAgger rounds (round 0 is driven by the teacher)."""
    dagger_steps: int = 60
    """Steps per env per DAgger round."""
    student_epochs: int = 4
    """Passes over the aggregated dataset per round (when ``student_updates`` is None)."""
    student_updates: int | None = None
    """Gradient steps per DAgger round, whatever the dataset's size (None: the
    ``student_epochs`` passes, whose cost grows with every round)."""
    student_eval_every: int = 1
    """Evaluate the student every N DAgger rounds (and after the last): a copy, beside
    the next N rounds, its score used when the next evaluation is due
    (:mod:`realgap.train.evaluations`)."""
    expert_driven: float = 0.0
    """Fraction of the DAgger envs the teacher drives in every round (the rest follow the
    student; the teacher labels all): more data near the end of the task, which a weak
    student rarely reaches."""
    student_batch: int = 256
    """Student minibatch size."""
    student_lr: float = 1e-3
    """Adam learning rate of the student."""
    architecture: str = "student"
    """The student network: ``student`` (realgap's 3x3 encoder), ``desk_invariant``
    (the same with each image standardized: desks from black to white), ``squint`` (the
    reference recipe's cheaper 4x4 encoder and layer-normed head) or ``recurrent``
    (realgap's with a memory, trained on whole episodes)."""
    sequence_batch: int = 8
    """Episodes per minibatch for a recurrent student."""
    student_average: float = 0.0
    """Decay (per gradient step) of an exponential moving average of the student's
    weights; the average, not the last weights, is what is evaluated, kept and shipped,
    while the student as trained keeps collecting the DAgger data (0: no average)."""
    buffer_size: int = 100_000
    """Aggregated DAgger samples kept (oldest dropped first)."""
    eval_episodes: int = 64
    """Episodes per evaluation."""
    eval_every: int = 5
    """Evaluate the teacher every N PPO updates."""
    init_student: str | None = None
    """Warm start: a policy folder whose weights the student starts from (``realgap
    adapt`` retrains the user's policy for a measured arm instead of from scratch)."""
    init_teacher: str | None = None
    """A ``teacher.pt`` to start PPO from; with ``teacher_steps = 0`` it labels as is
    (the privileged teacher sees no image, so a new camera does not change it)."""
    time_budget_s: float | None = None
    """Wall-clock budget for training: the teacher stops at 40% of it, the student's
    DAgger rounds when it is spent (None: run every step and round)."""
    eval_speed: tuple[float, float] | None = None
    """(control Hz, action fraction) the student's evaluations run at: ``realgap adapt``
    evaluates at the speed the arm will be run at (None: training's 10 Hz x 1)."""
    plateau_evals: int = 0
    """Stop once this many evaluations in a row have not beaten the last one that made
    progress by more than its noise (one binomial standard error at ``eval_episodes``;
    the best evaluated student is shipped either way). 0: never; ``realgap adapt``
    stops a retraining that has stopped gaining."""
    stop_at_success: float | None = None
    """Stop once an evaluation reaches this success (None: never). ``realgap adapt``
    gives the old policy's success in the nominal twin: reaching it in the arm's twin
    closes the gap, and further rounds only spend the budget."""
    final_evaluation: bool = True
    """Evaluate the shipped student once more, on fresh episodes, for the summary
    (False: report its best evaluation's score instead; ``realgap adapt`` evaluates
    the adapted policy in the arm's twin on its layout right after, so a second
    evaluation there would only cost time: 64 slow-speed episodes)."""
    checkpoint_every_s: float = EVERY_S
    """Seconds between checkpoints (written at the end of a DAgger round); a run killed
    in between resumes from the last one (``realgap train --resume DIR``)."""
    resume: bool = False
    """Continue the run in ``out`` from its checkpoint (its arguments must match)."""
    progress: bool = True
    """Show progress bars."""
    extra: dict = field(default_factory=dict)
    """Free-form notes stored in config.json."""


QUICK = {
    "teacher_steps": 40_960,
    "num_envs": 64,
    "rollout_steps": 32,
    "dagger_rounds": 3,
    "dagger_steps": 40,
    "student_envs": 16,
    "eval_episodes": 16,
    "student_epochs": 4,
    "student_updates": 20,
    "eval_every": 10,
}
"""Overrides for a tiny run (seconds): smoke tests and ``--quick``; not a useful policy."""


def args_for_task(task: str, **overrides) -> Args:
    """``Args`` with the task's own training defaults (``Task.train_defaults``), then
    ``overrides``: what ``realgap train`` and benchmarks/bench_train.py both use."""
    defaults = make_task(task).train_defaults.get("distill", {})
    return Args(task=task, **{**defaults, **overrides})


def train_teacher(args: Args, log, deadline: float = float("inf")) -> StateTeacher:
    """PPO on the privileged state; stops early at ``deadline`` (perf_counter seconds)."""
    randomization, twin = training_worlds(args)
    env = BatchedEnv(
        args.task,
        args.num_envs,
        randomization=randomization,
        twin=twin,
        render=False,
        privileged=True,
        seed=args.seed,
    )
    eval_env = BatchedEnv(
        args.task, 32, twin=twin, render=False, privileged=True, seed=args.seed + 1
    )
    obs, _ = env.reset(seed=args.seed)
    teacher = StateTeacher(teacher_obs(obs).shape[1])
    if args.init_teacher:
        teacher.load_state_dict(
            torch.load(args.init_teacher, map_location="cpu", weights_only=True)
        )
        if args.teacher_steps == 0:
            env.close()
            eval_env.close()
            return teacher
    optimizer = torch.optim.Adam(teacher.parameters(), lr=args.teacher_lr, eps=1e-5)
    n, horizon = args.num_envs, args.rollout_steps
    updates = max(1, args.teacher_steps // (n * horizon))

    def success_rate() -> float:
        return evaluate(
            eval_env,
            lambda o: teacher.act_deterministic(teacher_obs(o)).detach().numpy(),
            args.eval_episodes,
            args.seed + 7,
        )

    # PPO's success rate wobbles between evaluations; keep the best evaluated teacher.
    best = BestSnapshot(teacher)
    with Progress(disable=not args.progress, transient=True) as progress:
        bar = progress.add_task("teacher (PPO)", total=updates)
        for update in range(updates):
            buffers = {k: [] for k in ("obs", "action", "logp", "value", "reward", "done")}
            for _ in range(horizon):
                t_obs = teacher_obs(obs)
                teacher.norm.update(t_obs)
                with torch.no_grad():
                    dist = teacher.distribution(t_obs)
                    action = dist.sample()
                    value = teacher.value(t_obs)
                obs, reward, terminated, truncated, info = env.step(action.numpy())
                reward = torch.from_numpy(reward)
                if truncated.any():  # bootstrap truncated episodes from their final state
                    final = teacher_obs(info["final_observation"])
                    with torch.no_grad():
                        bootstrap = teacher.value(final)
                    reward = reward + args.gamma * bootstrap * torch.from_numpy(truncated)
                for key, item in (
                    ("obs", t_obs),
                    ("action", action),
                    ("logp", dist.log_prob(action).sum(-1)),
                    ("value", value),
                    ("reward", reward),
                    ("done", torch.from_numpy(terminated | truncated).float()),
                ):
                    buffers[key].append(item)
            with torch.no_grad():
                next_value = teacher.value(teacher_obs(obs))
            b = {k: torch.stack(v) for k, v in buffers.items()}
            advantages = torch.zeros_like(b["reward"])
            last = torch.zeros(n)
            for t in reversed(range(horizon)):
                following = next_value if t == horizon - 1 else b["value"][t + 1]
                nonterminal = 1.0 - b["done"][t]
                delta = b["reward"][t] + args.gamma * following * nonterminal - b["value"][t]
                last = delta + args.gamma * args.gae_lambda * nonterminal * last
                advantages[t] = last
            returns = advantages + b["value"]
            flat = {k: v.reshape(n * horizon, *v.shape[2:]) for k, v in b.items()}
            flat_adv, flat_ret = advantages.reshape(-1), returns.reshape(-1)
            size = n * horizon // args.minibatches
            for _ in range(args.ppo_epochs):
                for idx in torch.randperm(n * horizon).split(size):
                    dist = teacher.distribution(flat["obs"][idx])
                    logp = dist.log_prob(flat["action"][idx]).sum(-1)
                    ratio = (logp - flat["logp"][idx]).exp()
                    adv = flat_adv[idx]
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                    policy_loss = -torch.min(
                        ratio * adv, ratio.clamp(1 - args.clip, 1 + args.clip) * adv
                    ).mean()
                    value_loss = 0.5 * ((teacher.value(flat["obs"][idx]) - flat_ret[idx]) ** 2)
                    loss = policy_loss + 0.5 * value_loss.mean()
                    optimizer.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(teacher.parameters(), 0.5)
                    optimizer.step()
            row = {
                "phase": "teacher",
                "update": update + 1,
                "env_steps": (update + 1) * n * horizon,
                "reward": float(b["reward"].mean()),
            }
            if (update + 1) % args.eval_every == 0 or update + 1 == updates:
                row["success_rate"] = success_rate()
                best.offer(row["success_rate"], teacher)
            log(row)
            progress.update(
                bar, advance=1, description=f"teacher (PPO) success {row.get('success_rate', '-')}"
            )
            if time.perf_counter() > deadline:
                log({"phase": "teacher_budget_spent", "update": update + 1})
                break
    best.restore(teacher)
    log({"phase": "teacher_best", "success_rate": best.score})
    env.close()
    eval_env.close()
    return teacher


def _deadline(args: Args, started: float, share: float) -> float:
    """When a phase must stop: ``share`` of the budget after ``started``."""
    if args.time_budget_s is None:
        return float("inf")
    return started + share * args.time_budget_s


def main(args: Args) -> dict:
    """Train teacher and student; returns the summary written to ``out/summary.json``.
    With ``args.resume``, continues the run in ``out`` from its checkpoint; a first
    Ctrl-C or SIGTERM stops at the end of the round with a checkpoint and the best
    policy so far (:class:`~realgap.train.checkpoint.TrainingStopped`)."""
    if args.teacher not in ("ppo", "scripted"):
        raise ConfigError(f"teacher must be 'ppo' or 'scripted', got {args.teacher!r}")
    if not 0.0 <= args.expert_driven <= 1.0:
        raise ConfigError(f"expert_driven must be a fraction in [0, 1], got {args.expert_driven}")
    if args.sequence_batch < 1:
        raise ConfigError(f"sequence_batch must be at least 1, got {args.sequence_batch}")
    if not 0.0 <= args.student_average < 1.0:
        raise ConfigError(
            f"student_average must be a decay in [0, 1) (0: none), got {args.student_average}"
        )
    if not args.checkpoint_every_s > 0:
        raise ConfigError(f"checkpoint_every_s must be positive, got {args.checkpoint_every_s}")
    run = RunFolder(args.out)
    checkpointer = Checkpointer(run, args.checkpoint_every_s)
    saved = (
        resume_state(run, "distill", asdict(args), checkpointer, field_defaults(Args))
        if args.resume
        else None
    )
    if saved is None:
        run.write_config("distill", asdict(args))
    started = time.perf_counter() - (saved["elapsed_s"] if saved else 0.0)
    torch.manual_seed(args.seed)
    columns = ["phase", "update", "env_steps", "samples", "reward", "loss", "success_rate"]
    keep_rows = None if saved is None else saved["metrics_rows"]
    with StopSignals() as stop, run.metrics(columns, started, keep_rows) as metrics:
        teacher = None
        if args.teacher == "ppo":
            if saved is not None:  # the teacher was trained before the checkpoint
                teacher = load_teacher(run.file(runs.TEACHER))
            else:
                teacher = train_teacher(args, metrics.log, _deadline(args, started, 0.4))
                weights = {k: v.cpu() for k, v in teacher.state_dict().items()}
                torch.save(weights, run.file(runs.TEACHER))
        loop = DaggerLoop(args, teacher, checkpointer)
        if saved is not None:
            loop.restore(saved)
        student = loop.run(
            metrics.log, _deadline(args, started, 1.0), stop, started, lambda: metrics.rows
        )
        if student is None:  # a stop was requested: the best so far ships, then stop
            with loop.evaluation_env() as nominal:
                save_best_so_far(run, loop.best, loop.shipped, nominal, trained_speeds(args))
            raise TrainingStopped(
                f"stopped after round {loop.round}: checkpoint and best policy so far in "
                f"{run.path}; {resume_hint(run.path)}",
                stop.requested,
            )
    nominal = loop.evaluation_env()
    summary = finish_run(
        run,
        student,
        nominal,
        recipe="distill",
        task=args.task,
        started=started,
        episodes=max(args.eval_episodes, 64),
        seed=args.seed + 11,
        extra={"task": args.task, "eval_speed": args.eval_speed},
        speeds=trained_speeds(args),
        known_success=None if args.final_evaluation else loop.best.score,
    )
    nominal.close()
    summary["checkpoints"] = checkpointer.report()
    run.write_json(runs.SUMMARY, summary)
    return summary


def train_student(args: Args, teacher: StateTeacher | None, log, deadline=float("inf")):
    """The student phase alone (no checkpoints): the shipped student and its nominal env."""
    loop = DaggerLoop(args, teacher, Checkpointer(RunFolder(args.out), float("inf")))
    student = loop.run(log, deadline)
    return student, loop.evaluation_env()


def load_teacher(path) -> StateTeacher:
    state = torch.load(path, map_location="cpu", weights_only=True)
    teacher = StateTeacher(state["norm.mean"].shape[0])
    teacher.load_state_dict(state)
    return teacher
