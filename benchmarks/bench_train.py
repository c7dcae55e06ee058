"""Benchmark: distill recipe wall time and nominal-sim success per task.

Usage: python benchmarks/bench_train.py [--tasks Reach PickCube] [--out runs/bench]
Prints one line per task: success rate in the nominal sim, wall seconds, and
the best evaluated PPO teacher (or that the scripted expert taught it).
Targets (issue 4): Reach >= 90% within 10 minutes on a 2-core CPU; PickCube
>= 80%; PlaceCube >= 70%.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from realgap.runtime import configure_torch_threads
from realgap.sim.tasks import TASKS
from realgap.train import distill


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["Reach"], choices=sorted(TASKS))
    parser.add_argument("--out", default="runs/bench_train")
    args = parser.parse_args()
    configure_torch_threads()
    for task in args.tasks:
        config = distill.args_for_task(task, out=str(Path(args.out) / task), progress=False)
        summary = distill.main(config)
        with open(Path(config.out) / "metrics.csv") as handle:
            best = [row for row in csv.DictReader(handle) if row["phase"] == "teacher_best"]
        teacher = (
            f"PPO teacher {float(best[-1]['success_rate']):.0%}" if best else "scripted teacher"
        )
        print(
            f"{task}: student {summary['success_rate_nominal']:.0%} nominal-sim success, "
            f"{summary['seconds']:.0f} s wall, {teacher}, {summary['parameters']:,} parameters"
        )


if __name__ == "__main__":
    main()
