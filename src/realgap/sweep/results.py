"""A sweep's results: one row per run and world, seeds pooled per setting, a width plot.

Pooling counts successes and trials over seeds (Wilson interval on the pooled
counts); the spread between seeds is kept beside it (``seed_rates``), since
training seeds vary more than evaluation episodes do.
"""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path

from realgap.eval.stats import rate
from realgap.report import figures
from realgap.report.html import image_tag
from realgap.sweep.jobs import TRAINED, evaluation_file
from realgap.sweep.spec import SweepSpec

FIELDS = ("setting", "seed", "world", "status", "successes", "trials", "success_rate", "ci95")


def collect(spec: SweepSpec, root: Path, failed: dict[str, str] | None = None) -> list[dict]:
    """Every run x world of the sweep, finished or not (``status``: done, failed, missing)."""
    failed = failed or {}
    rows = []
    for run in spec.runs():
        folder = root / "runs" / run.folder_name
        for world in spec.worlds:
            path = evaluation_file(folder, world)
            row = {"setting": run.setting, "seed": run.seed, "world": spec.label(world)}
            if path.exists():
                result = json.loads(path.read_text())
                counts = rate(result["successes"], result["trials"])
                rows.append({**row, "status": "done", **counts})
            else:
                status = "failed" if run.folder_name in failed else "missing"
                if not (folder / TRAINED).exists() and status == "missing":
                    status = "missing (not trained)"
                rows.append({**row, "status": status, "error": failed.get(run.folder_name)})
    return rows


def aggregate(spec: SweepSpec, rows: list[dict]) -> list[dict]:
    """Per setting and world: seeds pooled, with each seed's own rate."""
    out = []
    for name, values in spec.settings:
        for world in map(spec.label, spec.worlds):
            mine = [
                r
                for r in rows
                if r["setting"] == name and r["world"] == world and r["status"] == "done"
            ]
            successes = sum(r["successes"] for r in mine)
            trials = sum(r["trials"] for r in mine)
            out.append(
                {
                    "setting": name,
                    "values": values,
                    "world": world,
                    "seeds": len(mine),
                    **rate(successes, trials),
                    "seed_rates": [round(r["success_rate"], 4) for r in mine],
                }
            )
    return out


def write_tables(root: Path, rows: list[dict], pooled: list[dict]) -> None:
    """``results.csv`` (every run x world), ``summary.csv`` and ``summary.json`` (pooled)."""
    with (root / "results.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    with (root / "summary.csv").open("w", newline="") as handle:
        keys = ("setting", "world", "seeds", "successes", "trials", "success_rate", "ci95")
        writer = csv.DictWriter(handle, [*keys, "seed_rates"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(pooled)
    (root / "summary.json").write_text(json.dumps({"runs": rows, "pooled": pooled}, indent=2))


def width_plot(spec: SweepSpec, pooled: list[dict]) -> bytes:
    """Success against setting (the width dial), one line per world, Wilson bars."""
    plt = figures.pyplot()
    names = [name for name, _ in spec.settings]
    fig, ax = plt.subplots(figsize=(6.8, 3.6))
    for offset, world in enumerate(map(spec.label, spec.worlds)):
        mine = {r["setting"]: r for r in pooled if r["world"] == world}
        xs, ys, low, high = [], [], [], []
        for index, name in enumerate(names):
            row = mine.get(name)
            if row is None or row["success_rate"] is None:
                continue
            xs.append(index + (offset - (len(spec.worlds) - 1) / 2) * 0.04)
            ys.append(row["success_rate"])
            low.append(row["success_rate"] - row["ci95"][0])
            high.append(row["ci95"][1] - row["success_rate"])
        ax.errorbar(xs, ys, yerr=[low, high], marker="o", capsize=3, label=world)
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("success (seeds pooled)")
    ax.set_title(
        f"{spec.name}: {spec.task}, {len(spec.seeds)} seeds pooled "
        f"(in-distribution episodes of {spec.trials} trials each)"
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return figures.png(fig)


def section_html(spec: SweepSpec, pooled: list[dict], plot: bytes) -> str:
    """The report's sweep section: the plot and the pooled table."""
    head = "".join(f"<th>{html.escape(spec.label(w))}</th>" for w in spec.worlds)
    body = []
    for name, values in spec.settings:
        cells = []
        for world in map(spec.label, spec.worlds):
            row = next(r for r in pooled if r["setting"] == name and r["world"] == world)
            if row["success_rate"] is None:
                cells.append("<td>-</td>")
                continue
            low, high = row["ci95"]
            seeds = ", ".join(f"{v:.0%}" for v in row["seed_rates"])
            cells.append(
                f"<td>{row['success_rate']:.0%} ({low:.0%}-{high:.0%})"
                f"<br><small>seeds: {seeds}</small></td>"
            )
        setting = html.escape(name)
        detail = html.escape(json.dumps(values))
        body.append(f"<tr><td title='{detail}'>{setting}</td>{''.join(cells)}</tr>")
    return (
        f"<h2>Sweep: {html.escape(spec.name)}</h2>"
        f"<p class='note'>{html.escape(spec.task)}, recipe {html.escape(spec.recipe)}, "
        f"seeds {list(spec.seeds)}, {spec.trials} matched-evaluation trials per world "
        "and seed; seeds pooled (Wilson 95%).</p>"
        + image_tag(plot, "success against setting")
        + f"<table><tr><th>setting</th>{head}</tr>{''.join(body)}</table>"
    )
