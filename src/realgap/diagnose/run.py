"""Run every diagnostic on a calibration recording; write the calibration and a report section."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from realgap import runs
from realgap.diagnose.camera import diagnose_camera
from realgap.diagnose.desk import save_texture
from realgap.diagnose.hand_eye import fit_hand_eye
from realgap.diagnose.recording import CalibrationRecording
from realgap.diagnose.servos import FITTED, identify_servos
from realgap.diagnose.workspace import coverage, frame_check
from realgap.eval.layout import load_layout
from realgap.runs import RunFolder
from realgap.sim.calibration import Calibration, CalibrationError
from realgap.sim.robot import JOINT_NAMES

DESK_TEXTURE = "desk.png"
"""The desk texture the calibration builds (the twin paints its floor with it)."""


def diagnose_recording(
    recording_path: str | Path,
    out: str | Path,
    layout=None,
    cube_size_m: float | None = None,
    cube_size_sigma_m: float | None = None,
    shadows: bool = False,
) -> dict:
    """Joint offsets and camera mount together (hand-eye, with the cube drawn at
    ``cube_size_m`` when measured, known to ``cube_size_sigma_m``), then servos and the
    camera's tone and background with them (in a room that casts the arm's shadow when
    ``shadows``: the twin then draws it too), plus frame and coverage checks. Writes
    ``diagnosis.json``, ``calibration.json`` (every value with its standard deviation)
    and ``diagnosis.section.html`` (which ``realgap report`` includes)."""
    recording = CalibrationRecording.load(recording_path)
    geometry = fit_hand_eye(recording, cube_size_m=cube_size_m, cube_size_sigma_m=cube_size_sigma_m)
    # Implausible offsets mean a wrong premise; the servo and camera fits do better without.
    offsets = None if geometry.warnings else geometry.offsets_rad
    servos = identify_servos(recording, offsets)
    camera = diagnose_camera(recording, geometry, shadows=shadows)
    joints = {
        "offsets_deg": geometry.offsets_deg,
        "offsets_sigma_deg": geometry.offsets_sigma_deg,
        "frames_used": geometry.frames_used,
        "cube_size_m": cube_size_m,  # None: the twin's nominal cube
        "cube_size_sigma_m": geometry.cube_size_sigma_m,
        "silhouette_rms_before": geometry.silhouette_rms_before,
        "silhouette_rms_after": geometry.silhouette_rms_after,
        "warnings": geometry.warnings,
    }
    out = Path(out)
    texture = camera.pop("desk_texture")
    camera["desk_texture"] = None
    if texture is not None:  # the desk as the twin must paint it, beside the calibration
        out.mkdir(parents=True, exist_ok=True)
        camera["desk_texture"] = save_texture(texture, (out / DESK_TEXTURE).resolve())
    result = {
        "recording": str(recording_path),
        "world": recording.world,
        "joints": joints,
        "servos": servos,
        "camera": camera,
        "hand_eye": geometry.to_dict(),
        "frame": frame_check(*recording.cube_xy),
        "coverage": coverage(load_layout(layout), recording.task),
    }
    calibration = calibration_from(result, recording_path)
    run = RunFolder(out)
    calibration.save(run.file(runs.CALIBRATION))
    run.write_json(runs.DIAGNOSIS, result)
    run.file(runs.DIAGNOSIS_SECTION).write_text(section_html(result))
    return result


def calibration_from(result: dict, recording_path) -> Calibration:
    """The calibration file's values and standard deviations from a diagnosis."""
    calibration = Calibration(source={"recording": str(recording_path), "world": result["world"]})
    geometry, servos, camera = result["hand_eye"], result["servos"], result["camera"]
    measured = {}
    if not geometry["warnings"]:
        measured["joints.zero_offset_deg"] = (
            geometry["offsets_deg"],
            geometry["offsets_sigma_deg"],
        )
        measured["camera.offset_m"] = (geometry["mount_offset_m"], geometry["mount_offset_sigma_m"])
        measured["camera.rotation_deg"] = (
            geometry["mount_rotation_deg"],
            geometry["mount_rotation_sigma_deg"],
        )
        measured["camera.fov_deg_delta"] = (
            geometry["fov_delta_deg"],
            geometry["fov_delta_sigma_deg"],
        )
        # The arm's twin draws the measured lens (random webcam arms' k1: -0.04 to
        # -0.07, recovered to about 0.004) instead of a pinhole.
        measured["camera.lens_k1"] = (geometry["lens_k1"], geometry["lens_k1_sigma"])
    for key in FITTED:
        measured[f"servo.{key}"] = (servos[key], servos[f"{key}_sigma"])
    # Latency is chosen among whole commands; the next best is reported, not a spread.
    measured["servo.latency_steps"] = (servos["latency_steps"], 0.0)
    measured["camera.exposure_scale"] = (camera["exposure_gain_needed"], None)
    measured["camera.gamma"] = (camera["gamma"], None)
    measured["camera.black_level"] = (camera["black_level"], None)
    if camera["background_rgb"] is not None:
        measured["camera.background_rgb"] = (camera["background_rgb"], None)
    if camera.get("desk_texture"):
        measured["camera.background_texture"] = (camera["desk_texture"], None)
    if camera.get("shadows"):  # the desk was learned as a shadowed twin paints it
        measured["scene.shadows"] = (True, None)
    for key, (value, sigma) in measured.items():
        try:
            calibration.measure(key, value, sigma)
        except CalibrationError as error:  # an implausible fit is reported, not applied
            camera["warnings"].append(f"not calibrated: {error}")
    return calibration


