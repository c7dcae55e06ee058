"""Benchmark: training wall time and nominal-sim success per task, beside the reference.

Usage: python benchmarks/bench_train.py [--tasks Reach PickCube] [--recipe distill|sac]
                                        [--seeds 0 1 2] [--out runs/bench]
                                        [--randomization FILE [FILE ...]]
Prints one row per task and seed: success in the nominal sim (64+ episodes, Wilson
95%), wall seconds split into teacher and student (distill), and the reference's
time to 90% on one RTX 3090 (its visual SAC with 1,024 envs). Targets (issue 16):
Reach >= 90% in under 94 s, PickCube >= 90% in under 300 s, PlaceCube >= 85% in
under 550 s, full randomization kept.

``--randomization`` trains every task and seed once per file (``default`` is the
task's own widths), one after the other in the same process, and prints each run's
wall time against the first's: how a width costs in training time, measured in one
run (``benchmarks/configs/no_speed_draws.toml`` against ``default``: the deploy-speed
draws' cost).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from realgap.eval.stats import wilson
from realgap.runtime import configure_rendering, configure_torch_threads
from realgap.sim.tasks import TASKS
from realgap.train import distill, sac

REFERENCE_SECONDS_TO_90 = {
    "Reach": 94,
    "PickCube": 152,
    "PickCan": 204,
    "PlaceCube": 273,
    "PlaceCan": 311,
    "StackCube": 345,
    "StackCan": 496,
}
"""The reference's time to 90% success on one RTX 3090 (ReachCube, LiftCube, LiftCan,
PlaceCube, PlaceCan, StackCube, StackCan; its StackCan ended at 81%). It gives no
figure for ReachCan."""


def phase_seconds(metrics_csv: Path) -> dict[str, float]:
    """Seconds at the end of each phase of a distill run's metrics."""
    ends: dict[str, float] = {}
    with open(metrics_csv) as handle:
        for row in csv.DictReader(handle):
            if row.get("phase") in ("teacher", "student"):
                ends[row["phase"]] = float(row["seconds"])
    teacher = ends.get("teacher", 0.0)
    return {"teacher": teacher, "student": ends.get("student", teacher) - teacher}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["Reach"], choices=sorted(TASKS))
    parser.add_argument("--recipe", choices=["distill", "sac"], default="distill")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--out", default="runs/bench_train")
    parser.add_argument(
        "--randomization",
        nargs="+",
        default=["default"],
        help="randomization TOMLs to train with in turn; 'default' is the task's own",
    )
    args = parser.parse_args()
    for name in args.randomization:
        if name != "default" and not Path(name).is_file():
            parser.error(f"--randomization: no such file: {name}")
    configure_rendering()
    configure_torch_threads()
    print(
        "| task | recipe | seed | randomization | nominal success | wall | against the first "
        "| split | reference GPU |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for task in args.tasks:
        for seed in args.seeds:
            first_seconds = None
            for name in args.randomization:
                file = None if name == "default" else name
                label = "default" if file is None else Path(file).stem
                out = str(Path(args.out) / f"{task}_{args.recipe}_{seed}_{label}")
                if args.recipe == "sac":
                    config = sac.Args(
                        task=task, out=out, seed=seed, progress=False, randomization=file
                    )
                    summary = sac.main(config)
                    split = "-"
                    episodes = config.final_episodes
                else:
                    config = distill.args_for_task(
                        task, out=out, seed=seed, progress=False, randomization=file
                    )
                    summary = distill.main(config)
                    phases = phase_seconds(Path(out) / "metrics.csv")
                    split = f"teacher {phases['teacher']:.0f} s, student {phases['student']:.0f} s"
                    episodes = max(config.eval_episodes, 64)
                seconds = summary["seconds"]
                first_seconds = first_seconds or seconds
                rate = summary["success_rate_nominal"]
                low, high = wilson(round(rate * episodes), episodes)
                reference = REFERENCE_SECONDS_TO_90.get(task)
                print(
                    f"| {task} | {args.recipe} | {seed} | {label} | {rate:.0%} "
                    f"({low:.0%}-{high:.0%}) of {episodes} | {seconds:.0f} s | "
                    f"{seconds / first_seconds:.2f}x | {split} | "
                    f"{f'{reference} s to 90%' if reference else '-'} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
