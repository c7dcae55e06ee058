"""A picture of what the policy sees: wrist frames at policy resolution, the
same frames enlarged from the supersampled render, and a third-person view."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from realgap.sim.batched_env import BatchedEnv
from realgap.sim.randomization import DomainRandomization
from realgap.sim.render import WristRenderer
from realgap.sim.scripted import ScriptedController


def _nearest(image: np.ndarray, side: int) -> np.ndarray:
    factor = side // image.shape[0]
    return image.repeat(factor, axis=0).repeat(factor, axis=1)


def save_view(
    task: str,
    out: Path,
    episodes: int = 6,
    randomized: bool = True,
    seed: int = 0,
    steps: tuple[int, ...] = (0, 6, 12, 18),
) -> Path:
    """Write a PNG grid: one row per episode, columns = wrist frames over time + overview."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    randomization = DomainRandomization() if randomized else None
    env = BatchedEnv(task, episodes, randomization=randomization, seed=seed)
    controller = ScriptedController(env)
    env.reset(seed=seed)
    overview = WristRenderer(env.model, 60, 4)
    wrist = WristRenderer(env.model, 60, 4)  # the wrist view at full size, per env
    frames: dict[int, np.ndarray] = {}
    for step in range(max(steps) + 1):
        if step in steps:
            frames[step] = env.render()
        env.step(controller.act())
    side = 96
    columns = len(steps) + 2
    fig, axes = plt.subplots(
        episodes, columns, figsize=(1.6 * columns, 1.6 * episodes), squeeze=False
    )
    for row in range(episodes):
        for col, step in enumerate(steps):
            axes[row, col].imshow(_nearest(frames[step][row], side), interpolation="nearest")
            if row == 0:
                axes[row, col].set_title(f"policy {env.config.image_size}px, t={step}", fontsize=7)
        mocap = env.mocap_pos[row] if env.mocap_pos is not None else None
        wrist.apply_twin(env.params, row, env.noise)  # this row's randomized visuals
        full = wrist.render_raw(env.qpos[row], mocap)
        axes[row, -2].imshow(full)
        axes[row, -1].imshow(overview.render_raw(env.qpos[row], mocap, camera="overview"))
        if row == 0:
            axes[row, -2].set_title("wrist, rendered", fontsize=7)
            axes[row, -1].set_title("third person", fontsize=7)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(
        f"{task}: what the policy sees ({'randomized' if randomized else 'nominal'})", fontsize=9
    )
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    overview.close()
    wrist.close()
    env.close()
    return out
