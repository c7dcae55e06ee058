"""``realgap train``: train a policy that uses only what the real arm has."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

from realgap.cli.task_help import TASK_HELP


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a visual policy (distill: privileged teacher -> visual student; "
        "or end-to-end visual SAC)",
    )
    parser.add_argument("task", help=TASK_HELP)
    parser.add_argument(
        "--recipe",
        choices=["distill", "sac"],
        default="distill",
        help="distill (default) or sac (the reference's end-to-end visual SAC)",
    )
    parser.add_argument(
        "--device",
        choices=["cpu", "cuda", "auto"],
        default=None,
        help="sac: where the networks train (cuda: the reference's GPU settings, "
        "1,024 envs; auto: cuda where a GPU exists); default cpu",
    )
    parser.add_argument(
        "--envs",
        type=int,
        default=None,
        help="parallel envs (default from the recipe)",
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
    parser.add_argument(
        "--architecture",
        choices=["student", "squint", "recurrent"],
        default=None,
        help="distill: the student network (student: realgap's; squint: the reference's "
        "cheaper encoder; recurrent: realgap's with a memory); default from the task; sac "
        "always trains the reference's",
    )
    parser.add_argument("--nominal", action="store_true", help="train without domain randomization")
    parser.add_argument(
        "--twin",
        type=Path,
        help="train in this twin: a calibration.json or a TwinParams TOML (docs/twin.md); "
        "the randomization is centred on it",
    )
    parser.add_argument(
        "--randomization", type=Path, help="randomization TOML (widths; docs/twin.md)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the resolved training arguments and stop"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a tiny run (seconds) for smoke tests; not a useful policy",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from realgap.errors import ConfigError
    from realgap.runtime import configure_torch_threads
    from realgap.train import distill, sac

    configure_torch_threads()
    files = {
        "twin": str(args.twin) if args.twin else None,
        "randomization": str(args.randomization) if args.randomization else None,
    }
    common = {"out": str(args.out), "seed": args.seed, "randomize": not args.nominal, **files}
    if args.recipe == "sac":
        if args.architecture not in (None, "squint"):
            raise ConfigError("--architecture: sac trains the reference's network (squint)")
        overrides = {"num_envs": args.envs, "total_steps": args.total_steps}
        config = sac.args_for_device(
            args.device or "cpu", task=args.task, **common, **(sac.QUICK if args.quick else {})
        )
    else:
        if args.device not in (None, "cpu"):
            raise ConfigError("--device: the distill recipe trains on the CPU; --device is for sac")
        overrides = {
            "teacher_steps": args.teacher_steps,
            "dagger_rounds": args.dagger_rounds,
            "num_envs": args.envs,
            "architecture": args.architecture,
        }
        # The task's own training defaults (e.g. PlaceCube's scripted teacher), then
        # --quick, then explicit options.
        config = distill.args_for_task(args.task, **common, **(distill.QUICK if args.quick else {}))
    config = replace(config, **{k: v for k, v in overrides.items() if v is not None})
    if args.dry_run:
        print(json.dumps(asdict(config), indent=2))
        return 0
    recipe = sac if args.recipe == "sac" else distill
    return _report(recipe.main(config))


def _report(summary: dict) -> int:
    print(
        f"{summary['task']}: success {summary['success_rate_nominal']:.0%} in the nominal sim "
        f"after {summary['seconds']:.0f} s; policy ({summary['parameters']:,} parameters) "
        f"in {summary['policy']}"
    )
    return 0
