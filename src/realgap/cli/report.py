"""``realgap report``: one self-contained HTML page for a run folder."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help="write RUN_DIR/report.html: training, gap table, success maps, timing"
    )
    parser.add_argument("run_dir", type=Path, help="a run folder (e.g. from realgap demo)")
    parser.add_argument("--out", type=Path, help="where to write (default RUN_DIR/report.html)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from realgap.report.html import build_report

    print(f"wrote {build_report(args.run_dir, args.out)}")
    return 0
