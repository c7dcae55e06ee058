"""``realgap report RUN_DIR``: one self-contained HTML page about a run.

It gathers whatever the run folder holds -- training metrics, matched
evaluations in each world (``eval_*.json``), recordings, policy latency,
diagnostics and imitation results -- and writes ``RUN_DIR/report.html`` with
every figure embedded as a PNG data URI (no network, no external files).
"""

from __future__ import annotations

import base64
import csv
import html
import json
from datetime import UTC, datetime
from pathlib import Path

from realgap import __version__, runs
from realgap.bridge.recording import load_episode
from realgap.eval.stats import difference
from realgap.report import figures
from realgap.runs import RunFolder, world_tag
from realgap.sim.tasks import make_task

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ddd; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
td, th { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }
th { background: #f4f4f4; } .bad { color: #b00; } .good { color: #070; }
.maps { display: flex; flex-wrap: wrap; gap: 1em; } figure { margin: 0.5em 0; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.8em; }
.note { color: #555; font-size: 0.9em; }
"""

# Counts the figures that decoded, so a headless browser test can check the page rendered.
SCRIPT = """
window.addEventListener('load', () => {
  const images = Array.from(document.images);
  document.body.dataset.images = images.length;
  document.body.dataset.decoded = images.filter(i => i.complete && i.naturalWidth > 0).length;
});
"""


def image_tag(png: bytes | None, alt: str) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode()
    return f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></figure>'


def _pct(value) -> str:
    return "-" if value is None else f"{value:.0%}"


def _interval(ci) -> str:
    if ci is None or ci[0] is None:
        return "-"
    return f"{ci[0]:.0%} to {ci[1]:.0%}"


def _first(run: Path, *names: str) -> Path | None:
    for name in names:
        found = sorted(run.glob(f"**/{name}"))
        if found:
            return found[0]
    return None


def policy_name(result: dict) -> str:
    """A policy's short name: its folder, or the run folder above a ``policy/`` folder."""
    path = Path(str(result.get("policy") or "policy"))
    return path.parent.name if path.name == "policy" and path.parent.name else path.name


def load_evaluations(run: Path) -> list[dict]:
    """Every matched evaluation in the run, grouped by policy, sim first in each group.
    Each gets a ``label``: its world, prefixed by the policy's name when the run holds
    evaluations of several policies (an experiment such as ``realgap cotrain``)."""
    results = [json.loads(p.read_text()) for p in RunFolder(run).eval_files()]
    several = len({policy_name(r) for r in results}) > 1
    for result in results:
        result["label"] = (
            f"{policy_name(result)}: {result['world']}" if several else result["world"]
        )
    return sorted(results, key=lambda r: (policy_name(r), r["world"] != "sim", r["world"]))


def gap_rows(evaluations: list[dict]) -> list[dict]:
    """One row per evaluation: in-distribution success, its interval, and the gap to
    the sim evaluation of the same policy."""
    sims = {}
    # The policy's plain sim if it has one, else its twin (an adapted policy's "sim
    # (calibrated)"): an arm row's gap is to the twin it was trained and predicted in.
    for result in sorted(evaluations, key=lambda r: r["world"] != "sim"):
        if result["world"].startswith("sim"):
            sims.setdefault(policy_name(result), result)
    rows = []
    for result in evaluations:
        row = {"world": result.get("label", result["world"]), **result["overall"]}
        if result.get("partial"):
            done = len(result.get("episodes", []))
            planned = result.get("planned_trials", done)
            row["world"] += f" (partial: {done} of {planned} episodes)"
            row["stopped"] = result.get("stopped")
        row["outside"] = result["out_of_distribution"]
        sim = sims.get(policy_name(result))
        if sim is not None and result is not sim:
            row["gap"] = difference(sim["overall"], result["overall"])
        rows.append(row)
    return rows


def build_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    run = Path(run_dir)
    if not run.is_dir():
        raise FileNotFoundError(f"run folder not found: {run}")
    evaluations = load_evaluations(run)
    metrics = _first(run, runs.METRICS)
    if not evaluations and metrics is None and not any(run.glob("**/*.section.html")):
        raise FileNotFoundError(
            f"{run}: nothing to report on (no eval_*.json, metrics.csv or diagnosis)"
        )
    parts = [f"<h1>realgap report: {html.escape(run.name)}</h1>"]
    task = evaluations[0]["task"] if evaluations else None
    created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts.append(
        f'<p class="note">task {html.escape(str(task))} &middot; realgap {__version__} '
        f"&middot; written {created}</p>"
    )
    if evaluations:
        parts += _gap_section(evaluations, task)
    if metrics is not None:
        with metrics.open() as handle:
            rows = list(csv.DictReader(handle))
        parts.append("<h2>Training</h2>")
        parts.append(image_tag(figures.training_curve(rows), "training curve"))
    parts += _policy_section(run, evaluations)
    parts += _strips_section(run, evaluations)
    parts += _extra_sections(run)
    parts += _config_section(run, evaluations)
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>realgap report: {html.escape(run.name)}</title><style>{STYLE}</style>"
        f"<script>{SCRIPT}</script></head><body>{''.join(parts)}</body></html>"
    )
    path = Path(out) if out else run / "report.html"
    path.write_text(page)
    return path


def _gap_section(evaluations: list[dict], task: str) -> list[str]:
    rows = gap_rows(evaluations)
    out = ["<h2>Reality gap</h2>"]
    out.append(
        '<p class="note">Success on the same layout in every world, spots inside the '
        "training square only (95% Wilson intervals). The gap is sim minus that world, "
        "with a Newcombe 95% interval. Spots outside the training square are shown "
        "separately and never averaged in.</p>"
    )
    table = [
        "<table><tr><th>world</th><th>success</th><th>95% interval</th><th>trials</th>"
        "<th>gap vs sim or twin</th><th>gap 95% interval</th><th>outside training square</th>"
        "</tr>"
    ]
    known_said = False
    for result in evaluations:
        placement = result.get("placement_check") or {}
        if placement.get("known_note") and not known_said:  # once, not as a warning
            out.append(f'<p class="note">{html.escape(placement["known_note"])}.</p>')
            known_said = True
        if placement.get("flagged"):
            out.append(
                f'<p class="bad">{html.escape(result["label"])}: placement check: '
                f"{html.escape(placement['note'])}</p>"
            )
        elif placement.get("maybe_camera"):
            out.append(
                f'<p class="note">{html.escape(result["label"])}: {html.escape(placement["note"])}'
                "</p>"
            )
    stopped = [row for row in rows if row.get("stopped")]
    for row in stopped:
        out.append(
            f'<p class="bad">{html.escape(row["world"])} stopped early: '
            f"{html.escape(str(row['stopped']))}. Its figures count only the finished "
            "episodes.</p>"
        )
    for row in rows:
        gap = row.get("gap")
        gap_text = "-" if gap is None else f"{gap['gap']:+.0%}"
        cls = "" if gap is None else (' class="bad"' if gap["ci95"][0] > 0 else "")
        table.append(
            f"<tr><td>{html.escape(row['world'])}</td><td>{_pct(row['success_rate'])}</td>"
            f"<td>{_interval(row['ci95'])}</td><td>{row['trials']}</td>"
            f"<td{cls}>{gap_text}</td><td>{_interval(gap['ci95']) if gap else '-'}</td>"
            f"<td>{_pct(row['outside']['success_rate'])} ({row['outside']['trials']})</td></tr>"
        )
    out.append("".join(table) + "</table>")
    out.append(image_tag(figures.gap_bars(rows), "success per world"))
    config = make_task(task).config
    out.append("<h2>Success per spot</h2><div class='maps'>")
    for result in evaluations:
        png = figures.success_map(result, config.cube_square_center, config.cube_square_size)
        out.append(image_tag(png, f"success map {result['label']}"))
    out.append("</div>")
    out.append("<h3>Failures</h3><table><tr><th>world</th><th>why episodes failed</th></tr>")
    for result in evaluations:
        failures = {**result["overall"]["failures"]}
        text = ", ".join(f"{k}: {v}" for k, v in failures.items()) or "none"
        if result.get("stopped"):
            text += f" &middot; run stopped early: {html.escape(result['stopped'])}"
        out.append(f"<tr><td>{html.escape(result['label'])}</td><td>{text}</td></tr>")
    out.append("</table>")
    return out


def _policy_section(run: Path, evaluations: list[dict]) -> list[str]:
    out = ["<h2>Policy and control loop</h2>"]
    latency = _first(run, "latency.json")
    if latency is not None:
        data = json.loads(latency.read_text())
        out.append(
            f"<p>{data['parameters']:,} parameters; {data['mean_ms']:.3f} ms per decision "
            f"(p99 {data['p99_ms']:.3f} ms) with onnxruntime on one CPU thread.</p>"
        )
    timed = [e for e in evaluations if e.get("timing")]
    if timed:
        out.append(
            "<table><tr><th>world</th><th>target period</th><th>mean</th><th>p99</th>"
            "<th>overruns</th><th>policy compute (mean / p99)</th></tr>"
        )
        for result in timed:
            t = result["timing"]
            out.append(
                f"<tr><td>{html.escape(result['label'])}</td><td>{t['target_ms']:.1f} ms</td>"
                f"<td>{t['period_mean_ms']:.1f} ms</td><td>{t['period_p99_ms']:.1f} ms</td>"
                f"<td>{t['overruns']} of {t['steps']}</td>"
                f"<td>{t['compute_mean_ms']:.2f} / {t['compute_p99_ms']:.2f} ms</td></tr>"
            )
        out.append("</table>")
        checks = timed[0].get("checks") or {}
        if checks:
            out.append(
                f"<p class='note'>Deployment: {checks.get('deploy_hz')} Hz (trained at "
                f"{checks.get('training_hz')} Hz), action scale {checks.get('action_scale')}, "
                f"joint units {', '.join(checks.get('joint_units', []))}.</p>"
            )
    return out


def _strips_section(run: Path, evaluations: list[dict]) -> list[str]:

    out = []
    for folder in RunFolder(run).episode_folders():
        episodes = sorted(folder.glob("episode_*.npz"))
        if not episodes:
            continue
        if not out:
            out.append("<h2>What the policy saw (policy resolution)</h2>")
        for path in episodes[:2]:
            episode = load_episode(path)
            if len(episode) == 0:
                continue
            verdict = "success" if episode.meta.get("success") else "failure"
            reason = episode.meta.get("reason") or ""
            title = f"{world_tag(folder)}, {path.stem}: {verdict} {reason}"
            out.append(f"<p class='note'>{html.escape(title)}</p>")
            out.append(image_tag(figures.image_strip(episode.images), title))
    return out


def write_page(title: str, sections: list[str], path: str | Path) -> Path:
    """A self-contained page of ready-made sections (a sweep's, for example)."""
    created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = (
        f"<h1>{html.escape(title)}</h1><p class='note'>realgap {__version__} &middot; "
        f"written {created}</p>"
    )
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style>"
        f"<script>{SCRIPT}</script></head><body>{head}{''.join(sections)}</body></html>"
    )
    path = Path(path)
    path.write_text(page)
    return path


def _extra_sections(run: Path) -> list[str]:
    """Sections other tools contribute as ready-made HTML fragments (``*.section.html``)."""
    return [path.read_text() for path in sorted(run.glob("**/*.section.html"))]


def _config_section(run: Path, evaluations: list[dict]) -> list[str]:
    out = ["<h2>Configuration</h2>"]
    for name in (runs.CONFIG, "demo.json"):
        path = _first(run, name)
        if path is not None:
            out.append(f"<p>{html.escape(str(path.relative_to(run)))}</p>")
            out.append(f"<pre>{html.escape(path.read_text())}</pre>")
    shown = set()  # one profile per world, however many policies met it
    for result in evaluations:
        if result.get("profile") and result["world"] not in shown:
            shown.add(result["world"])
            out.append(
                f"<p>Hidden reality profile of {html.escape(result['world'])} "
                "(never shown to the policy):</p>"
            )
            out.append(f"<pre>{html.escape(json.dumps(result['profile'], indent=2))}</pre>")
    return out
