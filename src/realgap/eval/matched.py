"""Matched evaluation: one layout, one judging rule, any world.

``evaluate`` runs a policy on every spot of a layout -- in the nominal sim (the
batched twin, at training rate and scale), on a fake arm behind the bridge,
or on the real SO-101 -- and returns per-spot and overall success with Wilson
95% intervals, episode lengths and failure reasons. Spots outside the training
square are reported under ``out_of_distribution`` and never averaged into
``overall``. Every episode is recorded (``realgap.bridge.recording`` layout).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from realgap import runs
from realgap.bridge.camera_lock import lock_camera
from realgap.bridge.deploy import run_session
from realgap.bridge.env import DeployConfig
from realgap.bridge.profile import RealityProfile
from realgap.bridge.recording import EpisodeRecorder
from realgap.bridge.worlds import Spot, at_start_pose, open_fake_world
from realgap.errors import ConfigError
from realgap.eval.layout import Layout, load_layout
from realgap.eval.placement import placement_check
from realgap.eval.stats import rate
from realgap.eval.visibility import unseen_at_start
from realgap.policy.folder import load_contract
from realgap.policy.loaders import load_runtime_policy
from realgap.runs import RunFolder, claim, episode_file
from realgap.sim import robot
from realgap.sim.batched_env import BatchedEnv
from realgap.sim.calibration import Calibration
from realgap.sim.failures import EpisodeTracker
from realgap.sim.randomization import DomainRandomization
from realgap.sim.rollout import Transition, rollout
from realgap.sim.tasks import make_task
from realgap.sim.twin import ControlParams, TwinParams
from realgap.speed import DeploySpeed


def episode_rows(layout: Layout, trials: int) -> list[tuple[int, Spot]]:
    """``(spot index, spot)`` of every episode, in the order they run."""
    rows = []
    for index, (spot, count) in enumerate(zip(layout.spots, layout.trials_per_spot(trials))):
        rows += [(index, spot)] * count
    return rows


def evaluate_in_sim(
    policy: Callable,
    task: str,
    layout: Layout,
    trials: int,
    seed: int = 0,
    out: Path | None = None,
    chunk: int = 64,
    progress: Callable[[int], None] | None = None,
    twin: TwinParams | None = None,
    action_mode: str = "delta",
    randomization: DomainRandomization | None = None,
    into: list[dict] | None = None,
    speed: DeploySpeed | None = None,
    start_pose: tuple[float, ...] | None = None,
) -> list[dict]:
    """Episodes in the nominal twin (no randomization) -- or in an arm's ``twin``, or
    under a ``randomization`` around it -- batched; one dict per episode.
    ``action_mode`` is the policy contract's; ``speed`` runs every episode at a
    deployment's rate and action scale (longer episodes when slower; None: training's).
    ``start_pose``: where the policy's episodes start (its contract's; None: the task's).
    Episodes are appended to ``into`` (a new list by default) chunk by chunk, so an
    interrupted run keeps the finished ones."""
    rows = episode_rows(layout, trials)
    config = make_task(task).config
    if start_pose is not None:
        config = replace(config, start_pose=tuple(start_pose))
    episodes: list[dict] = [] if into is None else into
    if speed is not None:
        base = randomization
        if base is None:
            rate = ControlParams(rate_hz=float(make_task(task).config.control_hz))
            base = DomainRandomization.none(twin or TwinParams(control=rate))
        elif twin is not None:
            base = base.centred_on(twin)
        randomization = base.at_speed(speed)
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        env = BatchedEnv(
            task,
            len(part),
            config=config,
            randomization=randomization,
            twin=twin,
            action_mode=action_mode,
            seed=seed + start,
        )
        spots = [spot for _, spot in part]
        tracker, first_success, recorders = _run_spots(env, policy, spots, seed + start)
        env.close()
        for i, ((spot_index, spot), reason) in enumerate(zip(part, tracker.reasons())):
            success = bool(tracker.success[i])
            episodes.append(
                {
                    "spot_index": spot_index,
                    "spot": spot.name,
                    "success": success,
                    "steps": len(recorders[i]),
                    "success_step": int(first_success[i]) if success else None,
                    "reason": reason,
                }
            )
            if out is not None:
                recorders[i].save(
                    episode_file(out, start + i),
                    spot=spot.name,
                    success=success,
                    reason=reason,
                )
        if progress is not None:
            progress(len(part))
    return episodes


def _run_spots(env: BatchedEnv, policy: Callable, spots: list[Spot], seed: int):
    """One episode per env at its spot; the failure tracker, first success steps and
    each episode's recorder."""
    camera = env.model.camera(robot.WRIST_CAMERA).id
    # The twin's field of view (its mount offset is millimetres: ignored here).
    fovy = float(env.model.cam_fovy[camera] + env.params.camera_fov_delta[0])
    cube = np.array([spot.cube_xy for spot in spots])
    targets = np.array([spot.target_xy or (0.0, 0.0) for spot in spots])
    yaw = np.array([spot.yaw for spot in spots])
    obs, _ = env.reset_to(cube, targets if env.task.has_target else None, yaw, seed=seed)
    tracker = EpisodeTracker(env.task, len(spots))
    recorders = [EpisodeRecorder({"task": env.task.name, "world": "sim"}) for _ in spots]
    first_success = np.full(len(spots), -1)
    if hasattr(policy, "reset"):
        policy.reset()
    steps = int(env.episode_limit.max())  # every env runs at the same speed here
    last = steps - 1

    def watch(t: Transition) -> None:
        for i, recorder in enumerate(recorders):
            if t.held[i]:  # held still since its success: its recording ended there
                continue
            recorder.add(
                t.step / env.params.control_hz[i], _row(t.obs, i), t.action[i], t.action[i]
            )
        if t.step < last:  # the last step auto-resets the envs
            tracker.update(
                env.sim_state(),
                env.batch.bind("cam_xpos")[:, camera],
                env.batch.bind("cam_xmat")[:, camera],
                fovy,
            )
        else:
            tracker.success |= t.info["success"]
        first_success[(first_success < 0) & tracker.success] = t.step + 1

    act = lambda obs: policy(obs["image"], obs["state"])  # noqa: E731
    # Success is latched: an episode is held still from its first (as a fake arm's ends).
    rollout(env, act, obs, steps=steps, on_step=watch, freeze_succeeded=True)
    return tracker, first_success, recorders


