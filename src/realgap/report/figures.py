"""Figures for the report, each returned as PNG bytes."""

from __future__ import annotations

import io

import numpy as np

from realgap.sim import robot


def png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buffer.getvalue()


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def training_curve(rows: list[dict]) -> bytes | None:
    """Success rate against wall time for each phase in a metrics.csv."""
    points = [
        r
        for r in rows
        if r.get("success_rate") not in (None, "") and r.get("update") not in (None, "")
    ]
    if not points:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    phases = sorted({r.get("phase") or "training" for r in points})
    for phase in phases:
        mine = [r for r in points if (r.get("phase") or "training") == phase]
        ax.plot(
            [float(r["seconds"]) for r in mine],
            [float(r["success_rate"]) for r in mine],
            marker="o",
            markersize=3,
            label=phase,
        )
    ax.set_xlabel("wall time (s)")
    ax.set_ylabel("success in the nominal sim")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return png(fig)


def success_map(result: dict, square_center, square_size: float) -> bytes:
    """Top-down map of the work area: training square, rotation axis, base, spots
    coloured by success rate (hollow markers: outside the training square; a dotted
    ring: not in the wrist camera's view from the start pose)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 4.2))
    cx, cy = square_center
    half = square_size / 2
    ax.add_patch(
        plt.Rectangle(
            (cy - half, cx - half), square_size, square_size, fill=False, ls="--", color="0.4"
        )
    )
    ax.text(cy - half, cx + half + 0.005, "training square", fontsize=7, color="0.4")
    base_back = -robot.PAN_AXIS_XY[0]
    ax.add_patch(plt.Rectangle((-0.04, base_back), 0.08, 0.062, color="0.85"))
    ax.plot([0], [0], marker="+", color="k", markersize=10)
    ax.text(0.005, -0.012, "rotation axis", fontsize=7)
    cmap = plt.get_cmap("RdYlGn")
    unseen = set(result.get("unseen_at_start") or ())
    for spot in result["spots"]:
        x, y = spot["cube"]
        value = spot["success_rate"]
        colour = "0.7" if value is None else cmap(value)
        face = colour if spot["in_distribution"] else "none"
        ax.scatter(
            [y],
            [x],
            s=260,
            c=[face] if face != "none" else "none",
            edgecolors=[colour],
            linewidths=2.5,
        )
        if spot["name"] in unseen:
            ax.scatter([y], [x], s=620, c="none", edgecolors=["0.35"], linewidths=1, ls=":")
        label = "-" if value is None else f"{value:.0%}"
        ax.text(y, x - 0.022, label, ha="center", fontsize=7)
    if unseen:
        ax.text(0.195, -0.05, "dotted ring: unseen from the start pose", fontsize=6, color="0.35")
    ax.set_xlim(0.2, -0.2)  # the arm's left (+y) drawn on the left, as seen from behind it
    ax.set_ylim(-0.06, 0.38)
    ax.set_aspect("equal")
    ax.set_xlabel("y (m, left +)")
    ax.set_ylabel("x (m, forward)")
    ax.set_title(result.get("label", result["world"]), fontsize=9)
    ax.grid(alpha=0.2)
    return png(fig)


def image_strip(images: np.ndarray, frames: int = 8, scale: int = 6) -> bytes:
    """Policy-resolution frames of one episode, evenly spaced, enlarged (nearest)."""
    plt = pyplot()
    picks = np.linspace(0, len(images) - 1, min(frames, len(images))).astype(int)
    tiles = [images[i].repeat(scale, 0).repeat(scale, 1) for i in picks]
    gap = np.full((tiles[0].shape[0], 4, 3), 255, dtype=np.uint8)
    strip = np.concatenate([t for tile in tiles for t in (tile, gap)][:-1], axis=1)
    fig, ax = plt.subplots(figsize=(strip.shape[1] / 110, strip.shape[0] / 110 + 0.2))
    ax.imshow(strip, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(f"steps {', '.join(str(i) for i in picks)}", fontsize=7)
    return png(fig)


def gap_bars(rows: list[dict]) -> bytes:
    """Success per world with 95% intervals (the gap at a glance)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 2.6))
    names = [r["world"] for r in rows]
    rates = [r["success_rate"] or 0.0 for r in rows]
    low = [rate - r["ci95"][0] for rate, r in zip(rates, rows)]
    high = [r["ci95"][1] - rate for rate, r in zip(rates, rows)]
    ax.barh(names, rates, xerr=[low, high], color="#4c72b0", capsize=4)
    ax.set_xlim(0, 1)
    ax.set_xlabel("success inside the training square (95% interval)")
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    return png(fig)
