"""Visual SAC recipe (the "Squint" recipe): end-to-end from the 16x16 wrist image.

Read top to bottom:
1. Parallel envs render the wrist image (rendered larger, area-downsampled to
   16x16) under full domain randomization; transitions go to a replay buffer.
2. Every ``1 / utd`` env transitions, one update of :class:`SacAgent`
   (``sac_agent.py``): the critic (encoder + two C51 heads), the entropy
   temperature, the actor every ``policy_frequency`` updates, the target critic.
3. Evaluation every ``eval_every`` iterations in the nominal sim (or the twin).

The defaults are for a 2-core CPU, chosen by measurement (docs/training.md);
``--device cuda`` selects the reference's published GPU settings
(:data:`GPU_DEFAULTS`: 1,024 envs, batch 512, UTD 0.25, temperature from 1.0).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields, replace

import numpy as np
import torch
from rich.progress import Progress

from realgap import runs
from realgap.errors import ConfigError
from realgap.runs import RunFolder
from realgap.sim.batched_env import BatchedEnv
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
    policy_actor,
    save_best_so_far,
    trained_speeds,
    training_worlds,
)
from realgap.train.sac_agent import Replay, SacAgent, SacHyper


@dataclass
class Args:
    task: str = "Reach"
    """Registered task name."""
    out: str = "runs/sac"
    """Run folder."""
    seed: int = 0
    """Seed for envs and torch."""
    randomize: bool = True
    """Train under domain randomization (False: exactly the twin, no randomization)."""
    randomization: str | None = None
    """A randomization TOML (``[randomization]`` widths); None: the default widths."""
    twin: str | None = None
    """The twin to train in: a calibration.json or a TwinParams TOML. The randomization
    is centred on it and evaluation runs in it; None: the nominal twin."""
    device: str = "cpu"
    """``cpu``, ``cuda`` (the reference's GPU settings, see :data:`GPU_DEFAULTS`) or
    ``auto`` (cuda where a GPU exists). Rendering stays on the CPU either way."""
    num_envs: int = 32
    """Parallel envs (the reference: 1,024 on a GPU)."""
    total_steps: int = 80_000
    """Total env transitions (Reach with drawn desk colours: 90% first evaluated
    between 36k and 60k on three seeds; the weakest seed's best policy came after 60k,
    docs/training.md)."""
    learning_starts: int = 2_000
    """Random-action transitions before updates begin."""
    buffer_size: int = 300_000
    """Replay capacity (transitions)."""
    batch_size: int = 512
    """Minibatch size (the reference's). Batch 256 at UTD 0.5, the same samples per
    transition, did as well pooled over three Reach seeds but worse on the weakest
    (docs/training.md)."""
    utd: float = 0.25
    """Gradient updates per env transition (the reference's, there with 1,024 envs)."""
    alpha_init: float = 0.1
    """Starting entropy temperature (the reference: 1.0). On a CPU's budget of a few
    thousand updates, 0.1 gives the actor a value signal sooner; not compared here."""
    gamma: float = 0.9
    """Discount."""
    tau: float = 0.01
    """Target network Polyak rate."""
    lr: float = 3e-4
    """Adam learning rate (critic, actor, entropy)."""
    policy_frequency: int = 4
    """Critic updates per actor update."""
    atoms: int = 101
    """C51 support size."""
    v_min: float = -20.0
    """Lowest value on the support."""
    v_max: float = 20.0
    """Highest value on the support."""
    eval_every: int = 30
    """Evaluate every N iterations (one iteration steps every env once)."""
    eval_episodes: int = 64
    """Episodes per evaluation during training (the same episodes every time, so
    evaluations compare policies, not draws; 32 wobbled by +-10 points)."""
    keep_best: bool = True
    """Ship the best evaluated policy, not the last: SAC's success keeps moving late in
    training (Reach, seed 1: 81-97% over its last 15k transitions). The summary's
    success is measured on fresh episodes either way."""
    final_episodes: int = 64
    """Episodes of the final evaluation in the nominal sim (the summary's success)."""
    checkpoint_every_s: float = EVERY_S
    """Seconds between checkpoints (weights, optimizers, the replay buffer, every random
    state); a run killed in between resumes from the last one."""
    resume: bool = False
    """Continue the run in ``out`` from its checkpoint (its arguments must match)."""
    progress: bool = True
    """Show a progress bar."""


GPU_DEFAULTS = {
    "num_envs": 1024,
    "total_steps": 1_500_000,
    "learning_starts": 5_000,
    "buffer_size": 1_000_000,
    "batch_size": 512,
    "utd": 0.25,
    "alpha_init": 1.0,
}
"""The reference's published settings (its ``train_squint.py``), for ``--device cuda``."""

QUICK = {
    "num_envs": 8,
    "total_steps": 1_200,
    "learning_starts": 400,
    "batch_size": 64,
    "utd": 0.25,
    "eval_every": 100,
    "eval_episodes": 8,
    "final_episodes": 8,
}
"""Overrides for a tiny run (seconds): smoke tests and ``--quick``; not a useful policy."""


def select_device(name: str) -> torch.device:
    """``cpu``, ``cuda`` (refused with a clear error where no GPU is visible) or ``auto``."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            "--device cuda: torch sees no GPU (is a CUDA build of torch installed? "
            "README: GPU users); use --device cpu"
        )
    if name not in ("cpu", "cuda"):
        raise ConfigError(f"--device: {name!r} is not one of cpu, cuda, auto")
    return torch.device(name)


def args_for_device(device: str, **overrides) -> Args:
    """``Args`` for a device: the CPU defaults, or the reference's on a GPU."""
    gpu = select_device(device).type == "cuda"
    return replace(Args(device=device), **(GPU_DEFAULTS if gpu else {}), **overrides)


def hyper_from(args: Args) -> SacHyper:
    """The update's settings, read from ``Args`` by field name (one list, SacHyper's)."""
    return SacHyper(
        **{f.name: getattr(args, f.name) for f in fields(SacHyper) if hasattr(args, f.name)}
    )


def main(args: Args) -> dict:
    """Train; returns the summary written to ``out/summary.json``. With ``args.resume``,
    continues from the run's checkpoint; a first Ctrl-C or SIGTERM stops at the end of
    the iteration with a checkpoint and the best policy so far."""
    device = select_device(args.device)
    if not args.checkpoint_every_s > 0:
        raise ConfigError(f"checkpoint_every_s must be positive, got {args.checkpoint_every_s}")
    run = RunFolder(args.out)
    checkpointer = Checkpointer(run, args.checkpoint_every_s)
    saved = (
        resume_state(run, "sac", asdict(args), checkpointer, field_defaults(Args))
        if args.resume
        else None
    )
    if saved is None:
        run.write_config("sac", asdict(args))
    started = time.perf_counter() - (saved["elapsed_s"] if saved else 0.0)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    randomization, twin = training_worlds(args)
    env = BatchedEnv(
        args.task, args.num_envs, randomization=randomization, twin=twin, seed=args.seed
    )
    nominal = BatchedEnv(args.task, min(32, args.eval_episodes), twin=twin, seed=args.seed + 1)
    size = env.config.image_size
    agent = SacAgent(size, hyper_from(args), device)
    replay = Replay(args.buffer_size, size)
    obs, _ = env.reset(seed=args.seed)
    iterations = max(1, args.total_steps // args.num_envs)
    # Fractional update-to-data ratios carry over between iterations.
    update_credit, first_iteration = 0.0, 0
    keep_rows = None if saved is None else saved["metrics_rows"]
    columns = ["env_steps", "critic_loss", "actor_loss", "alpha", "success_rate"]
    metrics = run.metrics(columns, started, keep_rows)
    policy = agent.policy()
    best, best_env_steps = BestSnapshot(policy, later_wins_ties=True), 0
    if saved is not None:
        obs, update_credit, best_env_steps = (
            saved["obs"],
            saved["update_credit"],
            saved["best_step"],
        )
        first_iteration = saved["iteration"]
        restore_sac(saved, agent, replay, env, rng, best, checkpointer)

    def checkpoint(iteration: int) -> None:
        state = sac_state(agent, replay, env, rng, best, checkpointer)
        state.update(
            phase="sac",
            iteration=iteration,
            elapsed_s=time.perf_counter() - started,
            metrics_rows=metrics.rows,
            obs=obs,
            update_credit=update_credit,
            best_step=best_env_steps,
        )
        if checkpointer.save(state):  # only now is the older replay chunk unneeded
            checkpointer.prune({state["replay"]["chunk"]})

    with StopSignals() as stop, Progress(disable=not args.progress, transient=True) as progress:
        bar = progress.add_task("visual SAC", total=iterations, completed=first_iteration)
        for iteration in range(first_iteration, iterations):
            steps = (iteration + 1) * args.num_envs
            if steps <= args.learning_starts:
                action = rng.uniform(-1, 1, (args.num_envs, 6)).astype(np.float32)
            else:
                action = agent.act(obs)
            agent.observe(obs["state"])
            next_obs, reward, terminated, truncated, info = env.step(action)
            real_next = next_obs
            if "final_observation" in info:
                real_next = {k: v.copy() for k, v in next_obs.items()}
                done_ids = np.nonzero(terminated | truncated)[0]
                for key in real_next:
                    real_next[key][done_ids] = info["final_observation"][key][done_ids]
            replay.add(obs, action, reward, real_next, terminated.astype(np.float32))
            obs = next_obs
            row = {"env_steps": steps}
            if steps > args.learning_starts:
                update_credit += args.utd * args.num_envs
                while update_credit >= 1:
                    update_credit -= 1
                    row.update(agent.update(replay.sample(args.batch_size, rng, device)))
            if (iteration + 1) % args.eval_every == 0 or iteration + 1 == iterations:
                policy = agent.policy()
                row["success_rate"] = evaluate(
                    nominal, policy_actor(policy, nominal), args.eval_episodes, args.seed + 5
                )
                if best.offer(row["success_rate"], policy):
                    best_env_steps = steps
                progress.update(bar, description=f"visual SAC success {row['success_rate']:.2f}")
            metrics.log(row)
            progress.update(bar, advance=1)
            if stop.requested or checkpointer.due():
                checkpoint(iteration + 1)
            if stop.requested:
                metrics.close()
                env.close()
                save_best_so_far(run, best, agent.policy(), nominal, trained_speeds(args))
                nominal.close()
                raise TrainingStopped(
                    f"stopped after {steps:,} transitions: checkpoint and best policy so far "
                    f"in {run.path}; {resume_hint(run.path)}",
                    stop.requested,
                )
    metrics.close()
    env.close()
    if args.keep_best:
        policy = agent.policy()
        best.restore(policy)
    kept = {
        "kept": "best" if args.keep_best else "last",
        "best_evaluation": best.score,
        "best_env_steps": best_env_steps,
    }
    summary = finish_run(
        run,
        policy,
        nominal,
        recipe="sac",
        task=args.task,
        started=started,
        episodes=args.final_episodes,
        seed=args.seed + 11,
        extra=kept,
        speeds=trained_speeds(args),
    )
    nominal.close()
    summary["checkpoints"] = checkpointer.report()
    run.write_json(runs.SUMMARY, summary)
    return summary


REPLAY_FIELDS = ("image", "next_image", "state", "next_state", "action", "reward", "done")


def sac_state(agent: SacAgent, replay: Replay, env, rng, best, checkpointer) -> dict:
    """The agent, the replay (its filled part, as one chunk per checkpoint), the env and
    every random state."""
    filled = {name: getattr(replay, name)[: replay.size] for name in REPLAY_FIELDS}
    chunk = checkpointer.save_chunk(f"replay_{replay.index:08d}_{replay.size:08d}", filled)
    return {
        "networks": {
            name: getattr(agent, name).state_dict()
            for name in ("encoder", "critic", "critic_target", "actor")
        },
        "optimizers": {
            name: getattr(agent, name).state_dict()
            for name in ("critic_opt", "actor_opt", "alpha_opt")
        },
        "log_alpha": agent.log_alpha.detach().clone(),
        "critic_updates": agent.critic_updates,
        "replay": {"chunk": chunk, "index": replay.index, "size": replay.size},
        "env": env.get_state(),
        "rng": rng.bit_generator.state,
        "torch_rng": torch.get_rng_state(),
        "best": (best.score, best.state),
    }


def restore_sac(state: dict, agent: SacAgent, replay: Replay, env, rng, best, checkpointer):
    for name, weights in state["networks"].items():
        getattr(agent, name).load_state_dict(weights)
    for name, values in state["optimizers"].items():
        getattr(agent, name).load_state_dict(values)
    with torch.no_grad():
        agent.log_alpha.copy_(state["log_alpha"].to(agent.log_alpha.device))
    agent.critic_updates = state["critic_updates"]
    saved = checkpointer.chunk(state["replay"]["chunk"])
    replay.size, replay.index = state["replay"]["size"], state["replay"]["index"]
    for name in REPLAY_FIELDS:
        getattr(replay, name)[: replay.size] = saved[name]
    env.set_state(state["env"])
    rng.bit_generator.state = state["rng"]
    torch.set_rng_state(state["torch_rng"])
    best.score, best.state = state["best"]
