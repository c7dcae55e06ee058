"""What a fake arm's camera shows beside the twin's view at the same pose.

``realgap view TASK --profile NAME|FILE`` writes a PNG with one row per pose (the start
pose and a few around it, the cube on its spot): the twin's wrist render, the fake
camera's frame through its own image chain (its desk, lights, clutter and sensor), and
both as the policy sees them at 16x16. The difference a profile makes, at a glance.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from realgap.bridge.camera_lock import DEFAULT_SETTINGS
from realgap.bridge.profile import RealityProfile, load_profile
from realgap.bridge.worlds import Spot, at_start_pose, open_fake_world
from realgap.policy_io import camera_to_policy
from realgap.sim import robot
from realgap.sim.render import WristRenderer
from realgap.sim.scene import compile_scene
from realgap.sim.tasks import make_task

POSE_NUDGES_RAD = (
    np.zeros(6),
    np.array([0.25, 0.0, 0.0, 0.0, 0.0, 0.0]),
    np.array([-0.2, 0.15, -0.2, 0.1, 0.0, 0.0]),
)


def save_profile_view(
    task: str, profile: str | Path | RealityProfile, out: str | Path, cube_xy=(0.2, 0.0)
) -> Path:
    """Write the comparison PNG (see the module docstring); returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profile = profile if isinstance(profile, RealityProfile) else load_profile(profile)
    world = open_fake_world(task, profile)
    twin_model, _ = compile_scene(make_task(task).scene_config())
    twin = WristRenderer(twin_model, 16, 1, shape=world.camera.shape)
    rows = []
    with at_start_pose(world) as arm:
        world.place_scene(Spot("view", tuple(cube_xy), marked=True))
        world.camera.apply_settings(DEFAULT_SETTINGS)
        for nudge in POSE_NUDGES_RAD:
            arm.move_to(robot.KEYFRAMES["start"] + nudge)
            world.clock.sleep(0.5)
            frame = world.camera.read_fresh(world.clock.now()).image
            qpos = world.extra["world"].data.qpos.copy()
            mocap = world.extra["world"].data.mocap_pos.copy() if twin_model.nmocap else None
            rows.append((twin.render_raw(qpos, mocap), frame))
    twin.close()
    fig, axes = plt.subplots(len(rows), 4, figsize=(10, 2.3 * len(rows)), squeeze=False)
    titles = ("twin, rendered", f"fake:{profile.name}", "twin, policy 16x16", "fake, policy 16x16")
    for row, (rendered, frame) in enumerate(rows):
        small = [camera_to_policy(image, 16) for image in (rendered, frame)]
        for col, image in enumerate((rendered, frame, *small)):
            axes[row, col].imshow(image, interpolation="nearest")
            axes[row, col].set_xticks([])
            axes[row, col].set_yticks([])
            if row == 0:
                axes[row, col].set_title(titles[col], fontsize=8)
    fig.suptitle(
        f"{task}: the twin's view and fake:{profile.name}'s camera, same poses", fontsize=9
    )
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
