"""The co-training experiment: sim-only vs fine-tuned on real vs co-trained.

Reproduces the published comparison on the twin and a fake arm:

1. record sim demonstrations (randomized twin) and 10 "real" ones (fake arm, through
   the bridge);
2. train on sim only; fine-tune that policy on the real demos only; co-train fresh
   policies on both, one per mix ratio (the share of each batch from real demos);
3. evaluate them all on the same layout in the nominal sim and on the fake arm,
   with Wilson intervals, and plot them.

The reference found 80% sim / 50% real for sim-only, 75% / 65% after fine-tuning on
10 real demos, and recommended co-training.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.table import Table

from realgap.bridge.env import DeployConfig
from realgap.bridge.worlds import open_fake_world
from realgap.eval.layout import load_layout
from realgap.eval.matched import evaluate
from realgap.imitate import train
from realgap.imitate.demos import record_fake_demos, record_sim_demos

REFERENCE = {
    "sim only": {"sim": 0.80, "real": 0.50},
    "fine-tuned on real": {"sim": 0.75, "real": 0.65},
}


@dataclass(frozen=True)
class ExperimentConfig:
    out: Path = Path("runs/cotrain")
    task: str = "PickCube"
    profile: str = "typical_so101"
    """The fake arm standing in for the real one."""
    sim_demos: int = 200
    real_demos: int = 10
    sim_noise: float = 0.3
    """DART noise on the sim demonstrations (see ``record_sim_demos``)."""
    mixes: tuple[float, ...] = (0.1, 0.3)
    """Co-training runs: the fraction of each batch from the real demos, one run each."""
    policy: str = "chunk"
    """chunk (built-in) or act (LeRobot's ACT; the real extra)."""
    steps: int = 10000
    """Gradient steps for sim-only and co-training."""
    finetune_steps: int = 300
    trials: int = 78
    """Episodes per policy per world over the default layout (54 inside the square)."""
    seed: int = 0


def run_experiment(config: ExperimentConfig, console: Console | None = None) -> dict:

    console = console or Console()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "experiment.json").write_text(json.dumps({**asdict(config), "out": str(out)}, indent=2))
    cameras = out / "cameras"
    console.rule("demonstrations")
    sim_demos, real_demos = out / "demos_sim", out / "demos_real"
    recorded = {}
    if not (sim_demos / "meta" / "info.json").exists():
        recorded["sim"] = record_sim_demos(
            config.task, config.sim_demos, sim_demos, config.seed, noise=config.sim_noise
        )
    if not (real_demos / "meta" / "info.json").exists():
        recorded["real"] = record_fake_demos(
            config.task, config.profile, config.real_demos, real_demos, config.seed, cameras
        )
    for name, folder in (("sim", sim_demos), ("real", real_demos)):
        if name not in recorded:  # reused from an earlier run in this folder
            info = json.loads((folder / "meta" / "info.json").read_text())
            recorded[name] = {"episodes": info["total_episodes"], "reused": True}
    console.print(f"demonstrations: {recorded}")

    base = train.Args(steps=config.steps, seed=config.seed, policy=config.policy, progress=True)
    policies = {"sim only": replace(base, out=str(out / "sim_only"), sim=str(sim_demos))}
    policies["fine-tuned on real"] = replace(
        base,
        out=str(out / "finetuned"),
        real=str(real_demos),
        init=str(out / "sim_only" / "policy"),
        steps=config.finetune_steps,
    )
    for mix in config.mixes:
        policies[cotrained_name(mix, config.mixes)] = replace(
            base,
            out=str(out / f"cotrained_{round(mix * 100)}"),
            sim=str(sim_demos),
            real=str(real_demos),
            mix=mix,
        )
    console.rule("training")
    summaries = {name: _train_or_reuse(args, console) for name, args in policies.items()}

    console.rule("evaluation")
    layout = load_layout()
    results = {}
    for name, summary in summaries.items():
        results[name] = {}
        for world in ("sim", "fake"):
            result = evaluate(
                summary["policy"],
                world,
                layout,
                config.trials,
                open_world=lambda task: open_fake_world(task, config.profile, seed=config.seed),
                deploy_config=DeployConfig(lock_folder=cameras),
                seed=config.seed,
                out=out / "eval" / Path(policies[name].out).name,
                earlier="overwrite",  # this command owns its folder
            )
            results[name][world] = result["overall"]
    table = {
        "task": config.task,
        "profile": config.profile,
        "policies": results,
        "reference": REFERENCE,
        "demos": recorded,
    }
    (out / "cotrain.json").write_text(json.dumps(table, indent=2))
    _print(console, results)
    title = f"{config.task}, {config.policy} policy; fake arm: {config.profile}"
    plot = plot_results(results, out / "cotrain.png", title)
    (out / "cotrain.section.html").write_text(section_html(results, config, plot))
    return table


