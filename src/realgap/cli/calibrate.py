"""``realgap calibrate``: record a calibration session; fit joint offsets and servos."""

from __future__ import annotations

from pathlib import Path

from realgap.cli.deploy import add_world_arguments
from realgap.cli.diagnose import CUBE_SIZE_HELP


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="record a calibration session (record), fit joint zero offsets with the "
        "camera mount (joints) or servo dynamics (servos)",
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    record = sub.add_parser(
        "record", help="pose sweep with a still cube on a mark, then small step responses"
    )
    add_world_arguments(record)
    record.add_argument("--out", type=Path, required=True, help="recording (.npz)")
    record.add_argument("--task", default="Reach", help="scene the arm works in")
    record.add_argument(
        "--cube",
        type=float,
        nargs=2,
        default=(0.2, 0.0),
        metavar=("X", "Y"),
        help="where the cube's mark is, metres from the rotation axis",
    )
    record.add_argument("--poses", type=int, default=32)
    record.set_defaults(func=run_record)
    for name, text in (
        ("joints", "joint zero offsets and the camera mount, together, from the pose sweep"),
        ("servos", "fit servo stiffness, damping, friction and latency from its steps"),
    ):
        fit = sub.add_parser(name, help=text)
        fit.add_argument("recording", type=Path)
        if name == "joints":
            fit.add_argument("--cube-size", type=float, metavar="M", help=CUBE_SIZE_HELP)
        fit.add_argument(
            "--out",
            type=Path,
            default=Path("calibration.json"),
            help="calibration file to create or update (the bridge and the twin read it)",
        )
        fit.set_defaults(func=run_fit)


def run_record(args) -> int:
    from realgap.bridge.camera_lock import load_lock
    from realgap.cli.deploy import open_world
    from realgap.diagnose.recording import record_calibration
    from realgap.errors import RealgapStop

    world = open_world(args, args.task)
    try:
        world.camera.apply_settings(load_lock(world.camera.camera_id).settings)
    except RealgapStop as error:
        print(f"warning: {error}; recording with the camera's own settings")
    recording = record_calibration(world, tuple(args.cube), poses=args.poses, seed=args.seed)
    path = recording.save(args.out)
    print(
        f"wrote {path}: {len(recording.pose_frames)} poses, {len(recording.step_samples)} samples"
    )
    return 0


def run_fit(args) -> int:
    from realgap.diagnose.recording import CalibrationRecording
    from realgap.sim.calibration import Calibration

    recording = CalibrationRecording.load(args.recording)
    calibration = Calibration.load(args.out) if args.out.exists() else Calibration()
    if args.action == "joints":
        from realgap.diagnose.hand_eye import fit_hand_eye

        fit = fit_hand_eye(recording, cube_size_m=args.cube_size)
        for warning in fit.warnings:
            print(f"warning: {warning}")
        if not fit.warnings:
            calibration.measure("joints.zero_offset_deg", fit.offsets_deg, fit.offsets_sigma_deg)
            calibration.measure("camera.offset_m", fit.mount_offset_m, fit.mount_offset_sigma_m)
            calibration.measure(
                "camera.rotation_deg", fit.mount_rotation_deg, fit.mount_rotation_sigma_deg
            )
            calibration.measure("camera.fov_deg_delta", fit.fov_delta_deg, fit.fov_delta_sigma_deg)
        text = ", ".join(
            f"{v:+.2f}±{s:.2f}" for v, s in zip(fit.offsets_deg[:5], fit.offsets_sigma_deg[:5])
        )
        print(f"joint zero offsets (degrees, pan..roll): {text}")
        mount = ", ".join(f"{v * 1000:+.1f}" for v in fit.mount_offset_m)
        turn = ", ".join(f"{v:+.1f}" for v in fit.mount_rotation_deg)
        print(
            f"camera mount (fitted with them): offset [{mount}] mm, rotation [{turn}] deg, "
            f"field of view {fit.fov_delta_deg:+.1f} deg, lens k1 {fit.lens_k1:+.3f}"
            f"±{fit.lens_k1_sigma:.3f}"
        )
    else:
        from realgap.diagnose.servos import FITTED, identify_servos

        result = identify_servos(recording, calibration.joint_offsets_rad)
        for key in FITTED:
            calibration.measure(f"servo.{key}", result[key], result[f"{key}_sigma"])
        calibration.measure("servo.latency_steps", result["latency_steps"], 0.0)
        print(
            f"servos: stiffness x{result['kp_scale']:.2f}, damping x{result['damping_scale']:.2f}, "
            f"torque cap x{result['torque_limit_scale']:.2f}, "
            f"latency {result['latency_steps']} command(s); friction loss "
            f"x{result['frictionloss_scale']:.2f}±{result['frictionloss_scale_sigma']:.2f} "
            "(not measured by steps: the spread of plausible friction)"
        )
    calibration.source[args.action] = str(args.recording)
    print(f"wrote {calibration.save(args.out)}")
    return 0
