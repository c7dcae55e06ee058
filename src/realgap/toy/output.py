"""Terminal tables and the plot for ``realgap toy``."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from realgap.toy import published

TITLES = {
    "policies": "Which policies survive an unknown mass",
    "width": "Randomization width is a dial with a cost (blind feedback)",
    "adaptation": "RMA-style adaptation vs blind randomization",
}


def print_tables(result: dict, console: Console | None = None) -> None:
    """Print the three tables, measured mean ± std with the published mean beside it."""
    console = console or Console()
    masses = result["masses"]
    for name, rows in result["tables"].items():
        table = Table(title=TITLES[name], caption="measured mean ± std  (published)")
        table.add_column("row", no_wrap=True)
        for mass in masses:
            table.add_column(f"m={mass:g}", justify="right")
        for row, cells in rows.items():
            refs = published.TABLES[name].get(row)
            texts = []
            for i, (mean, std) in enumerate(zip(cells["mean"], cells["std"])):
                ref = f" ({refs[i]:.{published.DECIMALS[name]}f})" if refs else ""
                texts.append(f"{mean:.3f}±{std:.3f}[dim]{ref}[/dim]")
            table.add_row(row, *texts)
        console.print(table)
    estimates = result["mass_estimates"]
    console.print(
        f"Mass estimates after {estimates['history_steps']} steps, worst seed, |estimate - truth|:"
    )
    for label, key in (
        ("teacher acts on estimates", "abs_error_adapted"),
        ("teacher acts on true mass", "abs_error_true_mass"),
    ):
        worst = [max(seed[i] for seed in estimates[key]) for i in range(len(estimates["masses"]))]
        cells = ", ".join(f"m={m:g}: {w:.3f}" for m, w in zip(estimates["masses"], worst))
        console.print(f"  {label:27s} {cells}")
    rounded, raw = (
        published.deviations(result["tables"]),
        published.deviations(result["tables"], rounded=False),
    )
    console.print(
        "Largest deviation from the published means (rounded as published / raw): "
        + ", ".join(f"{k} {rounded[k]:.3f}/{raw[k]:.4f}" for k in rounded)
        + f"   ({result['seconds']:.1f} s)"
    )


def plot(result: dict, path: Path) -> None:
    """Final error against test mass, one line per policy of the first two tables."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    masses = result["masses"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), sharey=False)
    for ax, name in zip(axes, ("policies", "width", "adaptation")):
        for row, cells in result["tables"][name].items():
            ax.errorbar(masses, cells["mean"], yerr=cells["std"], marker="o", capsize=3, label=row)
        ax.axvline(1.0, color="grey", lw=0.8, ls=":")
        ax.set_title(TITLES[name], fontsize=10)
        ax.set_xlabel("test mass")
        ax.set_ylabel("|x_final - 1|")
        ax.set_xticks(masses)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
