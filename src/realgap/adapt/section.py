"""What ``realgap adapt`` says: the report's "closing the gap" section and the console's
lines."""

from __future__ import annotations

import html
from pathlib import Path

from rich.console import Console

from realgap.diagnose.attribute import section_html as attribution_html
from realgap.sim.calibration import Calibration


def adapt_section(summary: dict, attribution: dict | None = None) -> str:
    """Before/after on the arm, the twin's prediction, the calibration with its
    uncertainties, and (when run) the old policy's gap attribution."""
    rows = "".join(
        f"<tr><td>{html.escape(label)}</td><td>{_rate(summary[key])}</td></tr>"
        for key, label in (
            ("before", f"old policy on {summary['before_world']}, as it ran before"),
            ("after", f"adapted policy on {summary['world']}"),
            ("twin", "adapted policy in the arm's twin (the prediction)"),
            ("twin_slippery_cube", "the same, with a slippery cube (its friction unmeasured)"),
        )
        if summary.get(key)
    )
    gain, predicted = summary["gain"], summary["twin_minus_arm"]
    values, sigmas = summary["calibration"]["values"], summary["calibration"]["uncertainty"]
    calibration = "".join(
        f"<tr><td>{html.escape(key)}</td><td>{format_value(value)}</td>"
        f"<td>{format_value(sigmas[key]) if key in sigmas else '-'}</td></tr>"
        for key, value in values.items()
    )
    placement = summary.get("placement_check") or {}
    warning = ""
    if placement.get("flagged"):
        warning = f"<p class='bad'>Placement check: {html.escape(placement['note'])}"
        if "placement.offset_xy_m" in values:
            warning += (
                " The arm's twin was built with objects where they actually land "
                "(<code>placement.offset_xy_m</code> below), so the adapted policy trained "
                "for this operator's positions."
            )
        warning += "</p>"
    keep = summary.get("keep") or {}  # (adapt.json from before the field: no advice)
    if keep and not keep["adapted"]:
        warning += f"<p class='bad'>{html.escape(keep['note'])}</p>"
    changed = ", ".join(summary["physics_changed"]) or "nothing"
    return f"""
<h2>Closing the gap</h2>
{warning}
<p class="note">{html.escape(summary["policy"])} was adapted to this arm by
<code>realgap adapt</code>: calibration recording, hand-eye calibration, retraining in the
arm's twin (warm start; the teacher's world changed in: {html.escape(changed)}), then the
same layout and spots for both policies. In-distribution spots; Wilson 95% intervals.</p>
<table><tr><th>policy and world</th><th>success</th></tr>{rows}</table>
<p>Improvement on the arm: <b>{gain["gap"]:+.0%}</b> (Newcombe 95%
{gain["ci95"][0]:+.0%} to {gain["ci95"][1]:+.0%}). Twin minus arm after adapting:
{predicted["gap"]:+.0%} ({predicted["ci95"][0]:+.0%} to {predicted["ci95"][1]:+.0%}).</p>
<p class="note">{html.escape(summary.get("retraining", {}).get("note", ""))}</p>
<h3>The calibration (one standard deviation)</h3>
<table><tr><th>value</th><th>measured</th><th>&plusmn;</th></tr>{calibration}</table>
{_timing_html(summary)}
{attribution_html(attribution) if attribution else ""}
"""


BESIDE = {
    "calibrate": "beside the old policy's evaluation on the arm",
    "twin": "beside the adapted policy's evaluation on the arm",
    "attribution": "beside the adapted policy's evaluation on the arm",
}
"""Steps that run in a thread beside another (:mod:`realgap.adapt.beside`)."""


def _timing_html(summary: dict) -> str:
    """Every step's own seconds and the run's wall clock (less than their sum: some
    steps run beside others)."""
    seconds = summary.get("seconds") or {}
    if not seconds:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(step)}</td><td>{spent:.0f} s</td>"
        f"<td>{html.escape(BESIDE.get(step, ''))}</td></tr>"
        for step, spent in seconds.items()
    )
    return f"""<h3>Time</h3>
<table><tr><th>step</th><th>its own time</th><th>ran</th></tr>{rows}
<tr><td><b>adapt, wall clock</b></td><td><b>{summary["total_seconds"]:.0f} s</b></td>
<td></td></tr></table>"""


def timing_line(summary: dict) -> str:
    """``adapt took N s: record 4 s, calibrate 130 s (beside), ...``"""
    steps = ", ".join(
        f"{step} {spent:.0f} s" + (" (beside)" if step in BESIDE else "")
        for step, spent in (summary.get("seconds") or {}).items()
    )
    return f"adapt took {summary['total_seconds']:.0f} s of wall clock: {steps}"


def _rate(result: dict) -> str:
    low, high = result["ci95"]
    return f"{result['success_rate']:.0%} ({low:.0%} to {high:.0%}), {result['trials']} episodes"


def format_value(value) -> str:
    """A measured value (or list of them) to three significant figures; a file (the desk
    texture) by its name."""
    if isinstance(value, str):
        return Path(value).name
    if isinstance(value, bool):  # before the number: a bool is an int
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(f"{v:.3g}" for v in value) + "]"
    return f"{value:.3g}"


def calibration_lines(calibration: Calibration) -> str:
    """Every measured value with its standard deviation, one line each."""
    lines = []
    for key, value in calibration.values.items():
        sigma = calibration.uncertainty.get(key)
        lines.append(
            f"  {key} = {format_value(value)}"
            + (f" ± {format_value(sigma)}" if sigma is not None else "")
        )
    return "\n".join(lines)


def print_result(console: Console, summary: dict) -> None:
    """Before, after and the gain on the arm, which policy to use, and the time taken."""
    before, after, gain = summary["before"], summary["after"], summary["gain"]
    console.print(
        f"before: {_rate_line(before)}; after: {_rate_line(after)}; "
        f"gain {gain['gap']:+.0%} {_interval(gain['ci95'])}"
    )
    slippery = summary.get("twin_slippery_cube")
    if slippery:
        console.print(
            f"the arm's twin predicts {summary['twin']['success_rate']:.0%} at the cube's "
            f"unmeasured friction and {slippery['success_rate']:.0%} with a slippery cube: "
            "give cube.friction in rig.toml for one prediction"
        )
    keep = summary["keep"]
    if keep["adapted"]:
        calibration = keep.get("calibration")  # (adapt.json from before the field: none)
        console.print(
            f"use: {keep['policy']}" + (f" --calibration {calibration}" if calibration else "")
        )
    else:
        console.print(f"[bold red]{keep['note']}[/]")
    console.print(timing_line(summary))


def _rate_line(result: dict) -> str:
    return f"{result['success_rate']:.0%} {_interval(result['ci95'])} of {result['trials']}"


def _interval(interval) -> str:
    return f"({interval[0]:.0%} to {interval[1]:.0%})"
