"""``realgap train``: train a policy that uses only what the real arm has."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from dataclasses import fields as dataclass_fields
from pathlib import Path

from realgap.cli.task_help import TASK_HELP
from realgap.policy.networks import ARCHITECTURES


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a visual policy (distill: privileged teacher -> visual student; "
        "or end-to-end visual SAC)",
    )
    parser.add_argument("task", nargs="?", help=TASK_HELP + " (omit with --resume DIR)")
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
    parser.add_argument("--out", type=Path, help="run folder")
    parser.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=False,
        metavar="DIR",
        help="continue a run from its checkpoint: `--resume DIR` alone takes the task and "
        "arguments from DIR/config.json; with TASK --out DIR and options, they must match",
    )
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
        choices=sorted(ARCHITECTURES),
        default=None,
        help="distill: the student network (student: realgap's; desk_invariant: realgap's "
        "with each image standardized, for desks from black to white; squint: the "
        "reference's cheaper encoder; recurrent: realgap's with a memory); default from "
        "the task; sac always trains the reference's",
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
        "--checkpoint-every",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds between checkpoints in the run folder (default 120)",
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
    from realgap.train import distill, sac
    from realgap.train.common import training_worlds

    if isinstance(args.resume, str):  # `--resume DIR`: the run's own arguments
        return _report(resume_folder(Path(args.resume), args))
    if args.task is None or args.out is None:
        raise ConfigError("give TASK and --out DIR (or --resume DIR to continue a run)")
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
    config = replace(config, resume=bool(args.resume))
    if args.checkpoint_every is not None:
        config = replace(config, checkpoint_every_s=args.checkpoint_every)
    training_worlds(config)  # a bad --twin or --randomization file: one line, now
    if args.dry_run:
        print(json.dumps(asdict(config), indent=2))
        return 0
    recipe = sac if args.recipe == "sac" else distill
    return _report(recipe.main(config))


def resume_folder(folder: Path, args) -> dict:
    """Continue the run in ``folder`` with the arguments its config.json recorded."""
    from realgap.errors import ConfigError
    from realgap.train import distill, sac

    given = [flag for flag, value in _explicit(args).items() if value]
    if given:
        raise ConfigError(
            f"--resume {folder}: takes the run's own arguments; drop {', '.join(given)} "
            f"(or give TASK --out {folder} --resume with the same options)"
        )
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise ConfigError(f"{folder}: no config.json: not a realgap training run")
    values = json.loads(config_file.read_text())
    recipe = values.pop("recipe", None)
    module = {"distill": distill, "sac": sac}.get(recipe)
    if module is None:
        raise ConfigError(f"{config_file}: recipe {recipe!r} cannot be resumed")
    fields = {f.name for f in dataclass_fields(module.Args)}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ConfigError(f"{config_file}: unknown arguments {unknown} (another realgap version?)")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    return module.main(replace(module.Args(**values), resume=True, out=str(folder)))


def _explicit(args) -> dict:
    return {
        "TASK": args.task,
        "--out": args.out,
        "--recipe": args.recipe != "distill",
        "--seed": args.seed != 0,
        "--quick": args.quick,
        "--nominal": args.nominal,
        "--twin": args.twin,
        "--randomization": args.randomization,
        "--envs": args.envs,
        "--total-steps": args.total_steps,
        "--teacher-steps": args.teacher_steps,
        "--dagger-rounds": args.dagger_rounds,
        "--architecture": args.architecture,
        "--device": args.device,
        "--checkpoint-every": args.checkpoint_every,
    }


def _report(summary: dict) -> int:
    print(
        f"{summary['task']}: success {summary['success_rate_nominal']:.0%} in the nominal sim "
        f"after {summary['seconds']:.0f} s; policy ({summary['parameters']:,} parameters) "
        f"in {summary['policy']}"
    )
    return 0
