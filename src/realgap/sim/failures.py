"""Why an episode failed, told from privileged state (sim and fake worlds).

:class:`EpisodeTracker` watches every step of a batch of episodes and names
each failure: ``never saw the cube`` (the object never entered the wrist
camera's field of view), ``knocked over`` (a can tipped, or Stack's lower object
toppled or pushed away), ``never grasped``, ``grasp slipped`` (lost while the jaws
were commanded closed), ``released misaligned`` (Stack: let go beside the lower
object, not on it), ``released early`` (opened elsewhere, outside the bin), or
``timed out``. On the real arm there is no privileged state: the operator's
judgement stands and the reason is ``unknown``.
"""

from __future__ import annotations

import numpy as np

from realgap.sim.tasks import SimState, Task

REASONS = (
    "never saw the cube",
    "knocked over",
    "never grasped",
    "grasp slipped",
    "released misaligned",
    "released early",
    "timed out",
)


def cube_in_view(
    cube_pos, cam_pos, cam_mat, fovy_deg: float, *, fraction: float = 1.0, aspect: float = 1.0
) -> np.ndarray:
    """Whether each cube centre (n, 3) is inside the wrist view (MuJoCo cameras look
    along their -z axis; ``cam_mat`` is (n, 9) row-major): the policy's square view by
    default, or a frame ``aspect`` times as wide as it is high, and only its central
    ``fraction`` of each half-width."""
    mat = np.asarray(cam_mat).reshape(-1, 3, 3)
    relative = np.asarray(cube_pos) - np.asarray(cam_pos)
    local = np.einsum("nij,ni->nj", mat, relative)  # coordinates along the camera axes
    depth = -local[:, 2]
    half = np.tan(np.deg2rad(fovy_deg) / 2) * fraction
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = (np.abs(local[:, 0]) <= half * aspect * depth) & (
            np.abs(local[:, 1]) <= half * depth
        )
    return (depth > 0) & inside


class EpisodeTracker:
    """Flags over a batch of ``n`` episodes, updated every step."""

    def __init__(self, task: Task, n: int):
        self.task, self.n = task, n
        self.saw = np.zeros(n, dtype=bool)
        self.grasped_once = np.zeros(n, dtype=bool)
        self.was_grasped = np.zeros(n, dtype=bool)
        self.slipped = np.zeros(n, dtype=bool)
        self.released = np.zeros(n, dtype=bool)
        self.misaligned = np.zeros(n, dtype=bool)
        self.knocked = np.zeros(n, dtype=bool)
        self.success = np.zeros(n, dtype=bool)

    def update(self, state: SimState, cam_pos, cam_mat, fovy_deg: float) -> None:
        self.saw |= cube_in_view(state.cube_pos, cam_pos, cam_mat, fovy_deg)
        flags = self.task.evaluate(state)
        grasped, success = flags["grasped"], flags["success"]
        self.success |= success
        lost = self.was_grasped & ~grasped & ~success
        commanded_open = state.target[:, 5] > 0.3
        in_bin = flags.get("in_bin", np.zeros(self.n, dtype=bool))
        near_base = flags.get("near_base", np.zeros(self.n, dtype=bool))
        on_base = flags.get("on_base", np.zeros(self.n, dtype=bool))
        released = lost & commanded_open & ~in_bin & ~on_base
        self.misaligned |= released & near_base
        self.released |= released & ~near_base
        self.knocked |= flags["knocked_over"] & ~success
        self.slipped |= lost & ~commanded_open
        self.grasped_once |= grasped
        self.was_grasped = grasped

    def reasons(self) -> list[str | None]:
        """None for successes, otherwise the most telling reason."""
        out: list[str | None] = []
        for i in range(self.n):
            if self.success[i]:
                out.append(None)
            elif not self.saw[i]:
                out.append("never saw the cube")
            elif self.knocked[i]:
                out.append("knocked over")
            elif self.task.grasps and not self.grasped_once[i]:
                out.append("never grasped")
            elif self.misaligned[i]:
                out.append("released misaligned")
            elif self.released[i]:
                out.append("released early")
            elif self.slipped[i]:
                out.append("grasp slipped")
            else:
                out.append("timed out")
        return out
