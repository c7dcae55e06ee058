"""Gap attribution: how many points each measured difference between twin and arm costs.

Given a policy and a calibration (a partial twin), the policy is evaluated on one
layout in the nominal twin, in the full calibrated twin, in the nominal twin with
each measured difference applied *alone*, and in the calibrated twin with each
difference *removed*. "Alone" says what a difference costs by itself; "removed"
says what fixing it would buy on the arm, the others staying as they are. Both come
with Newcombe 95% intervals, the way the reference write-up asked "which of these
explains the misses" by hand.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from realgap.eval.layout import Layout
from realgap.eval.matched import evaluate
from realgap.eval.stats import difference
from realgap.sim.calibration import Calibration
from realgap.sim.twin import TwinParams, unflatten
from realgap.speed import DeploySpeed

GROUPS = {
    "camera mount": ("camera.offset_m", "camera.rotation_deg"),
    "camera exposure and tone": ("camera.exposure_scale", "camera.gamma", "camera.black_level"),
}
"""Measured keys that describe one physical difference and are attributed together."""


def differences(calibration: Calibration) -> dict[str, tuple[str, ...]]:
    """Name -> the measured keys of each difference (grouped where they belong together).
    Values measured equal to the nominal twin's are nothing to attribute."""
    changed = calibration.twin().differences(TwinParams())
    keys = [key for key in calibration.values if key in changed]
    named: dict[str, tuple[str, ...]] = {}
    for name, members in GROUPS.items():
        present = tuple(key for key in members if key in keys)
        if present:
            named[name] = present
    grouped = {key for members in named.values() for key in members}
    for key in keys:
        if key not in grouped:
            named[key] = (key,)
    return named


def attribute_with(success_in: Callable[[TwinParams, str], dict], calibration: Calibration) -> dict:
    """Attribution with any evaluator ``success_in(twin, label) -> overall`` (a dict with
    ``successes``/``trials``/``success_rate``/``ci95``, as matched evaluation returns)."""
    named = differences(calibration)
    values = calibration.values
    nominal_twin, full_twin = TwinParams(), calibration.twin()
    nominal = success_in(nominal_twin, "nominal twin")
    full = success_in(full_twin, "calibrated twin")
    rows = []
    for name, keys in named.items():
        alone = nominal_twin.updated(unflatten({k: values[k] for k in keys}), "attribution")
        rest = {k: v for k, v in values.items() if k not in keys}
        without = TwinParams().updated(unflatten(rest), "attribution")
        alone_result = success_in(alone, f"{name} alone")
        without_result = success_in(without, f"calibrated, {name} removed")
        rows.append(
            {
                "difference": name,
                "keys": list(keys),
                "alone": alone_result,
                "removed": without_result,
                # Points lost by applying it alone, and gained by removing it from the rest.
                "cost_alone": difference(nominal, alone_result),
                "gain_if_removed": difference(without_result, full),
            }
        )
    rows.sort(key=lambda row: -row["cost_alone"]["gap"])
    return {
        "nominal": nominal,
        "calibrated": full,
        "gap": difference(nominal, full),
        "differences": rows,
    }


def attribute(
    policy_folder: str | Path,
    calibration: Calibration,
    layout: Layout,
    trials: int,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    speed: DeploySpeed | None = None,
) -> dict:
    """Gap attribution of ``policy_folder`` over ``calibration`` on ``layout`` (the same
    ``trials`` episodes in every twin, at ``speed``: the arm's, or training's)."""

    def success_in(twin: TwinParams, label: str) -> dict:
        if progress is not None:
            progress(label)
        result = evaluate(policy_folder, "sim", layout, trials, seed=seed, twin=twin, speed=speed)
        return result["overall"]

    result = attribute_with(success_in, calibration)
    result.update(policy=str(policy_folder), trials=trials, layout=layout.name)
    return result


def section_html(result: dict) -> str:
    """The report's attribution section."""
    rows = "".join(
        f"<tr><td>{html.escape(row['difference'])}</td>"
        f"<td>{row['alone']['success_rate']:.0%}</td>"
        f"<td>{row['cost_alone']['gap']:+.0%} ({row['cost_alone']['ci95'][0]:+.0%} to "
        f"{row['cost_alone']['ci95'][1]:+.0%})</td>"
        f"<td>{row['removed']['success_rate']:.0%}</td>"
        f"<td>{row['gain_if_removed']['gap']:+.0%} ({row['gain_if_removed']['ci95'][0]:+.0%} "
        f"to {row['gain_if_removed']['ci95'][1]:+.0%})</td></tr>"
        for row in result["differences"]
    )
    return f"""
<h2>Gap attribution</h2>
<p class="note">{html.escape(result["policy"])} on the {html.escape(result["layout"])} layout,
{result["trials"]} episodes per twin: nominal twin {result["nominal"]["success_rate"]:.0%},
calibrated twin {result["calibrated"]["success_rate"]:.0%}. "Alone": the nominal twin with only
that difference; "removed": the calibrated twin without it (Newcombe 95% intervals).</p>
<table><tr><th>difference</th><th>alone</th><th>cost alone</th><th>removed</th>
<th>gain if fixed</th></tr>{rows}</table>
"""
