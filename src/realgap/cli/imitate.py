"""``realgap demos`` / ``realgap imitate`` / ``realgap cotrain``: imitation learning."""

from __future__ import annotations

from pathlib import Path

from realgap.cli.deploy import add_world_arguments
from realgap.errors import ConfigError


def register(subparsers) -> None:
    demos = subparsers.add_parser(
        "demos", help="record scripted-expert demonstrations (sim, or a fake arm) as a dataset"
    )
    demos.add_argument("task", help="PickCube, PlaceCube or Reach")
    add_world_arguments(demos, worlds=("sim", "fake"), default="sim")
    demos.add_argument("--episodes", type=int, default=100, help="successful episodes to keep")
    demos.add_argument("--out", type=Path, required=True, help="dataset folder (LeRobot layout)")
    demos.add_argument(
        "--noise",
        type=float,
        default=0.0,
        help="sim only: DART noise on executed actions (labels stay the expert's)",
    )
    demos.set_defaults(func=run_demos)

    imitate = subparsers.add_parser(
        "imitate", help="train a chunked-action BC policy on sim and/or real demonstrations"
    )
    imitate.add_argument("--sim", type=Path, help="sim demonstrations")
    imitate.add_argument("--real", type=Path, help="real (or fake-arm) demonstrations")
    imitate.add_argument("--mix", type=float, default=0.5, help="fraction of each batch from real")
    imitate.add_argument("--init", type=Path, help="fine-tune this policy folder")
    imitate.add_argument(
        "--policy",
        choices=("chunk", "act"),
        default="chunk",
        help="chunk: built-in chunked BC (CPU, minutes); act: LeRobot's ACT (the real extra)",
    )
    imitate.add_argument("--steps", type=int, default=10000, help="gradient steps")
    imitate.add_argument(
        "--n-action-steps", type=int, default=2, help="targets played before planning again"
    )
    imitate.add_argument(
        "--ensemble", type=float, help="ACT's temporal ensembling coefficient (e.g. 0.01)"
    )
    imitate.add_argument("--out", type=Path, required=True, help="run folder")
    imitate.add_argument("--seed", type=int, default=0)
    imitate.set_defaults(func=run_imitate)

    cotrain = subparsers.add_parser(
        "cotrain", help="the experiment: sim-only vs fine-tuned on real vs co-trained"
    )
    cotrain.add_argument("--task", default="PickCube")
    cotrain.add_argument("--profile", default="typical_so101")
    cotrain.add_argument("--sim-demos", type=int, default=200)
    cotrain.add_argument("--real-demos", type=int, default=10)
    cotrain.add_argument(
        "--mix",
        type=float,
        nargs="+",
        default=[0.1, 0.3],
        help="co-training runs: fraction of each batch from the real demos",
    )
    cotrain.add_argument("--sim-noise", type=float, default=0.3, help="DART noise, sim demos")
    cotrain.add_argument("--policy", choices=("chunk", "act"), default="chunk")
    cotrain.add_argument("--steps", type=int, default=10000, help="sim-only and co-training")
    cotrain.add_argument("--finetune-steps", type=int, default=300)
    cotrain.add_argument("--trials", type=int, default=78, help="54 inside the square")
    cotrain.add_argument("--out", type=Path, default=Path("runs/cotrain"))
    cotrain.add_argument("--seed", type=int, default=0)
    cotrain.set_defaults(func=run_cotrain)


def run_demos(args) -> int:
    from realgap.imitate.demos import record_fake_demos, record_sim_demos
    from realgap.sim.tasks import make_task

    make_task(args.task)
    if args.noise and args.world != "sim":
        raise ConfigError("--noise is for sim demonstrations; a real operator's noise is their own")
    if args.world == "sim":
        result = record_sim_demos(args.task, args.episodes, args.out, args.seed, noise=args.noise)
    else:
        result = record_fake_demos(args.task, args.profile, args.episodes, args.out, args.seed)
    print(
        f"wrote {args.out}: {result['episodes']} successful episodes of {result['tried']} "
        f"(expert {result['expert_success']:.0%})"
    )
    return 0


def run_imitate(args) -> int:
    from realgap.imitate import train

    summary = train.main(
        train.Args(
            out=str(args.out),
            sim=str(args.sim) if args.sim else None,
            real=str(args.real) if args.real else None,
            mix=args.mix,
            init=str(args.init) if args.init else None,
            steps=args.steps,
            seed=args.seed,
            policy=args.policy,
            n_action_steps=args.n_action_steps,
            ensemble=args.ensemble,
        )
    )
    print(
        f"{summary['task']}: trained on {summary['frames']} frames in {summary['seconds']:.0f} s; "
        f"policy in {summary['policy']}"
    )
    return 0


def run_cotrain(args) -> int:
    from realgap.imitate.experiment import ExperimentConfig, run_experiment

    run_experiment(
        ExperimentConfig(
            out=args.out,
            task=args.task,
            profile=args.profile,
            sim_demos=args.sim_demos,
            real_demos=args.real_demos,
            mixes=tuple(args.mix),
            sim_noise=args.sim_noise,
            policy=args.policy,
            steps=args.steps,
            finetune_steps=args.finetune_steps,
            trials=args.trials,
            seed=args.seed,
        )
    )
    return 0