def section_html(result: dict) -> str:
    """The report's diagnosis section."""
    joints, servos, camera = result["joints"], result["servos"], result["camera"]

    offsets = "".join(
        f"<tr><td>{name}</td><td>{value:+.2f} &plusmn; {sigma:.2f}</td></tr>"
        for name, value, sigma in zip(
            JOINT_NAMES[:5], joints["offsets_deg"][:5], joints["offsets_sigma_deg"][:5]
        )
    )
    regions = "".join(
        f"<tr><td>{name}</td><td>{v['real']:.3f}</td><td>{v['twin']:.3f}</td>"
        f"<td>{_ratio(v['ratio'])}</td></tr>"
        for name, v in camera["regions"].items()
    )
    hidden = [c["spot"] for c in result["coverage"] if not c["visible_from_start_pose"]]
    outside = [c["spot"] for c in result["coverage"] if not c["in_training_square"]]
    warnings = "".join(
        f"<p class='bad'>{html.escape(w)}</p>" for w in joints["warnings"] + camera["warnings"]
    )
    return f"""
<h2>Diagnosis ({html.escape(result["world"])})</h2>
<p class="note">From {html.escape(result["recording"])}: a pose sweep around the start pose
with a still cube on a mark, and step responses on each joint.</p>
<h3>Joint zero offsets (degrees)</h3>
<table><tr><th>joint</th><th>offset</th></tr>{offsets}</table>
<p class="note">Fitted together with the camera mount (hand-eye) from {joints["frames_used"]}
frames; silhouette mismatch {joints["silhouette_rms_before"]:.3f} before,
{joints["silhouette_rms_after"]:.3f} after. &plusmn; is one standard deviation.</p>
<h3>Servos</h3>
<p>stiffness x{servos["kp_scale"]:.2f}, damping x{servos["damping_scale"]:.2f},
torque cap x{servos["torque_limit_scale"]:.2f}, latency {servos["latency_steps"]}
command(s); fit error {servos["rms_rad"] * 1000:.1f} mrad. Friction loss
x{servos["frictionloss_scale"]:.2f} makes the best replay, but the step responses do not
measure it: its &plusmn;{servos["frictionloss_scale_sigma"]:.2f} is the spread of
plausible friction.</p>
<h3>Camera at policy resolution</h3>
{warnings}
<table><tr><th>region</th><th>real</th><th>twin</th><th>ratio</th></tr>{regions}</table>
<p>Tone: exposure x{camera["exposure_gain_needed"]:.2f}, gamma {camera["gamma"]:.2f},
black level {camera["black_level"]:.3f}. Mount error:
{np.linalg.norm(camera["mount_offset_mm"]):.1f} mm
({camera["offset_in_wobbles"]:.1f}x the training wobble) and
{np.linalg.norm(camera["mount_rotation_deg"]):.1f} degrees
({camera["rotation_in_wobbles"]:.1f}x); field of view {camera["fov_delta_deg"]:+.1f} degrees.</p>
<h3>Workspace</h3>
<p>{html.escape(result["frame"]["note"])}. Layout spots outside the training square:
{html.escape(", ".join(outside) or "none")}; not visible from the start pose:
{html.escape(", ".join(hidden) or "none")}.</p>
"""


def _ratio(value) -> str:
    return "-" if value is None else f"{value:.2f}"
