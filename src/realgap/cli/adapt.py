"""``realgap adapt``: measure an arm, build its twin, retrain, prove the gain on the arm."""

from __future__ import annotations

import math
from pathlib import Path

from realgap.cli.deploy import add_speed_arguments, add_world_arguments


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "adapt",
        help="close the gap on one arm: record, calibrate (hand-eye), retrain in its twin, "
        "and compare old and new policy on the arm",
    )
    parser.add_argument("policy", type=Path, help="policy folder (or run folder holding policy/)")
    add_world_arguments(parser)
    parser.add_argument("--out", type=Path, required=True, help="run folder for everything")
    parser.add_argument("--recording", type=Path, help="use this calibration recording")
    parser.add_argument(
        "--rig", type=Path, help="rig.toml: the cube's weighed mass, size, friction (docs/adapt.md)"
    )
    parser.add_argument("--layout", type=Path, help="evaluation layout TOML")
    parser.add_argument("--trials", type=int, default=39, help="episodes per policy on the arm")
    parser.add_argument(
        "--budget", type=float, default=10.0, help="retraining budget in minutes (default 10)"
    )
    parser.add_argument("--quick", action="store_true", help="a tiny run (smoke test)")
    parser.add_argument(
        "--no-attribution", action="store_true", help="skip the old policy's gap attribution"
    )
    parser.add_argument(
        "--report-placement-only",
        action="store_true",
        help="when the placement check finds the cube consistently off, only report it "
        "(default: build the operator's offset into the arm's twin and train for it)",
    )
    add_speed_arguments(parser)
    earlier = parser.add_mutually_exclusive_group()
    earlier.add_argument(
        "--overwrite", action="store_true", help="replace an earlier adapt run in --out"
    )
    earlier.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted adapt run in --out from its last finished step",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from realgap.adapt.run import AdaptConfig, check_out, run_adapt
    from realgap.bridge.env import DeployConfig
    from realgap.cli.deploy import check_arguments, open_world
    from realgap.cli.export import policy_folder
    from realgap.errors import ConfigError

    if getattr(args, "calibration", None) is not None:
        raise ConfigError("adapt measures the arm's calibration itself; drop --calibration")
    if not (math.isfinite(args.budget) and args.budget > 0):
        raise ConfigError(f"--budget must be a positive number of minutes, got {args.budget}")
    check_arguments(args)
    check_out(args.out, "overwrite" if args.overwrite else "resume" if args.resume else "refuse")
    config = AdaptConfig(
        policy=policy_folder(args.policy),
        out=args.out,
        world=args.world,
        recording=args.recording,
        rig=args.rig,
        layout=args.layout,
        trials=args.trials,
        budget_s=args.budget * 60,
        quick=args.quick,
        attribute=not (args.no_attribution or args.quick),
        follow_placement=not args.report_placement_only,
        seed=args.seed,
        resume=args.resume,
    )
    speed = DeployConfig(
        control_hz=args.hz, action_scale=args.action_scale, force_speed=args.force_speed
    )
    opener = lambda task: open_world(args, task, apply_calibration=False)  # noqa: E731
    run_adapt(config, opener, deploy_config=speed)
    return 0
