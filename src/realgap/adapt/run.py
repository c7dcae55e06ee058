"""``realgap adapt``: measure an arm, build its twin, retrain, and prove the gain on it.

The reference write-up's own next steps, end to end:

1. **Record** a calibration session on the arm, camera locked first (or take one).
2. **Calibrate**: joint offsets and the camera mount together (hand-eye), tone,
   background, servos -- each with a standard deviation -- plus what images cannot
   tell (cube mass, size, friction) from the user's ``rig.toml``.
3. **Build the arm's twin**: the old policy runs the matched evaluation on the arm
   first, and its first frames feed the placement check; an operator whose positions
   are consistently off becomes part of the twin (``placement.offset_xy_m``) unless
   told only to report it. Then a randomization centred on the twin, widths from the
   uncertainties (:meth:`DomainRandomization.around`). The bridge will apply the
   measured joint offsets, so the policy trains with only their *residual* (zero,
   randomized within the uncertainty), as it will see them through the bridge.
4. **Retrain** in that twin: the student warm-starts from the user's policy; the
   privileged teacher (it sees no image) is reused as is when its world (physics,
   placement) matches what it was trained in, and fine-tuned when it does not.
   Bounded by a budget.
5. **Prove it**: the new policy (with the calibrated bridge) on the arm, same layout
   and spots as the old one; Wilson intervals and a Newcombe interval on the
   improvement, and the twin's own prediction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress

from realgap.adapt.decide import physics_changed, policy_to_keep, retrain_decision
from realgap.adapt.progress import Steps
from realgap.adapt.rig import load_rig
from realgap.adapt.section import adapt_section, calibration_lines, print_result
from realgap.adapt.teacher import teacher_check, with_slippery_cube
from realgap.bridge.camera_lock import load_lock_if_any, lock_camera
from realgap.bridge.env import DeployConfig
from realgap.bridge.worlds import at_start_pose
from realgap.diagnose.attribute import attribute
from realgap.diagnose.recording import CalibrationRecording, record_calibration
from realgap.diagnose.run import diagnose_recording
from realgap.errors import ConfigError, RealgapStop
from realgap.eval.layout import load_layout
from realgap.eval.matched import episode_rows, evaluate
from realgap.eval.placement import placement_check
from realgap.eval.stats import difference
from realgap.policy.folder import load_contract
from realgap.report.html import build_report
from realgap.runs import RunFolder, claim
from realgap.sim.calibration import Calibration
from realgap.speed import DeploySpeed
from realgap.train import distill
from realgap.train.checkpoint import Checkpointer

RETRAIN_TEACHER_STEPS = 100_000
"""PPO steps to fine-tune a reused teacher when the arm's physics differ."""
PLATEAU_EVALS = 3
"""A retraining stops after this many evaluations in the arm's twin without a new best."""


@dataclass(frozen=True)
class AdaptConfig:
    policy: Path
    """The policy to adapt: a policy folder (its run's teacher.pt is reused if present)."""
    out: Path
    """Run folder: recording, calibration, train/, before/ and after/ evaluations, report."""
    world: str = "fake"
    """``fake`` (a twin with a hidden reality profile) or ``real`` (the arm)."""
    recording: Path | None = None
    """A calibration recording to use instead of recording one."""
    rig: Path | None = None
    """``rig.toml``: what images cannot tell (cube mass, size, friction), weighed and
    measured by the user; see docs/adapt.md."""
    layout: Path | None = None
    """Evaluation layout TOML (default: the shipped 13 spots)."""
    trials: int = 39
    """Episodes per evaluation (old and new policy alike)."""
    budget_s: float = 600.0
    """Wall-clock budget for retraining (10 minutes on a 2-core CPU for Reach)."""
    quick: bool = False
    """A tiny run for smoke tests: minimal training and few episodes."""
    attribute: bool = True
    """Also attribute the old policy's gap to each measured difference (in the twin)."""
    follow_placement: bool = True
    """When the placement check finds the operator's positions consistently off, build
    the arm's twin with objects where they actually land (``placement.offset_xy_m``),
    so the retrained policy works where the cubes will be. False: only report it."""
    seed: int = 0
    resume: bool = False
    """Continue an interrupted run in ``out``: finished steps are kept, a retraining
    continues from its checkpoint, evaluations from their last finished episode."""


