"""``realgap view``: see what the policy sees."""

from __future__ import annotations

from pathlib import Path

from realgap.cli.task_help import TASK_HELP


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "view",
        help="save a grid of wrist images (policy resolution and enlarged) and a "
        "third-person render",
    )
    parser.add_argument("task", help=TASK_HELP)
    parser.add_argument("--out", type=Path, default=Path("frames.png"), help="output PNG")
    parser.add_argument("--episodes", type=int, default=6, help="randomized resets to show")
    parser.add_argument(
        "--no-randomization",
        action="store_true",
        help="show the nominal sim instead of the default randomization",
    )
    parser.add_argument(
        "--profile",
        help="a fake arm's profile (shipped name or TOML): its camera's frames beside the "
        "twin's view at the same poses",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.set_defaults(func=run)


def run(args) -> int:
    from realgap.bridge.view import save_profile_view
    from realgap.sim.view import save_view

    if args.profile is not None:
        path = save_profile_view(args.task, args.profile, args.out)
        print(f"wrote {path}")
        return 0
    path = save_view(
        args.task,
        args.out,
        episodes=args.episodes,
        randomized=not args.no_randomization,
        seed=args.seed,
    )
    print(f"wrote {path}")
    return 0
