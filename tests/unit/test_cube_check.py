"""The calibration's check that the pose sweep left the cube on its mark: a still cube
on an arm with noisy encoders passes, a pushed one does not."""

import numpy as np
import pytest

from realgap.bridge.random_arms import sample_arm
from realgap.bridge.worlds import open_fake_world
from realgap.diagnose import recording as recording_module
from realgap.diagnose.hand_eye import MAX_CUBE_SHIFT_PX, HandEyeFit, cube_shift_px
from realgap.sim import robot


def _shift_px(seed: int, push_m=(0.0, 0.0), monkeypatch=None) -> float:
    """Record random arm ``seed``'s session (the cube pushed by ``push_m`` just before
    the view after the sweep) and check it with the arm's true geometry, so that what
    the check reads is the recording's own noise and the push."""
    profile = sample_arm(seed)
    world = open_fake_world("Reach", profile, seed=seed)
    if any(push_m):
        view, checks = recording_module._view, []

        def pushed_view(world_, arm, reads):
            if reads == recording_module.CHECK_READS:
                checks.append(reads)
                if len(checks) == 2:  # the start pose's view after the sweep
                    fake = world_.extra["world"]
                    cube = np.asarray(world_.truth()[0].cube_pos).reshape(-1)
                    on_desk = np.asarray(cube[:2]) - np.asarray(robot.PAN_AXIS_XY)
                    fake.place_objects(on_desk + np.asarray(push_m), marked=True)
                    world_.clock.sleep(0.5)
            return view(world_, arm, reads)

        monkeypatch.setattr(recording_module, "_view", pushed_view)
    recording = recording_module.record_calibration(world, poses=8, seed=seed)
    return cube_shift_px(recording, HandEyeFit.from_twin(profile.twin))


@pytest.mark.parametrize("seed", [17, 28])
def test_a_still_cube_on_an_arm_with_noisy_encoders_is_not_flagged(seed):
    # Both arms read 0.33-0.39 degrees noisy: averaged over 5 reads at the two views,
    # their still cubes read 2.1 and 2.2 px in the 30-arm benchmark (refused fits); 28
    # reads 2.3 px here with 5 reads, 1.1 with 40.
    assert _shift_px(seed) < MAX_CUBE_SHIFT_PX


@pytest.mark.parametrize("push_m", [(0.005, 0.0), (0.0, -0.005)])
def test_a_cube_pushed_5_mm_during_the_sweep_is_flagged(push_m, monkeypatch):
    # 2.5 and 2.0 px; with 5 reads per view the first read 1.5 px and passed.
    assert _shift_px(28, push_m, monkeypatch) > MAX_CUBE_SHIFT_PX
