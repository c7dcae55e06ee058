"""``realgap adapt``: measure an arm, build its twin, retrain, and prove the gain on it.

The reference write-up's own next steps, end to end:

1. **Record** a calibration session on the arm, camera locked first (or take one).
2. **Calibrate**: joint offsets and the camera mount together (hand-eye), tone,
   background, servos -- each with a standard deviation -- plus what images cannot
   tell (cube mass, size, friction) from the user's ``rig.toml``.
3. **Build the arm's twin**: the old policy runs the matched evaluation on the arm
   first (step 2's fit runs beside it, :mod:`realgap.adapt.beside`: the arm needs no
   calibration for the old policy), and its first frames feed the placement check; an
   operator whose positions are consistently off becomes part of the twin
   (``placement.offset_xy_m``) unless told only to report it. Then a randomization
   centred on the twin, widths from the uncertainties
   (:meth:`DomainRandomization.around`). The bridge will apply the measured joint
   offsets, so the policy trains with only their *residual* (zero, randomized within
   the uncertainty), as it will see them through the bridge.
4. **Retrain** in that twin: the student warm-starts from the user's policy; the
   privileged teacher (it sees no image) is reused as is when its world (physics,
   placement) matches what it was trained in, and fine-tuned when it does not.
   Bounded by a budget.
5. **Prove it**: the new policy (with the calibrated bridge) on the arm, same layout
   and spots as the old one; Wilson intervals and a Newcombe interval on the
   improvement, and the twin's own prediction (with the gap attribution, beside the
   arm's evaluation).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress

from realgap.adapt.beside import Beside, timed
from realgap.adapt.config import QUICK_TRIALS, AdaptConfig
from realgap.adapt.decide import physics_changed, policy_to_keep
from realgap.adapt.progress import Steps
from realgap.adapt.retrain import retrain_args, retraining_needed, teacher_plan
from realgap.adapt.rig import load_rig
from realgap.adapt.section import adapt_section, calibration_lines, print_result
from realgap.adapt.teacher import with_slippery_cube
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
from realgap.train import distill
from realgap.train.checkpoint import Checkpointer

__all__ = ["AdaptConfig", "check_out", "placement_offset", "run_adapt"]

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
    fit = None
    if not steps.finished("calibrate"):
        # The rig's measured cube is the one the hand-eye fit must draw.
        cube_size, cube_sigma = rig.get("cube.size_m", (None, None))
        # The twin draws the shadows rig.toml says the room casts: the desk is learned
        # under the same light (MuJoCo lights a textured desk brighter with them).
        shadows = bool(rig.get("scene.shadows", (False, None))[0])
        fit = Beside(
            lambda: diagnose_recording(
                recording_path,
                run.file("calibration"),
                config.layout,
                cube_size,
                cube_sigma,
                shadows=shadows,
            ),
            name="calibration-fit",
        )
        # The arm needs no calibration to run the old policy: it works while the CPU fits.
        console.print("fitting beside step 3, while the arm runs the old policy")

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

    try:
        results["before"], before_seconds = timed(lambda: on_arm("before", config.policy, None))
    except BaseException:
        if fit is not None:  # nothing lost: the fit finishes and is kept for --resume
            console.print("[yellow]waiting for the calibration fit, to keep it for --resume[/]")
            fitted = fit.settle()
            if fitted is not None and not fitted[0]["joints"]["warnings"]:
                steps.finish("calibrate", seconds=fitted[1])
        raise
    if fit is None:
        diagnosis = json.loads((run.file("calibration") / "diagnosis.json").read_text())
    else:
        if not fit.done():
            console.print("the old policy has run; waiting for the calibration fit")
        diagnosis, fit_seconds = fit.wait()
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
    if fit is not None:
        steps.finish("calibrate", seconds=fit_seconds)

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
    steps.finish("before", seconds=before_seconds)

    console.rule("4/5 retrain in the arm's twin (warm start)")
    args = retrain_args(config, task, run, physics, arm_speed)
    console.print(
        f"teacher: {teacher_plan(args)}; student from {config.policy}; "
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
    # What the arm's twin predicts for the adapted policy, on the same layout; where the
    # cube's unmeasured friction decides the grasp, at both of its ends. Sim only: it runs
    # beside the arm's evaluation, with the old policy's gap attribution after it.
    predictions = {"twin": seen}
    if needed.get("expert", {}).get("friction_note"):
        predictions["twin_slippery_cube"] = with_slippery_cube(seen)

    def in_the_twin() -> tuple[dict, float, dict | None]:
        found, seconds = timed(
            lambda: {
                name: evaluate(
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
                for name, twin_calibration in predictions.items()
            }
        )
        if not config.attribute:
            return found, seconds, None
        if steps.finished("attribution") and run.file("attribution.json").is_file():
            return found, seconds, json.loads(run.file("attribution.json").read_text())
        attribution = attribute(
            config.policy, calibration, layout, trials, seed=config.seed, speed=arm_speed
        )
        run.write_json("attribution.json", attribution)
        return found, seconds, attribution

    twin_work = Beside(in_the_twin, name="twin")
    console.print(
        "beside it, the arm's twin predicts the adapted policy's success"
        + (" and attributes the old policy's gap" if config.attribute else "")
    )
    try:
        results["after"], after_seconds = timed(lambda: on_arm("after", new_policy, calibration))
    except BaseException:
        twin_work.settle()
        raise
    steps.finish("after", seconds=after_seconds)
    (predicted, twin_seconds, attribution), seconds = twin_work.wait()
    results.update(predicted)
    steps.finish("twin", seconds=twin_seconds)
    if config.attribute:
        steps.finish("attribution", seconds=seconds - twin_seconds)
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
    summary["seconds"] = steps.seconds
    # Steps beside others overlap: the total is the wall clock's, not their sum.
    summary["total_seconds"] = round(steps.wall, 1)
    run.write_json("adapt.json", summary)
    run.file("adapt.section.html").write_text(adapt_section(summary, attribution))
    report = build_report(config.out)
    console.print(f"report: {report}")
    print_result(console, summary)
    return summary


def placement_offset(check: dict) -> tuple[list[float], list[float]]:
    """The placement check's mean offset and its standard error, metres, arm frame."""
    mean = np.asarray(check["mean_offset_cm"], dtype=float) / 100
    return mean.tolist(), (np.asarray(check["standard_error_cm"], dtype=float) / 100).tolist()


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
