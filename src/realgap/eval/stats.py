"""Success rates with honest error bars (Wilson score intervals)."""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) for no trials."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def rate(successes: int, trials: int) -> dict:
    """``{"success_rate", "ci95", "trials", "successes"}`` for JSON output."""
    low, high = wilson(successes, trials)
    return {
        "success_rate": successes / trials if trials else None,
        "ci95": [round(low, 4), round(high, 4)],
        "trials": trials,
        "successes": successes,
    }


def difference(a: dict, b: dict) -> dict:
    """``a - b`` of two rates with Newcombe's hybrid score 95% interval (method 10),
    built from the two Wilson intervals: the reality gap is sim minus real."""
    p1, p2 = a["success_rate"], b["success_rate"]
    if p1 is None or p2 is None:
        return {"gap": None, "ci95": [None, None]}
    (l1, u1), (l2, u2) = a["ci95"], b["ci95"]
    gap = p1 - p2
    low = gap - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = gap + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return {"gap": round(gap, 4), "ci95": [round(low, 4), round(high, 4)]}
