"""``realgap train``: train a policy that uses only what the real arm has."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train", help="train a visual policy (privileged teacher -> visual student)"
    )
    parser.add_argument("task", help="task name (Reach, PickCube, PlaceCube)")
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


def run(args) -> int:
    from dataclasses import replace

    from realgap.runtime import configure_torch_threads
    from realgap.sim.tasks import make_task
    from realgap.train import distill

    configure_torch_threads()
    make_task(args.task)  # unknown names fail here, before any work
    config = distill.Args(
        task=args.task, out=str(args.out), seed=args.seed, randomize=not args.nominal
    )
    if args.quick:
        config = replace(config, **QUICK)
    overrides = {"teacher_steps": args.teacher_steps, "dagger_rounds": args.dagger_rounds}
    config = replace(config, **{k: v for k, v in overrides.items() if v is not None})
    summary = distill.main(config)
    print(
        f"{summary['task']}: success {summary['success_rate_nominal']:.0%} in the nominal sim "
        f"after {summary['seconds']:.0f} s; policy ({summary['parameters']:,} parameters) "
        f"in {summary['policy']}"
    )
    return 0
