"""``realgap toy``: the point-mass tutorial that reproduces its published tables."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "toy",
        help="point-mass tutorial: why sim-to-real fails and what fixes it",
        description="Reproduce the point-mass tutorial's three tables "
        "(policies, randomization width, RMA-style adaptation).",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="seeds for every table (default: 5 for policies, 3 for the others)",
    )
    parser.add_argument(
        "--train-steps",
        type=int,
        default=None,
        help="Adam steps per policy (default 600, as published)",
    )
    parser.add_argument("--json", type=Path, help="write the result as JSON here")
    parser.add_argument("--plot", type=Path, help="write a PNG plot of final error vs mass here")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from realgap.toy import experiments, output

    defaults = experiments.ToyConfig()
    config = experiments.ToyConfig(
        seeds_policies=args.seeds or defaults.seeds_policies,
        seeds_other=args.seeds or defaults.seeds_other,
        train_steps=args.train_steps or defaults.train_steps,
    )
    console = Console()
    with console.status("training") as status:
        result = experiments.run(config, progress=lambda message: status.update(message))
    output.print_tables(result, console)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
        console.print(f"wrote {args.json}")
    if args.plot:
        output.plot(result, args.plot)
        console.print(f"wrote {args.plot}")
    return 0