RETRAIN_ROUNDS = 1_000
"""DAgger rounds to allow when retraining: the budget, not the task's from-scratch round
count, ends it (PickCube's 16 rounds take about 2 of the default 10 minutes)."""
QUICK_TRIALS = 13  # one per spot of the default layout
QUICK_BUDGET_S = 60.0
DEFAULT_POSES, QUICK_POSES = 32, 16


def run_adapt(
    config: AdaptConfig,
    open_world: Callable,
    console: Console | None = None,
    deploy_config: DeployConfig | None = None,
) -> dict:
    """Run the five steps on the arm ``open_world(task)`` gives; returns ``adapt.json``."""
    console = console or Console()
    contract = load_contract(config.policy)
    task = contract.task
    rig = load_rig(config.rig)  # a bad rig.toml is refused before the arm moves
    run = RunFolder(config.out)
    run.write_json("adapt_config.json", {k: _plain(v) for k, v in asdict(config).items()})
    trials = QUICK_TRIALS if config.quick else config.trials
    cameras = Path(config.out) / "cameras"
    deploy_config = replace(deploy_config or DeployConfig(), lock_folder=cameras)
    # One speed for everything: the arm runs at it, so the twin's prediction, the
    # retraining and its evaluations use it too (refused here if untrained, unforced).
    deploy_config, speed_warning = deploy_config.for_policy(contract)
    arm_speed = deploy_config.speed
    if speed_warning:
        console.print(f"[yellow]{speed_warning}[/]")
    console.print(f"the arm runs at {arm_speed.describe()}; the twin and the retraining too")
    steps = Steps(run, config.resume)
    earlier = "resume" if config.resume else "overwrite"  # this command owns its folder

    console.rule("1/5 lock the camera and record a calibration session")
    world = open_world(task)
    lock = load_lock_if_any(world.camera.camera_id, cameras) if config.resume else None
    if lock is None:
        with at_start_pose(world):
            lock = lock_camera(world.camera, folder=cameras)
    console.print(f"locked {lock.camera_id}")
    if config.recording is not None:
        recording_path = Path(config.recording)
        CalibrationRecording.load(recording_path)  # refuse a bad file before any work
    elif steps.finished("record"):
        recording_path = run.file("recording.npz")
    else:
        world = open_world(task)
        world.camera.apply_settings(lock.settings)
        poses = QUICK_POSES if config.quick else DEFAULT_POSES
        recording_path = record_calibration(world, poses=poses, seed=config.seed).save(
            run.file("recording.npz")
        )
    console.print(f"recording: {recording_path}")
    steps.finish("record")

    console.rule("2/5 calibrate: joints and camera together, tone, servos (+ rig.toml)")
    if steps.finished("calibrate"):
        diagnosis = json.loads((run.file("calibration") / "diagnosis.json").read_text())
    else:
        # The rig's measured cube is the one the hand-eye fit must draw.
        cube_size, cube_sigma = rig.get("cube.size_m", (None, None))
        # The twin draws the shadows rig.toml says the room casts: the desk is learned
        # under the same light (MuJoCo lights a textured desk brighter with them).
        shadows = bool(rig.get("scene.shadows", (False, None))[0])
        diagnosis = diagnose_recording(
            recording_path,
            run.file("calibration"),
            config.layout,
            cube_size,
            cube_sigma,
            shadows=shadows,
        )
    calibration = Calibration.load(run.file("calibration") / "calibration.json")
    for key, (value, sigma) in rig.items():
        calibration.measure(key, value, sigma)
    calibration.save(run.file("calibration.json"))
    for warning in diagnosis["joints"]["warnings"] + diagnosis["camera"]["warnings"]:
        console.print(f"[yellow]warning: {warning}[/]")
    if diagnosis["joints"]["warnings"]:
        # Retraining around a geometry the fit itself distrusts would bake the error in.
        raise RealgapStop(
            "the joint and camera calibration was not applied (see the warnings above); "
            f"fix the cause and run again (the recording is kept: {recording_path})"
        )
    console.print(calibration_lines(calibration))
    steps.finish("calibrate")

    console.rule("3/5 the arm's twin: the old policy on the arm, where objects land")
    layout = load_layout(config.layout)
    results = {}

    def on_arm(name: str, policy: Path, calib: Calibration | None) -> dict:
        with Progress(transient=True, console=console) as progress:
            bar = progress.add_task(f"{name}: {policy}", total=trials)
            return evaluate(
                policy,
                config.world,
                layout,
                trials,
                open_world=open_world,
                deploy_config=deploy_config,
                seed=config.seed,
                out=run.file(name),
                progress=lambda n: progress.update(bar, advance=n),
                calibration=calib,
                earlier=earlier,
            )

    results["before"] = on_arm("before", config.policy, None)
    # Before any result: is the cube where the layout says? Judged with the measured
    # camera mount and joint offsets (uncalibrated, a moved camera looks like a moved cube).
    spots = [spot for _, spot in episode_rows(layout.for_task(task), trials)]
    placement = placement_check(
        task,
        results["before"]["episodes"],
        spots,
        calibration=calibration,
        uncorrected_offsets_rad=calibration.joint_offsets_rad,
    )
    if placement.get("flagged"):
        console.print(f"[bold red]placement check: {placement['note']}[/]")
        if config.follow_placement:
            offset_m, sigma_m = placement_offset(placement)
            calibration.measure("placement.offset_xy_m", offset_m, sigma_m)
            calibration.save(run.file("calibration.json"))
            console.print(
                "the arm's twin places objects where this operator does "
                f"({offset_m[0] * 100:+.1f} cm forward, {offset_m[1] * 100:+.1f} cm left); "
                "measuring from the rotation axis removes the need"
            )
    else:
        console.print(
            f"placement check: {placement.get('note') or 'the cube is where the layout says'}"
        )
    seen = calibration.through_bridge()
    seen.save(run.file("training_calibration.json"))
    physics = physics_changed(calibration)
    console.print("the teacher's world differs in: " + (", ".join(physics) or "nothing"))
    steps.finish("before")

    console.rule("4/5 retrain in the arm's twin (warm start)")
    args = retrain_args(config, task, run, physics, arm_speed)
    console.print(
        f"teacher: {_teacher_plan(args)}; student from {config.policy}; "
        f"budget {args.time_budget_s:.0f} s"
    )
    summary_file = Path(args.out) / "summary.json"
    needed = retraining_needed(
        config,
        task,
        layout,
        trials,
        seen,
        arm_speed,
        run,
        results["before"]["overall"],
        scripted_teacher=args.teacher != "ppo",
    )
    if not needed["retrain"]:
        console.print(f"[green]{needed['note']}[/]")
        trained, new_policy = {"skipped": needed}, Path(config.policy)
    elif steps.finished("retrain") and summary_file.is_file():
        trained, new_policy = json.loads(summary_file.read_text()), Path(args.out) / "policy"
    else:  # a retraining an interruption cut short continues from its checkpoint
        console.print(needed["note"])
        interrupted = config.resume and Checkpointer(RunFolder(args.out)).exists()
        # Reaching the old policy's nominal success in the arm's twin closes the gap.
        target = needed.get("nominal")
        trained = distill.main(replace(args, resume=interrupted, stop_at_success=target))
        new_policy = Path(args.out) / "policy"
    steps.finish("retrain")

    console.rule("5/5 matched evaluation on the arm: the adapted policy, same spots")
    results["after"] = on_arm("after", new_policy, calibration)
    steps.finish("after")
    # What the arm's twin predicted for the adapted policy, on the same layout; where the
    # cube's unmeasured friction decides the grasp, at both of its ends.
    predictions = {"twin": seen}
    if needed.get("expert", {}).get("friction_note"):
        predictions["twin_slippery_cube"] = with_slippery_cube(seen)
    for name, twin_calibration in predictions.items():
        results[name] = evaluate(
            new_policy,
            "sim",
            layout,
            trials,
            seed=config.seed,
            out=run.file(name),
            calibration=twin_calibration,
            earlier="overwrite",  # the sim reruns in seconds
            speed=arm_speed,
        )
    steps.finish("twin")
    gain = difference(results["after"]["overall"], results["before"]["overall"])
    keep = policy_to_keep(
        results["before"]["overall"],
        results["after"]["overall"],
        str(config.policy),
        str(new_policy),
        retrained=needed["retrain"],
        twin=results["twin"]["overall"],
    )
    keep["calibration"] = str(run.file("calibration.json")) if keep["calibrated"] else None
    summary = {
        "task": task,
        "policy": str(config.policy),
        "adapted_policy": str(new_policy),
        "keep": keep,
        "world": results["after"]["world"],
        "before_world": results["before"]["world"],
        "before": results["before"]["overall"],
        "after": results["after"]["overall"],
        "gain": gain,
        "twin": results["twin"]["overall"],
        "twin_minus_arm": difference(results["twin"]["overall"], results["after"]["overall"]),
        "twin_slippery_cube": results.get("twin_slippery_cube", {}).get("overall"),
        "trained_success_in_twin": trained.get("success_rate_nominal"),
        "retraining": needed,
        "placement_check": placement,
        "physics_changed": physics,
        "speed": {"control_hz": arm_speed.control_hz, "action_fraction": arm_speed.action_fraction},
        "calibration": {"values": calibration.values, "uncertainty": calibration.uncertainty},
        "seconds": steps.seconds,
    }
    attribution = None
    if config.attribute:
        console.rule("why the old policy failed: gap attribution in the twin")
        if steps.finished("attribution") and run.file("attribution.json").is_file():
            attribution = json.loads(run.file("attribution.json").read_text())
        else:
            attribution = attribute(
                config.policy, calibration, layout, trials, seed=config.seed, speed=arm_speed
            )
            run.write_json("attribution.json", attribution)
        steps.finish("attribution")
    summary["seconds"] = steps.seconds
    summary["total_seconds"] = round(sum(steps.seconds.values()), 1)
    run.write_json("adapt.json", summary)
    run.file("adapt.section.html").write_text(adapt_section(summary, attribution))
    report = build_report(config.out)
    console.print(f"report: {report}")
    print_result(console, summary)
    return summary


