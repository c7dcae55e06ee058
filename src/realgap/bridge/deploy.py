"""The deployment loop: a policy on a fake or real arm at a fixed rate.

``run_session`` opens the world behind a :class:`~realgap.bridge.safety.SafeArm`,
checks it against the policy's contract, then runs episodes: reset to the start
pose, set the scene, then ``control_hz`` steps of observe -> act -> wait. Every
step is recorded; if anything goes wrong (an exception, Ctrl-C, the watchdog,
a disconnect) the fault policy runs and the episode recorded so far is saved
with the reason. Loop timing (period mean and p99, overruns, policy compute
time) is measured and reported.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from realgap import runs
from realgap.bridge.camera_lock import load_lock
from realgap.bridge.env import DeployConfig, RealWorldEnv
from realgap.bridge.estimate import TwinEstimator
from realgap.bridge.recording import EpisodeRecorder
from realgap.bridge.safety import (
    TARGET_POLICY_MAX_STEP,
    SafeArm,
    SafetyConfig,
    SafetyStop,
)
from realgap.bridge.worlds import Spot, World
from realgap.errors import ConfigError
from realgap.policy.contract import ContractMismatch, PolicyContract
from realgap.policy.loaders import load_runtime_policy
from realgap.runs import RunFolder, episode_file
from realgap.sim.failures import EpisodeTracker
from realgap.sim.render import centroid, cube_mask, encode_coverage, jaw_mask
from realgap.sim.tasks import make_task

log = logging.getLogger(__name__)


@dataclass
class LoopTiming:
    """Control-loop timing over a session (clock seconds for periods, wall for compute)."""

    target_s: float
    periods: list[float] = field(default_factory=list)
    compute: list[float] = field(default_factory=list)
    overruns: int = 0

    def summary(self) -> dict:
        periods = np.asarray(self.periods or [np.nan]) * 1e3
        compute = np.asarray(self.compute or [np.nan]) * 1e3
        return {
            "target_ms": round(self.target_s * 1e3, 3),
            "period_mean_ms": round(float(np.mean(periods)), 3),
            "period_p99_ms": round(float(np.percentile(periods, 99)), 3),
            "overruns": self.overruns,
            "steps": len(self.periods),
            "compute_mean_ms": round(float(np.mean(compute)), 3),
            "compute_p99_ms": round(float(np.percentile(compute, 99)), 3),
        }


@dataclass
class EpisodeResult:
    spot: str
    success: bool
    steps: int
    status: str
    first_frame_time: float
    settled_time: float
    path: str | None = None
    estimate: bool | None = None
    """The twin's guess from joint readings (real arm), shown beside the operator's key."""
    reason: str | None = None
    """Why it failed, where the world can tell (fake); ``unknown`` on the real arm."""
    success_step: int | None = None
    """First step at which the task's success flag held (fake), else None."""
    first_view: dict | None = None
    """What the scene's first frame showed (from the ``start`` keyframe, before the arm
    goes to a policy's other start pose): the joint readings, the frame's shape and the
    red cube's centroid in it (None when not seen) -- for the placement check."""


def run_episode(
    env: RealWorldEnv,
    world: World,
    policy: Callable,
    spot: Spot,
    steps: int,
    timing: LoopTiming,
    recorder: EpisodeRecorder,
) -> dict:
    """One episode; returns the world's success flag and failure reason where it knows
    them (fake), the twin's estimate where it does not (real), and the first success step
    (where the episode ends if ``env.config.stop_at_success``: success is latched)."""
    clock = world.clock
    if hasattr(policy, "reset"):
        policy.reset()
    obs = env.reset(lambda: world.place_scene(spot))
    recorder.meta["first_frame_time"] = float(obs["frame_time"])
    look, joints = env.placement_view
    first = look.image
    seen = centroid(cube_mask(first))
    first_view = {
        "joints": [float(v) for v in joints],
        "shape": list(first.shape[:2]),
        "cube_px": None if seen is None else [float(v) for v in seen],
        # Where the jaws sit in the view locates the camera on the gripper, whatever the
        # cube: the placement check uses it to tell a moved camera from a moved cube.
        "jaws": encode_coverage(jaw_mask(first)),
    }
    recorder.meta["settled_time"] = float(env.settled_at)
    tracker = EpisodeTracker(make_task(world.task), 1) if world.truth is not None else None
    estimator = TwinEstimator(world.task, spot) if world.truth is None else None
    success_step = None
    tick = clock.now()
    with env.arm.control_loop():
        for step in range(steps):
            started, wall = clock.now(), time.perf_counter()
            action = np.asarray(policy(obs["image"], obs["state"]), dtype=float)
            sent = env.act(action)["sent"]
            timing.compute.append(time.perf_counter() - wall)
            recorder.add(obs["frame_time"], obs, action, sent)
            tick += timing.target_s
            late = clock.now() - tick
            if late > 0:
                timing.overruns += 1
                tick = clock.now()  # re-sync instead of bursting to catch up
            else:
                clock.sleep(-late)
            timing.periods.append(clock.now() - started)
            obs = env.observe()
            if tracker is not None:
                tracker.update(*world.truth())
                if success_step is None and tracker.success[0]:
                    success_step = step + 1
                    if env.config.stop_at_success:
                        break
            else:
                estimator.update(obs["state"][:6], obs["state"][6:])
    if tracker is not None:
        return {
            "success": bool(tracker.success[0]),
            "reason": tracker.reasons()[0],
            "success_step": success_step,
            "estimate": None,
            "first_view": first_view,
        }
    return {
        "success": None,
        "reason": None,
        "success_step": None,
        "estimate": estimator.estimate(),
        "first_view": first_view,
    }


