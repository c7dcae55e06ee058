"""Benchmark: a policy's success in the nominal sim on many fresh episodes.

Usage: python benchmarks/bench_nominal.py POLICY [POLICY ...] [--episodes 256] [--seed 9000]

Training summaries judge success on 64 episodes, whose 95% interval is about +-8
points near 90%; a target such as "at least 90%" deserves a larger sample. Every
policy here sees the same episodes (same seed), drawn from a stream the training
evaluations never use. Prints successes, rate and Wilson 95% interval per policy.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policies", nargs="+", type=Path)
    parser.add_argument("--episodes", type=int, default=256)
    parser.add_argument("--seed", type=int, default=9000)
    args = parser.parse_args()

    from realgap.runtime import configure_rendering, configure_torch_threads

    configure_rendering()
    configure_torch_threads()
    from realgap.eval.stats import wilson
    from realgap.policy.checkpoint import load_policy
    from realgap.sim.batched_env import BatchedEnv
    from realgap.train.common import evaluate, policy_actor

    print("policy | task | successes | rate (Wilson 95%)")
    for folder in args.policies:
        policy, contract = load_policy(folder)
        policy.eval()
        env = BatchedEnv(contract.task, 32, seed=args.seed)
        try:
            rate = evaluate(env, policy_actor(policy, env), args.episodes, args.seed)
        finally:
            env.close()
        successes = round(rate * args.episodes)
        low, high = wilson(successes, args.episodes)
        print(
            f"{folder} | {contract.task} | {successes}/{args.episodes} | "
            f"{rate:.1%} ({low:.1%}-{high:.1%})"
        )


if __name__ == "__main__":
    main()
