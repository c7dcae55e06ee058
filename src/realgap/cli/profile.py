"""``realgap profile``: reality profiles -- draw a random arm, or show one."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "profile", help="draw a random plausible arm as a reality profile, or show a profile"
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    sample = actions.add_parser("sample", help="write a random arm (seeded) as a profile TOML")
    sample.add_argument("--seed", type=int, required=True)
    sample.add_argument("--out", type=Path, required=True, help="the profile TOML to write")
    sample.add_argument(
        "--placement", action="store_true", help="an operator who measures from elsewhere too"
    )
    sample.add_argument(
        "--appearance",
        action="store_true",
        help="a random desk, webcam, lights and clutter too (the fake camera's own chain)",
    )
    show = actions.add_parser("show", help="print a profile (shipped name or TOML) in full")
    show.add_argument("profile")
    parser.set_defaults(func=run)


def run(args) -> int:
    from realgap.bridge.profile import load_profile
    from realgap.bridge.random_arms import profile_toml, sample_arm, write_arm
    from realgap.runs import check_writable_file

    if args.action == "sample":
        check_writable_file(args.out)
        profile = sample_arm(args.seed, placement=args.placement, appearance=args.appearance)
        path = write_arm(profile, args.out)
        print(f"wrote {path} ({profile.name})")
        return 0
    print(profile_toml(load_profile(args.profile)), end="")
    return 0