def run_session(
    world: World,
    policy_folder: str | Path,
    spots: Iterable[Spot],
    out: str | Path | None = None,
    config: DeployConfig | None = None,
    safety: SafetyConfig | None = None,
    progress: Callable[[EpisodeResult], None] | None = None,
    policy: tuple[Callable, PolicyContract] | None = None,
    resume: bool = False,
) -> dict:
    """Run one episode per spot; returns (and writes to ``out/deploy.json``) a summary.
    ``policy`` (a callable and its contract) replaces loading ``policy_folder``: how an
    expert operator records demonstrations through the bridge. ``deploy.json`` is
    rewritten after every episode and marked ``partial`` until the session completes;
    ``resume`` continues the session already in ``out`` after its last finished episode."""
    config = config or DeployConfig()
    policy, contract = policy or load_runtime_policy(policy_folder)
    if contract.task != world.task:
        raise ContractMismatch(f"task: policy has {contract.task!r}, world has {world.task!r}")
    training_steps = make_task(contract.task).config.episode_steps
    speed_warning = None
    if contract.action_mode == "absolute":
        # Target-predicting policies run at the rate their demonstrations were taken at,
        # with the step limit of those demonstrations.
        config = replace(config, control_hz=contract.control_hz, action_scale=1.0)
        steps = config.episode_steps or training_steps
        safety = safety or SafetyConfig(max_step_rad=TARGET_POLICY_MAX_STEP)
    else:
        # The contract's recommended speed unless one was asked; refused outside the
        # trained range unless forced (before anything connects).
        config, speed_warning = config.for_policy(contract)
        if speed_warning:
            log.warning(speed_warning)
        steps = config.steps_for(contract, training_steps)
    run = RunFolder(out) if out is not None else None
    timing = LoopTiming(1.0 / config.control_hz)
    spots = list(spots)
    results = _earlier_results(run, spots) if resume else []
    stopped, report = None, {}
    safe = SafeArm(world.arm, safety or SafetyConfig(), world.clock)

    def summarize() -> dict:
        return {
            "task": contract.task,
            "world": world.name,
            "episodes": len(results),
            "planned_episodes": len(spots),
            "partial": len(results) < len(spots) or stopped is not None,
            "success_rate": float(np.mean([r.success for r in results])) if results else None,
            "steps_per_episode": steps,
            "speed": {
                "control_hz": config.control_hz,
                "action_fraction": config.action_scale,
                "warning": speed_warning,
            },
            "checks": report,
            "timing": timing.summary(),
            "safety_events": [asdict(event) for event in safe.events],
            "safety_alert": safe.alert,
            "results": [asdict(r) for r in results],
            "stopped": stopped,
        }

    world.camera.connect()
    try:
        with safe:
            if config.check_camera_lock:
                # Re-apply the stored lock every session (a camera forgets it on unplug),
                # then the env's check verifies settings *and* scene brightness.
                world.camera.apply_settings(
                    load_lock(world.camera.camera_id, config.lock_folder).settings
                )
            env = RealWorldEnv(contract, safe, world.camera, config, world.clock)
            report = env.start()
            for index in range(len(results), len(spots)):
                try:
                    # Before every episode, the first included: a hot arm never starts one.
                    safe.check_temperatures()
                except SafetyStop as stop:
                    # Stop the run, not the report: what was measured so far stands.
                    stopped = str(stop)
                    break
                results.append(
                    _episode(env, world, policy, spots[index], index, steps, timing, run)
                )
                if run is not None:  # every finished episode is on disk at once
                    run.write_json(runs.DEPLOY, summarize())
                if progress is not None:
                    progress(results[-1])
    except BaseException as error:
        stopped = f"{type(error).__name__}: {error}"
        raise
    finally:
        world.camera.disconnect()
        world.close()
        summary = summarize()
        if run is not None:
            run.write_json(runs.DEPLOY, summary)
            if safe.alert:
                run.file(runs.SAFETY_ALERT).write_text(safe.alert + "\n")
    return summary


def _episode(env, world, policy, spot, index, steps, timing, run) -> EpisodeResult:
    """One recorded episode; an interrupted one is saved with its status, then re-raised."""
    recorder = EpisodeRecorder(
        {"task": env.contract.task, "world": world.name, "spot": asdict(spot)}
    )
    path = episode_file(run.path, index) if run is not None else None
    world.begin_episode(index)
    try:
        outcome = run_episode(env, world, policy, spot, steps, timing, recorder)
    except BaseException as error:
        if path is not None:
            recorder.save(path, status=f"interrupted: {type(error).__name__}: {error}")
        raise
    success = world.judge(outcome["estimate"], outcome["success"])
    reason = None if success else (outcome["reason"] or "unknown")
    if path is not None:
        recorder.save(path, success=bool(success), reason=reason)
    return EpisodeResult(
        spot.name,
        bool(success),
        len(recorder),
        "complete",
        recorder.meta["first_frame_time"],
        recorder.meta["settled_time"],
        str(path) if path else None,
        outcome["estimate"],
        reason,
        outcome["success_step"],
        outcome["first_view"],
    )


def _earlier_results(run: RunFolder | None, spots: list[Spot]) -> list[EpisodeResult]:
    """The finished episodes of an interrupted session in ``run`` (to resume it)."""
    if run is None or not run.file(runs.DEPLOY).exists():
        return []
    earlier = json.loads(run.file(runs.DEPLOY).read_text()).get("results", [])
    done = [EpisodeResult(**result) for result in earlier]
    planned = [spot.name for spot in spots[: len(done)]]
    if [result.spot for result in done] != planned or len(done) > len(spots):
        raise ConfigError(
            f"{run.path}: the earlier session ran other spots ({[r.spot for r in done]}); "
            "it cannot be resumed with these (use --overwrite)"
        )
    return done
