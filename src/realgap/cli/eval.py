"""``realgap eval``: matched evaluation of a policy on a layout, in any world."""

from __future__ import annotations

import json
from pathlib import Path

from realgap.cli.deploy import (
    add_output_arguments,
    add_speed_arguments,
    add_world_arguments,
    check_arguments,
    deploy_config,
    earlier_results,
)
from realgap.errors import ConfigError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="success per test spot with 95%% intervals, in the sim, a fake arm or the real one",
    )
    parser.add_argument("policy", type=Path, help="policy folder (or run folder holding policy/)")
    add_world_arguments(parser, worlds=("sim", "fake", "real"), default="sim")
    parser.add_argument("--layout", type=Path, help="layout TOML (default: the shipped 13 spots)")
    parser.add_argument("--trials", type=int, default=39, help="episodes in total over the spots")
    add_speed_arguments(parser, sim=True)
    parser.add_argument("--steps", type=int, help="fake/real: steps per episode")
    parser.add_argument(
        "--twin",
        type=Path,
        help="sim: evaluate in this twin (a calibration.json or a TwinParams TOML, docs/twin.md)",
    )
    parser.add_argument(
        "--randomization",
        type=Path,
        help="sim: evaluate under this randomization TOML (widths around the twin)",
    )
    parser.add_argument("--json", type=Path, help="write the result here")
    parser.add_argument("--out", type=Path, help="folder for recordings and eval_<world>.json")
    add_output_arguments(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    from rich.progress import Progress

    from realgap.cli.deploy import open_world
    from realgap.cli.export import policy_folder
    from realgap.eval.layout import load_layout
    from realgap.eval.matched import evaluate
    from realgap.policy.checkpoint import load_contract
    from realgap.sim.calibration import Calibration, load_twin
    from realgap.sim.randomization import DomainRandomization

    check_arguments(args)
    folder = policy_folder(args.policy)
    layout = load_layout(args.layout)
    contract = load_contract(folder)
    config, speed = deploy_config(args), None
    if contract.action_mode == "delta":
        if args.world == "sim" and (args.hz or args.action_scale):
            # The sim runs training's speed unless asked; a speed asked for is checked.
            speed = config.for_policy(contract)[0].speed
        elif args.world != "sim":
            config, warning = config.for_policy(contract)  # refused before connecting
            if warning:
                print(f"warning: {warning}")
    calibration = None if args.calibration is None else Calibration.load(args.calibration)
    twin = None if args.twin is None else load_twin(args.twin)
    widths = None
    if args.randomization is not None:
        widths = DomainRandomization.from_toml(args.randomization)
    if (twin is not None or widths is not None) and args.world != "sim":
        raise ConfigError(
            "--twin and --randomization are for --world sim (an arm is its own world)"
        )
    with Progress(transient=True) as progress:
        bar = progress.add_task(f"eval ({args.world})", total=args.trials)
        result = evaluate(
            folder,
            args.world,
            layout,
            args.trials,
            open_world=lambda task: open_world(args, task, apply_calibration=False),
            deploy_config=config,
            seed=args.seed,
            out=args.out,
            progress=lambda n: progress.update(bar, advance=n),
            calibration=calibration,
            twin=twin,
            randomization=widths,
            earlier=earlier_results(args),
            speed=speed,
        )
    print_result(result)
    if result.get("stopped"):
        print(f"stopped early: {result['stopped']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        public = {k: v for k, v in result.items() if k != "episodes"}
        args.json.write_text(json.dumps(public, indent=2, default=str))
    return 0


def print_result(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    placement = result.get("placement_check") or {}
    if placement.get("flagged"):
        Console().print(f"[bold red]placement check: {placement['note']}[/]")

    speed = result.get("speed") or {}
    at = f", {speed['control_hz']:g} Hz x {speed['action_fraction']:g}" if speed else ""
    table = Table(title=f"{result['task']} on {result['world']} ({result['layout']} layout{at})")
    for column in ("spot", "cube (cm)", "success", "95% interval", "trials", "failures"):
        table.add_column(column)
    unseen = set(result.get("unseen_at_start") or ())
    for spot in result["spots"]:
        low, high = spot["ci95"]
        name = spot["name"] + ("" if spot["in_distribution"] else " (outside training)")
        name += " *" if spot["name"] in unseen else ""
        failures = ", ".join(f"{k} x{v}" for k, v in spot["failures"].items())
        table.add_row(
            name,
            f"{spot['cube'][0] * 100:.0f}, {spot['cube'][1] * 100:.0f}",
            "-" if spot["success_rate"] is None else f"{spot['success_rate']:.0%}",
            f"{low:.0%}-{high:.0%}",
            str(spot["trials"]),
            failures,
        )
    console = Console()
    console.print(table)
    if unseen:
        console.print(
            "* not in the wrist camera's view from the start pose: the policy has to find "
            "the object there without seeing it (docs/evaluation.md)"
        )
    labels = {"overall": "inside the training square", "out_of_distribution": "outside it"}
    for key, label in labels.items():
        part = result[key]
        if part["trials"]:
            low, high = part["ci95"]
            rate = part["success_rate"]
            console.print(f"{label}: {rate:.0%} ({low:.0%}-{high:.0%}, {part['trials']} trials)")
