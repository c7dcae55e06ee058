"""Benchmark: the full point-mass reproduction, batched vs one policy at a time.

Prints wall times and their ratio, measured in one run (this machine is shared:
quote the ratio, not the seconds). Usage: python benchmarks/bench_toy.py
"""

from __future__ import annotations

import time

import torch

from realgap.runtime import configure_torch_threads
from realgap.toy import experiments, published
from realgap.toy.pointmass import DEFAULT_RANDOMIZED, FeedbackPolicy, train


def main() -> None:
    configure_torch_threads()
    started = time.perf_counter()
    result = experiments.run()
    full = time.perf_counter() - started
    print(f"full reproduction (3 tables, batched): {full:.1f} s")
    print("largest deviation, raw:", published.deviations(result["tables"], rounded=False))

    seeds = list(range(5))
    started = time.perf_counter()
    train(FeedbackPolicy(seeds), seeds, [DEFAULT_RANDOMIZED] * 5)
    batched = time.perf_counter() - started
    started = time.perf_counter()
    for seed in seeds:
        train(FeedbackPolicy([seed]), [seed], [DEFAULT_RANDOMIZED])
    looped = time.perf_counter() - started
    print(
        f"5 feedback seeds: batched {batched:.2f} s, one by one {looped:.2f} s, "
        f"speed-up {looped / batched:.1f}x"
    )
    print(f"torch threads: {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
