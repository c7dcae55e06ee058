"""Run every diagnostic on a calibration recording; write the calibration and a report section."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from realgap import runs
from realgap.diagnose.camera import diagnose_camera
from realgap.diagnose.joints import estimate_joint_offsets
from realgap.diagnose.recording import CalibrationRecording
from realgap.diagnose.servos import identify_servos
from realgap.diagnose.workspace import coverage, frame_check
from realgap.eval.layout import load_layout
from realgap.runs import RunFolder
from realgap.sim.calibration import Calibration, CalibrationError
from realgap.sim.robot import JOINT_NAMES


def diagnose_recording(recording_path: str | Path, out: str | Path, layout=None) -> dict:
    """Joints, servos and camera from the recording (in that order: each uses the
    previous one's result), plus frame and coverage checks. Writes
    ``diagnosis.json``, ``calibration.json`` and ``diagnosis.section.html`` (which
    ``realgap report`` includes) into ``out``."""
    recording = CalibrationRecording.load(recording_path)
    joints = estimate_joint_offsets(recording)
    # Implausible offsets mean a wrong premise; the servo and camera fits do better without.
    offsets = None if joints["warnings"] else joints["offsets_rad"]
    servos = identify_servos(recording, offsets)
    camera = diagnose_camera(recording, offsets)
    result = {
        "recording": str(recording_path),
        "world": recording.world,
        "joints": joints,
        "servos": servos,
        "camera": camera,
        "frame": frame_check(*recording.cube_xy),
        "coverage": coverage(load_layout(layout), recording.task),
    }
    calibration = Calibration(source={"recording": str(recording_path), "world": recording.world})
    if offsets is not None:
        calibration.measure("joints.zero_offset_deg", np.rad2deg(offsets))
    for key in ("kp_scale", "damping_scale", "frictionloss_scale", "latency_steps"):
        calibration.measure(f"servo.{key}", servos[key])
    measured_camera = {
        "exposure_scale": camera["exposure_gain_needed"],
        "offset_m": [v / 1000 for v in camera["mount_offset_mm"]],
        "rotation_deg": camera["mount_rotation_deg"],
        "fov_deg_delta": camera["fov_delta_deg"],
        "background_rgb": camera["background_rgb"],
    }
    for key, value in measured_camera.items():
        try:
            if value is not None:
                calibration.measure(f"camera.{key}", value)
        except CalibrationError as error:  # an implausible fit is reported, not applied
            camera["warnings"].append(f"not calibrated: {error}")
    out = Path(out)
    run = RunFolder(out)
    calibration.save(run.file(runs.CALIBRATION))
    run.write_json(runs.DIAGNOSIS, result)
    run.file(runs.DIAGNOSIS_SECTION).write_text(section_html(result))
    return result


def section_html(result: dict) -> str:
    """The report's diagnosis section."""
    joints, servos, camera = result["joints"], result["servos"], result["camera"]

    offsets = "".join(
        f"<tr><td>{name}</td><td>{value:+.2f}</td></tr>"
        for name, value in zip(JOINT_NAMES[:5], joints["offsets_deg"][:5])
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
<p class="note">{joints["frames_used"]} frames; cube centroid error
{joints["centroid_rms_px_before"]:.2f} px before calibration.</p>
<h3>Servos</h3>
<p>stiffness x{servos["kp_scale"]:.2f}, damping x{servos["damping_scale"]:.2f},
friction loss x{servos["frictionloss_scale"]:.2f}, latency {servos["latency_steps"]}
command(s); fit error {servos["rms_rad"] * 1000:.1f} mrad.</p>
<h3>Camera at policy resolution</h3>
{warnings}
<table><tr><th>region</th><th>real</th><th>twin</th><th>ratio</th></tr>{regions}</table>
<p>Exposure the twin would need: x{camera["exposure_gain_needed"]:.2f}. Mount error:
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