def retraining_needed(
    config: AdaptConfig,
    task: str,
    layout,
    trials: int,
    seen,
    speed,
    run,
    before: dict,
    scripted_teacher: bool = True,
) -> dict:
    """Whether the arm's differences need a retraining (:func:`retrain_decision`): the
    old policy in the arm's twin (with the bridge's calibration) and in the nominal
    twin, both at the arm's speed, and ``before``, its result on the arm. Before a
    retraining, the scripted expert (the teacher) runs in both twins: where it scores
    below the old policy in the arm's twin, the retraining would distill a worse
    teacher, so there is none (:func:`~realgap.adapt.teacher.teacher_check`; an
    unmeasured cube friction counts at its best for the teacher, since the retraining
    draws it). A PPO teacher is not judged so."""
    if config.quick:
        return {"retrain": True, "note": "quick run: retraining regardless"}
    common = dict(seed=config.seed, earlier="overwrite", speed=speed)
    nominal = evaluate(config.policy, "sim", layout, trials, out=run.file("old_nominal"), **common)
    twin = evaluate(
        config.policy, "sim", layout, trials, out=run.file("old_twin"), calibration=seen, **common
    )
    decision = retrain_decision(
        nominal["overall"]["success_rate"],
        twin["overall"]["success_rate"],
        before["success_rate"],
    )
    if decision["retrain"] and scripted_teacher:
        expert = teacher_check(task, seen, speed, seed=config.seed)
        decision["expert"] = expert
        decision["note"] += (
            f"; the teacher (the scripted expert) scores {expert['arm_twin']:.0%} in the "
            f"arm's twin ({expert['nominal']:.0%} in the nominal one)"
        )
        if expert["friction_note"]:
            decision["note"] += "; " + expert["friction_note"]
        if expert["best"] < decision["arm_twin"]:
            decision["retrain"] = False
            decision["note"] += (
                ", less than the policy there: not retraining (it would learn from a worse teacher)"
            )
    return decision