def _row(obs: dict, i: int) -> dict:
    return {"state": obs["state"][i], "image": obs["image"][i]}


def summarize(
    episodes: list[dict], layout: Layout, world: str, task: str, policy: str, extra=None
) -> dict:
    """Per-spot and overall rates (in-distribution spots only) with Wilson intervals."""
    spots = []
    for index, spot in enumerate(layout.spots):
        mine = [e for e in episodes if e["spot_index"] == index]
        successes = sum(e["success"] for e in mine)
        steps = [e["success_step"] for e in mine if e["success_step"]]
        spots.append(
            {
                "name": spot.name,
                "cube": list(spot.cube_xy),
                "target": list(spot.target_xy) if spot.target_xy else None,
                "in_distribution": spot.in_distribution,
                **rate(successes, len(mine)),
                "mean_steps_to_success": float(np.mean(steps)) if steps else None,
                "failures": dict(Counter(e["reason"] for e in mine if not e["success"])),
            }
        )

    def pooled(flag: bool) -> dict:
        chosen = [s for s in spots if s["in_distribution"] == flag]
        result = rate(sum(s["successes"] for s in chosen), sum(s["trials"] for s in chosen))
        failures = Counter()
        for s in chosen:
            failures.update(s["failures"])
        return {**result, "spots": len(chosen), "failures": dict(failures)}

    return {
        "task": task,
        "world": world,
        "policy": policy,
        "layout": layout.name,
        "overall": pooled(True),
        "out_of_distribution": pooled(False),
        "spots": spots,
        **(extra or {}),
    }


