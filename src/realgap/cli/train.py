"""``realgap train``: train a policy that uses only what the real arm has."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a visual policy (distill: privileged teacher -> visual student; "
        "or end-to-end visual SAC)",
    )
    parser.add_argument("task", help="task name (Reach, PickCube, PlaceCube)")
    parser.add_argument(
        "--recipe",
        choices=["distill", "sac"],
        default="distill",
        help="distill (default on CPU) or sac (the Squint recipe, meant for a GPU)",
    )
    parser.add_argument(
        "--envs",
        type=int,
        default=None,
        help="parallel envs (sac default 1024: pass ~32-64 on a CPU)",
    )
    parser.add_argument("--total-steps", type=int, default=None, help="sac: env transitions")
    parser.add_argument("--out", type=Path, required=True, help="run folder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--teacher-steps",
        type=int,
        default=None,
        help="env steps for the PPO teacher (default from the recipe)",
    )
    parser.add_argument("--dagger-rounds", type=int, default=None, help="DAgger rounds")
    parser.add_argument("--nominal", action="store_true", help="train without domain randomization")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a tiny run (seconds) for smoke tests; not a useful policy",
    )
    parser.set_defaults(func=run)


QUICK = {
    "teacher_steps": 40_960,
    "num_envs": 64,
    "rollout_steps": 32,
    "dagger_rounds": 3,
    "dagger_steps": 40,
    "student_envs": 16,
    "eval_episodes": 16,
    "student_epochs": 4,
    "eval_every": 10,
}


SAC_QUICK = {
    "num_envs": 8,
    "total_steps": 1_600,
    "learning_starts": 400,
    "batch_size": 64,
    "eval_every": 100,
    "eval_episodes": 8,
}


def run(args) -> int:
    from dataclasses import replace

    from realgap.runtime import configure_torch_threads
    from realgap.sim.tasks import make_task
    from realgap.train import distill, sac

    configure_torch_threads()
    make_task(args.task)  # unknown names fail here, before any work
    if args.recipe == "sac":
        config = sac.Args(
            task=args.task, out=str(args.out), seed=args.seed, randomize=not args.nominal
        )
        if args.quick:
            config = replace(config, **SAC_QUICK)
        overrides = {"num_envs": args.envs, "total_steps": args.total_steps}
        config = replace(config, **{k: v for k, v in overrides.items() if v is not None})
        return _report(sac.main(config))
    config = distill.Args(
        task=args.task, out=str(args.out), seed=args.seed, randomize=not args.nominal
    )
    if args.quick:
        config = replace(config, **QUICK)
    overrides = {"teacher_steps": args.teacher_steps, "dagger_rounds": args.dagger_rounds}
    config = replace(config, **{k: v for k, v in overrides.items() if v is not None})
    if args.envs is not None:
        config = replace(config, num_envs=args.envs)
    return _report(distill.main(config))


def _report(summary: dict) -> int:
    print(
        f"{summary['task']}: success {summary['success_rate_nominal']:.0%} in the nominal sim "
        f"after {summary['seconds']:.0f} s; policy ({summary['parameters']:,} parameters) "
        f"in {summary['policy']}"
    )
    return 0
