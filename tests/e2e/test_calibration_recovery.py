"""The hand-eye fit gives the same result whether its coarse fits run side by side or
one after the other. (Recovery of every difference at once: tests/e2e/test_calibration.py.)"""

import numpy as np
import pytest

from realgap.bridge.worlds import open_fake_world
from realgap.diagnose.recording import record_calibration

PROFILE = "workbench_so101"


@pytest.mark.slow
def test_the_coarse_fits_beside_each_other_give_the_fit_one_after_the_other(tmp_path, monkeypatch):
    # The two coarse fits run in a thread of their own where the machine allows: the
    # result must not depend on it.
    from realgap.diagnose import hand_eye

    if not hand_eye.concurrent_rendering():
        pytest.skip("one core or an on-screen OpenGL: the fits run one after the other")
    recording = record_calibration(open_fake_world("Reach", PROFILE), poses=16)
    together = hand_eye.fit_hand_eye(recording, bootstrap=20)
    monkeypatch.setattr(hand_eye, "concurrent_rendering", lambda: False)
    apart = hand_eye.fit_hand_eye(recording, bootstrap=20)
    assert np.array_equal(together.offsets_rad, apart.offsets_rad)
    assert np.array_equal(together.mount_offset_m, apart.mount_offset_m)
    assert np.array_equal(together.mount_rotation_deg, apart.mount_rotation_deg)