def placement_offset(check: dict) -> tuple[list[float], list[float]]:
    """The placement check's mean offset and its standard error, metres, arm frame."""
    mean = np.asarray(check["mean_offset_cm"], dtype=float) / 100
    return mean.tolist(), (np.asarray(check["standard_error_cm"], dtype=float) / 100).tolist()


def retrain_args(
    config: AdaptConfig,
    task: str,
    run: RunFolder,
    physics: list[str],
    speed: DeploySpeed | None = None,
):
    """The distill ``Args`` that retrain ``task`` in the arm's twin: the task's own
    defaults, warm-started, the teacher reused or fine-tuned, ended by the budget; at
    ``speed`` (the arm's: its episodes and evaluations), when given."""
    teacher = _teacher_of(Path(config.policy))
    overrides = {
        "out": str(run.file("train")),
        "seed": config.seed,
        "twin": str(run.file("training_calibration.json")),
        "init_student": str(config.policy),
        "time_budget_s": QUICK_BUDGET_S if config.quick else config.budget_s,
    }
    if speed is not None:
        hz, fraction = speed.control_hz, speed.action_fraction
        widths = run.file("speed.toml")
        widths.parent.mkdir(parents=True, exist_ok=True)
        widths.write_text(
            "# The arm's deploy speed: the retraining's episodes run at it.\n[randomization]\n"
            f"control_hz = [{hz!r}, {hz!r}]\naction_fraction = [{fraction!r}, {fraction!r}]\n"
            "speed_p = 1.0\n"
        )
        overrides.update(randomization=str(widths), eval_speed=(hz, fraction))
    if teacher is not None:
        overrides["init_teacher"] = str(teacher)
        overrides["teacher_steps"] = RETRAIN_TEACHER_STEPS if physics else 0
    args = distill.args_for_task(task, **overrides)
    args = replace(
        args,
        dagger_rounds=max(args.dagger_rounds, RETRAIN_ROUNDS),
        plateau_evals=PLATEAU_EVALS,
        final_evaluation=False,  # step 5 evaluates it in the arm's twin, on the layout
    )
    if args.teacher != "ppo":
        # A scripted teacher reads the true state: nothing to reuse or fine-tune.
        args = replace(args, init_teacher=None)
    if config.quick:
        quick = dict(distill.QUICK)
        if teacher is not None:
            quick["teacher_steps"] = min(quick["teacher_steps"], args.teacher_steps)
        args = replace(args, **quick)
    return args


def _teacher_plan(args) -> str:
    if args.teacher != "ppo":
        return "the scripted expert (privileged, nothing to retrain)"
    if args.init_teacher is None:
        return "trained from scratch (no teacher.pt next to the policy)"
    verb = "fine-tuned" if args.teacher_steps else "reused as is"
    return f"{args.init_teacher} {verb}"


def _teacher_of(policy: Path) -> Path | None:
    """The run's ``teacher.pt`` next to a policy folder, if it has one."""
    for candidate in (policy.parent / "teacher.pt", policy / "teacher.pt"):
        if candidate.is_file():
            return candidate
    return None


def _plain(value):
    return str(value) if isinstance(value, Path) else value


def check_out(out: Path, earlier: str) -> None:
    """Refuse to mix a new adapt run into an old one unless told; ``resume`` needs one."""
    if earlier not in ("refuse", "overwrite", "resume"):
        raise ConfigError(f"earlier must be refuse, overwrite or resume, got {earlier!r}")
    if earlier == "resume":
        if not (Path(out) / "adapt_config.json").is_file():
            raise ConfigError(f"{out}: no adapt run to resume")
        return
    claim([Path(out) / "adapt.json", Path(out) / "adapt_config.json"], earlier)
