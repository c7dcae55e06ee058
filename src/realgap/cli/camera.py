"""``realgap camera``: lock the wrist camera's exposure, and check the lock before a run."""

from __future__ import annotations

from realgap.cli.deploy import add_world_arguments


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "camera", help="lock exposure/gain/white balance (lock) and verify them (check)"
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    lock = sub.add_parser("lock", help="apply fixed settings at the start pose and store them")
    add_world_arguments(lock)
    lock.add_argument("--task", default="Reach", help="scene to show the camera")
    lock.add_argument("--exposure", type=float, help="manual exposure (camera units)")
    lock.add_argument("--gain", type=float, help="manual gain")
    lock.add_argument("--white-balance", type=float, help="white balance, kelvin")
    lock.set_defaults(func=run)
    check = sub.add_parser("check", help="verify the stored lock and the scene brightness")
    add_world_arguments(check)
    check.add_argument("--task", default="Reach", help="scene to show the camera")
    check.set_defaults(func=run)


def run(args) -> int:
    from dataclasses import replace

    from realgap.bridge.camera_lock import DEFAULT_SETTINGS, check_camera, lock_camera, lock_path
    from realgap.bridge.worlds import at_start_pose
    from realgap.cli.deploy import open_world

    world = open_world(args, args.task)
    # The reference region is defined as seen from the start pose (never at rest).
    with at_start_pose(world):
        if args.action == "lock":
            given = {"exposure": args.exposure, "gain": args.gain}
            given["white_balance"] = args.white_balance
            settings = replace(
                DEFAULT_SETTINGS, **{k: v for k, v in given.items() if v is not None}
            )
            lock = lock_camera(world.camera, settings, joint_offsets_rad=world.arm.zero_offsets)
            print(
                f"locked camera {lock.camera_id!r}: {settings}; reference brightness "
                f"{lock.reference_mean:.3f}; stored in {lock_path(lock.camera_id)}"
            )
        else:
            report = check_camera(world.camera, joint_offsets_rad=world.arm.zero_offsets)
            print(
                f"camera {report['camera_id']!r} OK: settings as locked, reference "
                f"brightness {report['reference_mean']:.3f} (locked {report['locked_mean']:.3f})"
            )
            if report["relocked"]:
                print(report["relocked"])
    return 0
