"""``realgap demo``: the whole loop on one laptop CPU, no arm needed.

1. Train a Reach policy with the default CPU recipe (the privileged scripted expert
   labels a visual DAgger student), export it to ONNX and time it.
2. Lock the fake arms' cameras at the start pose (the shipped "typical SO-101"
   profile powers it up with auto-exposure on, and servos whose stored goal is 0).
3. Evaluate on the default layout in the nominal sim, on the typical fake arm, and
   on a fake arm with the reference write-up's plumbing failures, for contrast.
4. Print the gap table, write ``summary.json`` and the HTML report.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from realgap.bridge.camera_lock import lock_camera
from realgap.bridge.env import DeployConfig
from realgap.bridge.worlds import at_start_pose, open_fake_world
from realgap.eval.layout import load_layout
from realgap.eval.matched import evaluate
from realgap.eval.stats import difference
from realgap.policy.checkpoint import load_contract
from realgap.policy.onnx_policy import export_onnx, measure_latency
from realgap.report.html import build_report
from realgap.runtime import configure_torch_threads
from realgap.train import distill


@dataclass(frozen=True)
class DemoConfig:
    out: Path = Path("runs/demo")
    """Run folder."""
    quick: bool = False
    """A tiny run (about a minute) for smoke tests: the policy will be poor."""
    profile: str = "typical_so101"
    """The fake arm's hidden reality profile."""
    contrast_profile: str | None = "reference_pitfalls"
    """A second fake arm with the reference write-up's plumbing failures, for contrast
    (reported as ``worlds["fake_<name>"]``); None skips it."""
    trials: int = 39
    """Episodes per world, over the default layout's 13 spots."""
    seed: int = 0


QUICK_TRIALS = 13


def run_demo(config: DemoConfig, console: Console | None = None) -> dict:

    console = console or Console()
    started = time.perf_counter()
    configure_torch_threads()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    trials = QUICK_TRIALS if config.quick else config.trials
    (out / "demo.json").write_text(json.dumps({**asdict(config), "out": str(out)}, indent=2))

    args = distill.args_for_task("Reach", out=str(out / "train"), seed=config.seed)
    teacher = "scripted expert" if args.teacher == "scripted" else "PPO teacher"
    console.rule(f"1/4 train Reach (distill recipe: privileged {teacher} -> visual student)")
    if config.quick:
        args = replace(args, **distill.QUICK)
    trained = distill.main(args)
    policy = out / "train" / "policy"
    export_onnx(policy)
    latency = measure_latency(policy, decisions=500 if config.quick else 2000)
    (out / "latency.json").write_text(json.dumps(latency, indent=2))
    console.print(
        f"trained in {trained['seconds']:.0f} s: {trained['success_rate_nominal']:.0%} in the "
        f"nominal sim; {latency['parameters']:,} parameters, {latency['mean_ms']:.3f} ms/decision"
    )

    profiles = {"fake": config.profile}
    if config.contrast_profile:
        profiles[f"fake_{config.contrast_profile}"] = config.contrast_profile
    console.rule(f"2/4 lock the fake arms' cameras ({', '.join(profiles.values())})")
    cameras = out / "cameras"
    for profile in profiles.values():
        world = open_fake_world("Reach", profile, seed=config.seed)
        with at_start_pose(world):
            lock = lock_camera(world.camera, folder=cameras)
        console.print(f"locked {lock.camera_id}: reference brightness {lock.reference_mean:.3f}")

    # The sim runs at the speed the arms will: a matched evaluation differs in the world only.
    deploy, _ = DeployConfig(lock_folder=cameras).for_policy(load_contract(policy))
    console.rule(f"3/4 matched evaluation on the default layout at {deploy.speed.describe()}")
    layout = load_layout()
    results = {}
    for name, profile in {"sim": None, **profiles}.items():
        with Progress(transient=True, console=console) as progress:
            bar = progress.add_task(f"eval in {profile or 'sim'}", total=trials)
            results[name] = evaluate(
                policy,
                "sim" if profile is None else "fake",
                layout,
                trials,
                open_world=lambda task, p=profile: open_fake_world(task, p, seed=config.seed),
                deploy_config=deploy,
                speed=deploy.speed if profile is None else None,
                seed=config.seed,
                out=out / "eval",
                progress=lambda n, bar=bar, progress=progress: progress.update(bar, advance=n),
                earlier="overwrite",  # this command owns its folder
            )

    console.rule("4/4 the gap")
    gaps = {
        name: difference(results["sim"]["overall"], result["overall"])
        for name, result in results.items()
        if name != "sim"
    }
    for result in results.values():
        placement = result.get("placement_check") or {}
        if placement.get("flagged"):
            console.print(f"[bold red]{result['world']}: placement check: {placement['note']}[/]")
    _print_gap(console, results, gaps)
    summary = {
        "task": "Reach",
        "worlds": {name: _world_summary(result) for name, result in results.items()},
        "gap": gaps["fake"],
        "gaps": gaps,
        "policy": str(policy),
        "fake_profile": config.profile,
        "speed": {"control_hz": deploy.control_hz, "action_fraction": deploy.action_scale},
        "seconds": round(time.perf_counter() - started, 1),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    report = build_report(out)
    console.print(f"summary: {out / 'summary.json'}; report: {report}")
    console.print(f"done in {summary['seconds']:.0f} s")
    return summary


def _pct(value) -> str:
    return "-" if value is None else f"{value:.0%}"


def _world_summary(result: dict) -> dict:
    overall = result["overall"]
    return {
        "world": result["world"],
        "success_rate": overall["success_rate"],
        "ci95": overall["ci95"],
        "trials": overall["trials"],
        "outside_training_square": {
            k: result["out_of_distribution"][k] for k in ("success_rate", "ci95", "trials")
        },
    }


def _print_gap(console: Console, results: dict, gaps: dict) -> None:
    table = Table(title="Reach: success inside the training square (95% intervals)")
    for column in ("world", "success", "95% interval", "trials", "outside the square"):
        table.add_column(column)
    for result in results.values():
        overall, outside = result["overall"], result["out_of_distribution"]
        table.add_row(
            result["world"],
            _pct(overall["success_rate"]),
            f"{overall['ci95'][0]:.0%}-{overall['ci95'][1]:.0%}",
            str(overall["trials"]),
            f"{_pct(outside['success_rate'])} of {outside['trials']}",
        )
    console.print(table)
    for result in results.values():
        if result.get("stopped"):
            console.print(f"[yellow]{result['world']} stopped early: {result['stopped']}[/]")
    for name, gap in gaps.items():
        if gap["gap"] is not None:
            console.print(
                f"reality gap, sim - {results[name]['world']}: {gap['gap']:+.0%} "
                f"(95% interval {gap['ci95'][0]:+.0%} to {gap['ci95'][1]:+.0%})"
            )