def cotrained_name(mix: float, mixes) -> str:
    return "co-trained" if len(mixes) == 1 else f"co-trained, {mix:.0%} real"


def _train_or_reuse(args, console: Console) -> dict:
    """Train, unless this folder already holds a finished run of exactly these
    arguments (an interrupted experiment resumes where it stopped)."""

    folder = Path(args.out)
    summary, config = folder / "summary.json", folder / "config.json"
    wanted = json.loads(json.dumps({"recipe": "imitate", **asdict(args)}))
    if summary.exists() and config.exists() and json.loads(config.read_text()) == wanted:
        console.print(f"reusing {folder} (same arguments)")
        return json.loads(summary.read_text())
    return train.main(args)


def _print(console: Console, results: dict) -> None:
    table = Table(title="imitation: success inside the training square (95% intervals)")
    for column in ("policy", "sim", "fake arm", "reference sim / real"):
        table.add_column(column)
    for name, worlds in results.items():
        reference = REFERENCE.get(name)
        table.add_row(
            name,
            _rate(worlds["sim"]),
            _rate(worlds["fake"]),
            f"{reference['sim']:.0%} / {reference['real']:.0%}" if reference else "-",
        )
    console.print(table)


def _rate(rate: dict) -> str:
    low, high = rate["ci95"]
    return f"{rate['success_rate']:.0%} ({low:.0%}-{high:.0%})"


def plot_results(results: dict, path: Path, title: str | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(results)
    fig, ax = plt.subplots(figsize=(1.9 * len(names) + 1.2, 3))
    for offset, world, colour in ((-0.18, "sim", "#4c72b0"), (0.18, "fake", "#dd8452")):
        rates = np.array([results[n][world]["success_rate"] for n in names])
        low = rates - np.array([results[n][world]["ci95"][0] for n in names])
        high = np.array([results[n][world]["ci95"][1] for n in names]) - rates
        ax.bar(
            np.arange(len(names)) + offset,
            rates,
            0.36,
            yerr=[low, high],
            capsize=3,
            color=colour,
            label="sim" if world == "sim" else "fake arm",
        )
        reference = [REFERENCE.get(n, {}).get("sim" if world == "sim" else "real") for n in names]
        shown = [(i + offset, r) for i, r in enumerate(reference) if r is not None]
        if shown:
            ax.scatter(
                *zip(*shown),
                marker="D",
                s=36,
                facecolor="white",
                edgecolor="black",
                zorder=3,
                label="reference (published)" if world == "sim" else None,
            )
    ax.set_xticks(range(len(names)), names)
    ax.set_ylim(0, 1.15)  # headroom for the legend above the bars
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel("success (95% interval)")
    ax.legend(fontsize=8, ncol=3, loc="upper center")
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def section_html(results: dict, config: ExperimentConfig, plot: Path) -> str:
    import base64

    def reference(name: str) -> str:
        values = REFERENCE.get(name)
        return f"{values['sim']:.0%} / {values['real']:.0%}" if values else "-"

    rows = "".join(
        f"<tr><td>{name}</td><td>{_rate(w['sim'])}</td><td>{_rate(w['fake'])}</td>"
        f"<td>{reference(name)}</td></tr>"
        for name, w in results.items()
    )
    image = base64.b64encode(plot.read_bytes()).decode()
    return (
        f"<h2>Imitation and co-training ({config.task}, {config.policy} policy, "
        f"fake arm: {config.profile})</h2>"
        f"<p class='note'>{config.sim_demos} sim and {config.real_demos} real demonstrations; "
        f"co-training mix {', '.join(f'{m:.0%}' for m in config.mixes)} real. "
        "Reference: sim-only 80% sim / 50% real, "
        "fine-tuned on 10 real demos 75% / 65%.</p>"
        "<table><tr><th>policy</th><th>sim</th><th>fake arm</th>"
        f"<th>reference sim / real</th></tr>{rows}</table>"
        f"<figure><img alt='co-training' src='data:image/png;base64,{image}'></figure>"
    )
