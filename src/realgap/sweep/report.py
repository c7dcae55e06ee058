"""A finished (or partly finished) sweep's outputs: tables, the width plot, the report."""

from __future__ import annotations

from pathlib import Path

from realgap.report.html import write_page
from realgap.sweep.results import aggregate, collect, section_html, width_plot, write_tables
from realgap.sweep.spec import SweepSpec

SECTION = "sweep.section.html"
"""The report fragment, also picked up by ``realgap report`` on a folder above."""


def finish(spec: SweepSpec, root: str | Path, failed: dict[str, str] | None = None) -> dict:
    """Write ``results.csv``, ``summary.csv``/``.json``, ``width.png``, the report
    section and ``report.html`` from whatever has finished; returns their paths."""
    root = Path(root)
    rows = collect(spec, root, failed)
    pooled = aggregate(spec, rows)
    write_tables(root, rows, pooled)
    plot = width_plot(spec, pooled)
    (root / "width.png").write_bytes(plot)
    section = section_html(spec, pooled, plot)
    (root / SECTION).write_text(section)
    report = write_page(f"realgap sweep: {spec.name}", [section], root / "report.html")
    return {
        "table": str(root / "summary.csv"),
        "plot": str(root / "width.png"),
        "report": str(report),
        "rows": rows,
        "pooled": pooled,
    }
