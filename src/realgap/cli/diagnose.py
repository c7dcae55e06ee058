"""``realgap diagnose``: find what differs between the twin and the arm."""

from __future__ import annotations

import json
from pathlib import Path

CUBE_SIZE_HELP = (
    "the cube's edge in metres, measured (calipers): the hand-eye fit draws the cube at "
    "this size (default: the twin's nominal 0.025; a cube 3 mm smaller reads as 1-2 "
    "degrees on shoulder lift and wrist flex, and the stated sigmas carry an unmeasured "
    "cube's 2.5 mm; a measured one's half millimetre narrows them)"
)


SHADOWS_HELP = (
    "the room's light casts the arm's shadow on the desk (look, and say so; rig.toml's "
    "scene.shadows): the twin measures with shadows and the calibration sets them"
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "diagnose",
        help="camera match, frame check, workspace coverage, cube and grasp, or all of "
        "them from a calibration recording",
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    camera = sub.add_parser("camera", help="exposure, regions and mount pose at policy resolution")
    camera.add_argument("recording", type=Path)
    camera.add_argument(
        "--calibration",
        type=Path,
        help="take joint offsets and camera mount from this file instead of fitting them",
    )
    camera.add_argument("--shadows", action="store_true", help=SHADOWS_HELP)
    camera.set_defaults(func=run_camera)
    frame = sub.add_parser("frame", help="a placement in the arm and the sim frame")
    frame.add_argument("x", type=float)
    frame.add_argument("y", type=float)
    frame.add_argument("--from", dest="measured_from", choices=["arm", "sim"], default="arm")
    frame.set_defaults(func=run_frame)
    cover = sub.add_parser("coverage", help="layout spots outside training or the start view")
    cover.add_argument("--layout", type=Path)
    cover.add_argument("--task", default="Reach")
    cover.set_defaults(func=run_coverage)
    grasp = sub.add_parser("grasp", help="cube mass and friction: twin vs a profile")
    grasp.add_argument("--profile", default="typical_so101")
    grasp.add_argument("--task", default="PickCube")
    grasp.set_defaults(func=run_grasp)
    everything = sub.add_parser(
        "all", help="joints, servos, camera, frame and coverage from a recording"
    )
    everything.add_argument("recording", type=Path)
    everything.add_argument("--out", type=Path, required=True, help="folder (e.g. a run folder)")
    everything.add_argument("--layout", type=Path)
    everything.add_argument("--cube-size", type=float, metavar="M", help=CUBE_SIZE_HELP)
    everything.add_argument("--shadows", action="store_true", help=SHADOWS_HELP)
    everything.set_defaults(func=run_all)
    attribution = sub.add_parser(
        "attribute", help="points each measured difference costs (alone, and removed)"
    )
    attribution.add_argument("policy", type=Path, help="policy folder (or its run folder)")
    attribution.add_argument("calibration", type=Path, help="calibration.json or a twin TOML")
    attribution.add_argument("--layout", type=Path)
    attribution.add_argument("--trials", type=int, default=39, help="episodes per twin")
    attribution.add_argument("--seed", type=int, default=0)
    attribution.add_argument("--out", type=Path, help="folder for attribution.json (+ report)")
    attribution.set_defaults(func=run_attribute)


def run_camera(args) -> int:
    from realgap.diagnose.camera import diagnose_camera
    from realgap.diagnose.hand_eye import HandEyeFit
    from realgap.diagnose.recording import CalibrationRecording
    from realgap.sim.calibration import Calibration

    geometry = None
    if args.calibration is not None:
        geometry = HandEyeFit.from_twin(Calibration.load(args.calibration).twin())
    recording = CalibrationRecording.load(args.recording)
    result = diagnose_camera(recording, geometry, shadows=args.shadows)
    for warning in result["warnings"]:
        print(f"warning: {warning}")
    for name, region in result["regions"].items():
        ratio = "-" if region["ratio"] is None else f"{region['ratio']:.2f}"
        print(f"{name:>10}: real {region['real']:.3f}, twin {region['twin']:.3f}, ratio {ratio}")
    print(
        f"exposure the twin would need: x{result['exposure_gain_needed']:.2f}; mount off by "
        f"{result['offset_in_wobbles']:.1f} and {result['rotation_in_wobbles']:.1f} training "
        f"wobbles (position, rotation); field of view {result['fov_delta_deg']:+.1f} degrees"
    )
    return 0


def run_frame(args) -> int:
    from realgap.diagnose.workspace import frame_check

    result = frame_check(args.x, args.y, args.measured_from)
    print(result["note"])
    print(f"arm frame (from the rotation axis): {result['arm_frame']}")
    print(f"sim frame (from the base's back edge): {result['sim_frame']}")
    return 0


def run_coverage(args) -> int:
    from realgap.diagnose.workspace import coverage
    from realgap.eval.layout import load_layout

    for row in coverage(load_layout(args.layout), args.task):
        flags = []
        if not row["in_training_square"]:
            flags.append("outside the training square")
        if not row["visible_from_start_pose"]:
            flags.append("not visible from the start pose")
        print(f"{row['spot']:>12} {row['cube']}: {', '.join(flags) or 'ok'}")
    return 0


def run_grasp(args) -> int:
    from realgap.bridge.profile import load_profile
    from realgap.diagnose.workspace import grasp_check

    for name, row in grasp_check(load_profile(args.profile), args.task).items():
        print(
            f"{name:>14}: {row['mass_kg'] * 1000:.0f} g, friction {row['friction']:.2f}, "
            f"pads {row['fingers']:.2f}: scripted {args.task} {row['success_rate']:.0%}"
        )
    return 0


def run_all(args) -> int:
    from realgap.diagnose.run import diagnose_recording

    result = diagnose_recording(
        args.recording, args.out, args.layout, args.cube_size, shadows=args.shadows
    )
    summary = {k: result[k] for k in ("joints", "servos")}
    print(json.dumps(summary, indent=1, default=float))
    print(f"wrote {args.out / 'calibration.json'} and the report section in {args.out}")
    return 0


def run_attribute(args) -> int:
    from realgap.cli.export import policy_folder
    from realgap.diagnose.attribute import attribute, section_html
    from realgap.errors import ConfigError
    from realgap.eval.layout import load_layout
    from realgap.runs import RunFolder, check_writable_folder
    from realgap.sim.calibration import Calibration
    from realgap.sim.twin import TwinParams, flatten

    if args.trials < 1:
        raise ConfigError(f"--trials must be at least 1, got {args.trials}")
    if args.out is not None:
        check_writable_folder(args.out)
    if args.calibration.suffix == ".json":
        calibration = Calibration.load(args.calibration)
    else:  # a twin file: every value that differs from the nominal twin is "measured"
        twin = TwinParams.from_toml(args.calibration)
        calibration = Calibration({k: v for k, v in flatten(twin.to_dict()).items()})
    result = attribute(
        policy_folder(args.policy),
        calibration,
        load_layout(args.layout),
        args.trials,
        args.seed,
        progress=lambda label: print(f"  evaluating: {label}"),
    )
    nominal, full = result["nominal"], result["calibrated"]
    print(
        f"nominal twin {nominal['success_rate']:.0%}, calibrated twin "
        f"{full['success_rate']:.0%} (gap {result['gap']['gap']:+.0%})"
    )
    for row in result["differences"]:
        alone, gain = row["cost_alone"], row["gain_if_removed"]
        print(
            f"{row['difference']:>28}: costs {alone['gap']:+.0%} alone "
            f"({alone['ci95'][0]:+.0%} to {alone['ci95'][1]:+.0%}); fixing it gains "
            f"{gain['gap']:+.0%} ({gain['ci95'][0]:+.0%} to {gain['ci95'][1]:+.0%})"
        )
    if args.out is not None:
        run = RunFolder(args.out)
        run.write_json("attribution.json", result)
        run.file("attribution.section.html").write_text(section_html(result))
        print(f"wrote {run.file('attribution.json')}")
    return 0
