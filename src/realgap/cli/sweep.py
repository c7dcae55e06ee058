"""``realgap sweep SWEEP.toml --out DIR``: many training runs and their evaluations, on Ray."""

from __future__ import annotations

from pathlib import Path

from realgap.errors import ConfigError

INSTALL_HINT = (
    "realgap sweep runs on Ray, which is not installed: pip install 'realgap[sweep]' "
    "(or pip install ray)"
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="train and evaluate a grid of settings x seeds on Ray; table, plot and report",
    )
    parser.add_argument("sweep", type=Path, help="a sweep TOML (see sweeps/*.toml)")
    parser.add_argument("--out", type=Path, required=True, help="the sweep's folder")
    parser.add_argument(
        "--address", help="a running Ray cluster ('auto', HOST:6379); default: this machine"
    )
    parser.add_argument(
        "--cpus-per-run", type=float, default=1.0, help="CPUs Ray reserves per job (default 1)"
    )
    parser.add_argument(
        "--num-cpus", type=int, help="local Ray only: cores it may use (default: all)"
    )
    parser.add_argument("--retries", type=int, default=1, help="retries of a failed job")
    parser.add_argument(
        "--quick", action="store_true", help="tiny training runs: check a sweep file end to end"
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from realgap.sweep.spec import load_sweep

    spec = load_sweep(args.sweep)  # a bad file fails here, before Ray starts
    if args.cpus_per_run <= 0 or args.retries < 0:
        raise ConfigError("--cpus-per-run must be > 0 and --retries >= 0")
    try:
        from realgap.sweep import ray_runner
    except ModuleNotFoundError as error:
        if error.name != "ray":
            raise
        raise ConfigError(INSTALL_HINT) from None
    from realgap.sweep.report import finish

    options = ray_runner.SweepOptions(
        address=args.address,
        cpus_per_run=args.cpus_per_run,
        num_cpus=args.num_cpus,
        retries=args.retries,
        quick=args.quick,
    )
    runs = spec.runs()
    print(
        f"{spec.name}: {len(spec.settings)} settings x {len(spec.seeds)} seeds = {len(runs)} "
        f"training runs, {len(runs) * len(spec.worlds)} evaluations ({', '.join(spec.worlds)})"
    )
    failed = ray_runner.run_sweep(spec, args.out, options)
    summary = finish(spec, args.out, failed)
    for name, error in failed.items():
        print(f"FAILED {name}: {error}")
    print(f"results: {summary['table']}; plot: {summary['plot']}; report: {summary['report']}")
    return 1 if failed else 0
