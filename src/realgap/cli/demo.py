"""``realgap demo``: train, deploy on a fake arm, measure the gap, write the report."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="the main job: train Reach, evaluate in sim and on a fake arm, report the gap",
    )
    parser.add_argument("--out", type=Path, default=Path("runs/demo"), help="run folder")
    parser.add_argument(
        "--quick", action="store_true", help="a tiny run (about a minute); the policy is poor"
    )
    parser.add_argument(
        "--profile", default="typical_so101", help="the fake arm's hidden reality profile"
    )
    parser.add_argument("--trials", type=int, default=39, help="episodes per world")
    parser.add_argument("--seed", type=int, default=0)
    parser.set_defaults(func=run)


def run(args) -> int:
    from realgap.demo import DemoConfig, run_demo

    run_demo(
        DemoConfig(
            out=args.out, quick=args.quick, profile=args.profile, trials=args.trials, seed=args.seed
        )
    )
    return 0