def evaluate(
    policy_folder: str | Path,
    world: str,
    layout: Layout,
    trials: int,
    *,
    open_world=None,
    deploy_config=None,
    seed: int = 0,
    out: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
    calibration: Calibration | None = None,
    twin: TwinParams | None = None,
    randomization: DomainRandomization | None = None,
    earlier: str = "refuse",
    speed: DeploySpeed | None = None,
) -> dict:
    """Evaluate in ``world`` ("sim", or "fake"/"real" with ``open_world(task)``). A
    calibration corrects the bridge's joint readings (fake/real) or, in the sim without
    an explicit ``twin``, gives the arm's twin to evaluate in. ``randomization`` (sim
    only) evaluates under randomized twins around it; ``speed`` (sim only) runs the sim
    at a deployment's rate and action scale instead of training's (an arm's speed comes
    with ``deploy_config``).

    Results in ``out`` are written as episodes finish; an interrupted or stopped run
    leaves an ``eval_<world>.json`` marked ``partial`` with every finished episode.
    ``earlier`` says what to do with an earlier run of the same world in ``out``:
    ``refuse`` (default), ``resume`` (fake/real: continue after its last finished
    episode; sim: run again) or ``overwrite``."""
    policy, contract = load_runtime_policy(policy_folder)
    layout = layout.for_task(contract.task)
    rows = episode_rows(layout, trials)
    run = RunFolder(out) if out is not None else None
    calibrated = calibration is not None or twin is not None
    suffix = " (calibrated)" if calibrated else ""
    if randomization is not None:
        if world != "sim":
            raise ConfigError("a randomization is for the sim (an arm is its own world)")
        suffix += " (randomized)"
    if speed is not None and world != "sim":
        raise ConfigError("speed is for the sim; an arm's speed is its deploy_config's")
    # The twin the evaluation assumes (the sim runs in it), and the spots its start pose
    # cannot see: "never saw the cube" there is the policy's search.
    assumed = twin if twin is not None or calibration is None else calibration.twin()
    start_pose = (deploy_config or DeployConfig()).start_for(contract)
    extra: dict = {
        "unseen_at_start": unseen_at_start(contract.task, layout.spots, assumed, start_pose)
    }
    if world == "sim":
        trained = speed or DeploySpeed(contract.control_hz, 1.0)
        extra["speed"] = {
            "control_hz": trained.control_hz,
            "action_fraction": trained.action_fraction,
        }
    target = None
    if world == "sim":
        world_name = "sim" + suffix
    else:
        target = open_world(contract.task)  # builds the world; connects nothing yet
        world_name = target.name + suffix
    tag = world_tag_of(world_name)
    resumed = False
    if run is not None:
        resumed = claim([run.eval_file(tag), run.episodes_folder(tag)], earlier)
    finished: list[dict] = []

    def write(partial: bool, stopped: str | None = None) -> dict:
        summary = summarize(finished, layout, world_name, contract.task, str(policy_folder), extra)
        summary.update(partial=partial, planned_trials=len(rows), episodes=finished)
        if stopped is not None:
            summary["stopped"] = stopped
        if run is not None:
            run.write_json(run.eval_file(tag).name, summary)
        return summary

    try:
        if target is None:
            evaluate_in_sim(
                policy,
                contract.task,
                layout,
                trials,
                seed,
                run.episodes_folder(tag) if run else None,
                progress=progress,
                twin=assumed,
                action_mode=contract.action_mode,
                randomization=randomization,
                into=finished,
                speed=speed,
                start_pose=contract.episode_start,
            )
        else:
            if calibration is not None:
                target.arm.apply_calibration(calibration.joint_offsets_rad)

            session = run_session(
                target,
                policy_folder,
                [spot for _, spot in rows],
                run.episodes_folder(tag) if run else None,
                # Success is latched: a fake arm's episode ends at its first, which
                # changes no result and spares the steps after it (a real arm runs on).
                replace(deploy_config or DeployConfig(), stop_at_success=True),
                progress=(lambda result: progress(1)) if progress else None,
                resume=resumed,
            )
            finished[:] = _with_spot_index(rows, session["results"])
            extra.update(
                timing=session["timing"],
                speed=session["speed"],
                checks=session["checks"],
                safety_events=session["safety_events"],
                stopped=session["stopped"],
            )
            if "profile" in target.extra:
                extra["profile"] = target.extra["profile"].to_dict()
            # Before any result: is the cube where the layout says?
            spots = [spot for _, spot in rows[: len(finished)]]
            extra["placement_check"] = placement_check(
                contract.task,
                finished,
                spots,
                calibration=calibration,
            )
    except BaseException as error:
        if target is not None and run is not None:
            # The session wrote every finished episode before it let the error through.
            session_file = run.episodes_folder(tag) / runs.DEPLOY
            if session_file.exists():
                results = json.loads(session_file.read_text())["results"]
                finished[:] = _with_spot_index(rows, results)
        write(True, f"{type(error).__name__}: {error}")
        raise
    return write(len(finished) < len(rows) or bool(extra.get("stopped")))


def _with_spot_index(rows, results: list[dict]) -> list[dict]:
    return [{**result, "spot_index": index} for (index, _), result in zip(rows, results)]


def world_tag_of(world_name: str) -> str:
    """File-name tag of a world: ``fake:typical_so101 (calibrated)`` ->
    ``fake_typical_so101_calibrated``."""
    tag = world_name.replace(":", "_").replace(" (calibrated)", "_calibrated")
    return tag.replace(" (randomized)", "_randomized")


def fake_arm_placement_check(
    policy_folder: str | Path,
    profile: RealityProfile,
    folder: str | Path,
    calibration: Calibration | None = None,
    trials: int = 13,
) -> dict:
    """The placement check alone on a fake arm: its camera locked at the start pose (in
    ``folder/cameras``), then a matched evaluation on the default layout whose episodes
    stop after their first frames, at any speed the policy may have."""
    folder = Path(folder)
    world = open_fake_world(load_contract(policy_folder).task, profile)
    with at_start_pose(world):
        lock_camera(world.camera, folder=folder / "cameras")
    result = evaluate(
        policy_folder,
        "fake",
        load_layout(),
        trials,
        open_world=lambda task: open_fake_world(task, profile),
        # Two steps an episode: the check reads each episode's first frame.
        deploy_config=DeployConfig(
            episode_steps=2, force_speed=True, lock_folder=folder / "cameras"
        ),
        calibration=calibration,
    )
    return result["placement_check"]
