"""``realgap deploy``: run a policy on a fake or real SO-101 at a fixed rate."""

from __future__ import annotations

import math
from pathlib import Path

from realgap.errors import ConfigError


def add_world_arguments(parser, worlds=("fake", "real"), default="fake") -> None:
    """Options every command that opens a world shares (deploy, eval, camera)."""
    parser.add_argument(
        "--world",
        choices=worlds,
        default=default,
        help="sim: the nominal twin; fake: a twin with a hidden reality profile; real: the arm",
    )
    parser.add_argument(
        "--profile",
        help="fake world: a shipped reality profile name or a TOML file (default typical_so101)",
    )
    parser.add_argument("--port", help="real world: the arm's serial port, e.g. /dev/ttyACM0")
    parser.add_argument("--robot-id", default="so101", help="real world: LeRobot calibration id")
    parser.add_argument("--calibration-dir", type=Path, help="real world: LeRobot calibration dir")
    parser.add_argument("--camera", default="0", help="real world: camera index or device path")
    parser.add_argument(
        "--realtime", action="store_true", help="fake world: run in wall-clock time"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--calibration",
        type=Path,
        help="calibration.json from `realgap diagnose all`: fake/real: the bridge corrects "
        "joint zero offsets; sim: evaluate in the calibrated twin",
    )


DEFAULT_PROFILE = "typical_so101"

ARM_OPTIONS = {
    "profile": "--profile",
    "port": "--port",
    "calibration_dir": "--calibration-dir",
    "realtime": "--realtime",
    "steps": "--steps",
}
"""Options that only mean something on a fake or real arm."""


def add_speed_arguments(parser, sim: bool = False) -> None:
    """--hz, --action-scale, --force-speed: how fast a policy runs (deploy, eval)."""
    where = "fake/real: " if sim else ""
    default = "the policy's recommended speed (15 Hz x 0.15 for most)"
    sim_note = "; sim: training's 10 Hz x 1 unless given" if sim else ""
    parser.add_argument(
        "--hz", type=float, help=f"{where}control rate (default: {default}){sim_note}"
    )
    parser.add_argument(
        "--action-scale",
        type=float,
        help="fraction of the training action scale (default: as --hz)",
    )
    parser.add_argument(
        "--force-speed",
        action="store_true",
        help="run a speed outside the range the policy was trained for (its contract says)",
    )


def deploy_config(args, **fields):
    """The DeployConfig the speed options ask for (the rest resolved from the policy)."""
    from realgap.bridge.env import DeployConfig

    return DeployConfig(
        control_hz=args.hz,
        action_scale=args.action_scale,
        episode_steps=args.steps,
        force_speed=args.force_speed,
        **fields,
    )


