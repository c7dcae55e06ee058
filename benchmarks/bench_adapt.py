"""Benchmark: does `realgap adapt` close the gap on fake arms it was not tuned to?

Usage: python benchmarks/bench_adapt.py POLICY [--profiles reference_pitfalls ...]
       [--random N [--first-seed S]] [--trials 39] [--budget 10] [--rig rig.toml]
       [--rig-friction] [--out runs/bench_adapt]

``--random N`` adapts on N random arms (realgap.bridge.random_arms, seeds S..S+N-1)
instead of the named profiles: arms nobody tuned to. Each arm's rig.toml is written
from its hidden cube (as a user would weigh and measure it) and whether its room casts
shadows (as a user would see); ``--rig-friction`` adds the cube's and the jaws' friction,
as a user who tilt-tests them would (otherwise the twin keeps its nominal friction).

For each fake arm: the whole adapt run (record, hand-eye calibration, retrain in the
arm's twin with the budget, matched before/after). Prints success inside the training
square with 95% intervals, the gain with its Newcombe interval, the twin's prediction
for the adapted policy, the scripted expert on the arm's hidden physics at its speed
(what a policy can reach there), the calibration's errors against the profile's hidden
truth (with the reported standard deviations), and the wall time of each step.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def named_arms(names_or_paths: list[str]) -> dict:
    """Profiles by their own names, which name their output folders (a path would nest)."""
    from realgap.bridge.profile import load_profile

    arms = {}
    for name_or_path in names_or_paths:
        profile = load_profile(name_or_path)
        if profile.name in arms:
            raise SystemExit(f"two profiles are named {profile.name!r}; rename one")
        arms[profile.name] = profile
    return arms


def rig_text(profile, friction: bool = False) -> str:
    """A random arm's rig.toml: its cube weighed and measured, its shadows seen, and with
    ``friction`` the cube's and jaws' friction tilt-tested (rig.toml's default sigmas)."""
    cube = profile.twin.cube
    text = f"[cube]\nmass_kg = {cube.mass_kg}\nsize_m = {cube.size_m}\n"
    if friction:
        text += (
            f"friction = {cube.friction}\n[fingers]\nfriction = {profile.twin.fingers.friction}\n"
        )
    shadows = "true" if profile.appearance.lights.shadows else "false"
    return text + f"[scene]\nshadows = {shadows}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy", type=Path)
    parser.add_argument("--profiles", nargs="+", default=["reference_pitfalls", "workbench_so101"])
    parser.add_argument("--trials", type=int, default=39)
    parser.add_argument("--budget", type=float, default=10.0, help="minutes")
    parser.add_argument("--rig", type=Path, help="rig.toml: the weighed cube (docs/adapt.md)")
    parser.add_argument(
        "--rig-friction", action="store_true", help="random arms: rig.toml gives friction"
    )
    parser.add_argument("--random", type=int, default=0, help="adapt on N random arms")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--appearance", action="store_true", help="random arms with a room")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_adapt"))
    args = parser.parse_args()

    from realgap.adapt.run import AdaptConfig, run_adapt
    from realgap.bridge.random_arms import sample_arm
    from realgap.bridge.worlds import open_fake_world
    from realgap.runtime import configure_rendering, configure_torch_threads
    from realgap.sim.scripted import expert_success
    from realgap.speed import DeploySpeed

    configure_rendering()
    configure_torch_threads()
    arms = named_arms(args.profiles)
    if args.random:
        seeds = range(args.first_seed, args.first_seed + args.random)
        arms = {f"random_arm_{s}": sample_arm(s, appearance=args.appearance) for s in seeds}
    rows = []
    for name, profile in arms.items():
        rig = args.rig
        if args.random:  # the user weighs and measures their cube, and looks for shadows
            rig = args.out / name / "rig.toml"
            rig.parent.mkdir(parents=True, exist_ok=True)
            rig.write_text(rig_text(profile, friction=args.rig_friction))
        config = AdaptConfig(
            policy=args.policy,
            out=args.out / name,
            trials=args.trials,
            budget_s=args.budget * 60,
            rig=rig,
            attribute=False,
        )
        summary = run_adapt(config, lambda task, p=profile: open_fake_world(task, p))
        # What the arm's hidden physics allow the teacher at the arm's speed: a ceiling
        # the adapted policy cannot be blamed for missing (64 episodes, no images).
        speed = DeploySpeed(**summary["speed"])
        summary["expert_on_truth"] = expert_success(summary["task"], profile.twin, speed)
        rows.append((name, summary, profile.twin))

    def rate(r: dict) -> str:
        return f"{r['success_rate']:.0%} ({r['ci95'][0]:.0%}-{r['ci95'][1]:.0%}, n={r['trials']})"

    def expert(s: dict) -> str:
        """The scripted expert's success in the arm's twin and the nominal one (asked
        before a retraining), and with a slippery cube where its friction was unmeasured."""
        found = s["retraining"].get("expert")
        if not found:
            return "-"
        slippery = found.get("slippery_cube")
        extra = f" (slippery cube {slippery:.0%})" if slippery is not None else ""
        return f"{found['arm_twin']:.0%} / {found['nominal']:.0%}{extra}"

    def twin(s: dict) -> str:
        """The twin's prediction, and with a slippery cube where its friction decided."""
        slippery = s.get("twin_slippery_cube")
        extra = f" (slippery cube {slippery['success_rate']:.0%})" if slippery else ""
        return rate(s["twin"]) + extra

    def kept(s: dict) -> dict:
        """The matched evaluation of what adapt says to deploy (adapted, or as before)."""
        return s["after"] if s["keep"]["adapted"] else s["before"]

    print(
        "\nprofile | before | after | gain (Newcombe 95%) | twin predicts | retrained | "
        "expert in the arm's twin / nominal | expert on the arm's truth | kept | total s | "
        "seconds"
    )
    for name, s, _ in rows:
        g = s["gain"]
        print(
            f"{name} | {rate(s['before'])} | {rate(s['after'])} | {g['gap']:+.0%} "
            f"({g['ci95'][0]:+.0%} to {g['ci95'][1]:+.0%}) | {twin(s)} | "
            f"{'yes' if s['retraining']['retrain'] else 'no'} | {expert(s)} | "
            f"{s['expert_on_truth']:.0%} | "
            f"{'adapted' if s['keep']['adapted'] else 'as before'} {kept(s)['success_rate']:.0%} | "
            f"{s['total_seconds']:.0f} | {s['seconds']}"
        )
    gaps = [s["twin"]["success_rate"] - s["after"]["success_rate"] for _, s, _ in rows]
    seconds = np.mean([s["total_seconds"] for _, s, _ in rows])
    worse = sum(s["after"]["success_rate"] < s["before"]["success_rate"] for _, s, _ in rows)
    print(
        f"{len(rows)} arms: mean twin - arm after adapt {np.mean(gaps):+.1%}; after adapt "
        f"worse than before on {worse} (kept as before there); mean after "
        f"{np.mean([s['after']['success_rate'] for _, s, _ in rows]):.1%}, kept "
        f"{np.mean([kept(s)['success_rate'] for _, s, _ in rows]):.1%}; mean run {seconds:.0f} s"
    )
    print("\ncalibration error vs the hidden profile (error / reported sigma)")
    for name, s, truth in rows:
        values, sigma = s["calibration"]["values"], s["calibration"]["uncertainty"]
        for key in (
            "joints.zero_offset_deg",
            "camera.offset_m",
            "camera.rotation_deg",
            "camera.fov_deg_delta",
            "servo.kp_scale",
            "servo.latency_steps",
        ):
            if key not in values:
                continue
            section, field = key.split(".")
            true_value = np.asarray(getattr(getattr(truth, section), field), dtype=float)
            error = np.abs(np.asarray(values[key], dtype=float) - true_value)
            ratio = error / np.maximum(np.asarray(sigma.get(key, 0.0), dtype=float), 1e-12)
            print(f"{name} {key}: max error {error.max():.4g}, max error/sigma {ratio.max():.2f}")


if __name__ == "__main__":
    main()
