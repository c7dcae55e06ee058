"""``realgap model``: write the compiled scene as MJCF."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "model",
        help="write a task's compiled scene as MJCF (open it in MuJoCo's viewer, diff it)",
    )
    parser.add_argument("--task", default="PickCube", help="task whose scene to write")
    parser.add_argument("--xml", type=Path, required=True, help="output MJCF path")
    parser.add_argument(
        "--arm",
        type=Path,
        default=None,
        help="another MJCF of the SO-101 (same joint names), e.g. the mesh model",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from dataclasses import replace

    from realgap.sim.scene import build_spec
    from realgap.sim.tasks import make_task

    task = make_task(args.task)
    spec = build_spec(replace(task.scene_config(), robot_xml=args.arm))
    model = spec.compile()
    args.xml.parent.mkdir(parents=True, exist_ok=True)
    args.xml.write_text(spec.to_xml())
    print(
        f"wrote {args.xml}: {model.nbody} bodies, {model.njnt} joints, {model.ngeom} geoms, "
        f"timestep {model.opt.timestep} s"
    )
    return 0