def add_output_arguments(parser) -> None:
    """--resume / --overwrite: what to do with an earlier run in --out."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--resume", action="store_true", help="continue an earlier run in --out where it stopped"
    )
    group.add_argument(
        "--overwrite", action="store_true", help="replace an earlier run's results in --out"
    )


def earlier_results(args) -> str:
    return "resume" if args.resume else "overwrite" if args.overwrite else "refuse"


def check_arguments(args) -> None:
    """Refuse, before anything connects or moves, options that would be ignored or
    cannot work: arm options in the sim, zero or negative counts, unwritable outputs."""
    from realgap.runs import check_writable_file, check_writable_folder

    if args.world == "sim":
        given = [flag for name, flag in ARM_OPTIONS.items() if getattr(args, name, None)]
        if given:
            raise ConfigError(f"{', '.join(given)}: only for --world fake or real, not sim")
    if args.world == "real" and getattr(args, "profile", None):
        raise ConfigError("--profile is for --world fake (a real arm has no profile)")
    for name in ("steps", "episodes", "trials"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise ConfigError(f"--{name} must be at least 1, got {value}")
    for name in ("hz", "action_scale"):
        value = getattr(args, name, None)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ConfigError(f"--{name.replace('_', '-')} must be positive, got {value}")
    if getattr(args, "out", None) is not None:
        check_writable_folder(args.out)
    if getattr(args, "json", None) is not None:
        check_writable_file(args.json)


def open_world(args, task: str, apply_calibration: bool = True):
    from realgap.bridge.worlds import open_fake_world, open_real_world
    from realgap.sim.calibration import Calibration

    if args.world == "fake":
        profile = args.profile or DEFAULT_PROFILE
        world = open_fake_world(task, profile, seed=args.seed, realtime=args.realtime)
    else:
        if not args.port:
            raise ConfigError("--world real needs --port (the arm's serial port)")
        camera = int(args.camera) if str(args.camera).isdigit() else args.camera
        world = open_real_world(task, args.port, args.robot_id, camera, args.calibration_dir)
    if apply_calibration and getattr(args, "calibration", None) is not None:
        world.arm.apply_calibration(Calibration.load(args.calibration).joint_offsets_rad)
    return world


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "deploy",
        help="run a policy on a fake arm (hidden reality profile) or the real SO-101",
    )
    parser.add_argument("policy", type=Path, help="policy folder (or run folder holding policy/)")
    add_world_arguments(parser)
    parser.add_argument("--episodes", type=int, default=3)
    add_speed_arguments(parser)
    parser.add_argument(
        "--steps", type=int, help="steps per episode (default: training's travel at this speed)"
    )
    parser.add_argument(
        "--on-fault",
        choices=["release", "hold"],
        default="release",
        help="on a crash, Ctrl-C or watchdog: torque off now, or hold then release",
    )
    parser.add_argument("--out", type=Path, help="folder for recordings and deploy.json")
    add_output_arguments(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    import numpy as np
    from rich.console import Console

    from realgap import runs
    from realgap.bridge.deploy import run_session
    from realgap.bridge.safety import SafetyConfig
    from realgap.bridge.worlds import Spot
    from realgap.cli.export import policy_folder
    from realgap.policy.checkpoint import load_contract
    from realgap.runs import claim
    from realgap.sim.tasks import make_task
    from realgap.speed import step_fractions

    check_arguments(args)
    console = Console()
    folder = policy_folder(args.policy)
    contract = load_contract(folder)
    task = make_task(contract.task)
    rng = np.random.default_rng(args.seed)
    cubes = task.sample_cube_xy(rng, args.episodes)
    bins = task.sample_target_xy(rng, cubes) if task.has_target else [None] * args.episodes
    spots = [
        Spot(f"random{i}", tuple(cube), None if b is None else tuple(b))
        for i, (cube, b) in enumerate(zip(cubes, bins))
    ]
    config, warning = deploy_config(args).for_policy(contract)  # refused before connecting
    if contract.action_mode == "absolute":  # imitation: the demonstrations' rate
        config = deploy_config(args)
    resume = False
    if args.out is not None:
        earlier = [args.out / runs.DEPLOY, *args.out.glob("episode_*.npz")]
        resume = claim(earlier, earlier_results(args))
    world = open_world(args, contract.task)

    def report(result) -> None:
        mark = "[green]success[/]" if result.success else "[red]failure[/]"
        console.print(f"  {result.spot}: {mark} ({result.steps} steps)")

    if warning:
        console.print(f"[yellow]{warning}[/]")
    rate = contract.control_hz if contract.action_mode == "absolute" else config.control_hz
    scale = 1.0 if contract.action_mode == "absolute" else config.action_scale
    gripper = (
        ""
        if contract.action_mode == "absolute"
        else (f" (the gripper {step_fractions(scale)[5]:g})")
    )
    console.print(
        f"{contract.task} on {world.name}: {args.episodes} episodes at {rate:g} Hz, "
        f"{scale:g} of the training action scale{gripper}"
    )
    summary = run_session(
        world,
        folder,
        spots,
        args.out,
        config,
        SafetyConfig(on_fault=args.on_fault),
        report,
        resume=resume,
    )
    timing = summary["timing"]
    console.print(
        f"success {summary['success_rate']:.0%} over {summary['episodes']} episodes; loop "
        f"{timing['period_mean_ms']:.1f} ms mean, {timing['period_p99_ms']:.1f} ms p99, "
        f"{timing['overruns']} overruns; policy {timing['compute_mean_ms']:.2f} ms"
    )
    if summary["stopped"]:
        console.print(f"[yellow]stopped early: {summary['stopped']}[/]")
    if args.out:
        console.print(f"recordings and deploy.json in {args.out}")
    return 0
