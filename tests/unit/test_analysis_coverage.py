"""The hand-eye fit's camera targets are coverages: masks on the full frame, averaged
down, measured as the twin's side is (binary masks of a finer render, averaged)."""

import numpy as np

from realgap.diagnose.hand_eye import _SilhouetteModel
from realgap.diagnose.joints import analysis_coverage, analysis_factor, analysis_frames
from realgap.diagnose.recording import CalibrationRecording
from realgap.sim import robot
from realgap.sim.render import cube_mask, jaw_mask

DESK = (30, 30, 30)
JAW = (230, 200, 40)
CUBE = (200, 20, 20)


def _webcam_frame() -> np.ndarray:
    """A 640x480 frame: a dark desk; a jaw band covering 2 of every 5 columns (a thin
    bright edge, the case where averaging before the colour test goes wrong); a cube."""
    frame = np.full((480, 640, 3), DESK, dtype=np.uint8)
    band = frame[100:300, 50:300]
    band[:, (np.arange(250) % 5) < 2] = JAW
    frame[350:420, 400:470] = CUBE
    return frame


def test_coverage_is_the_share_of_masked_full_frame_pixels_per_block():
    frames = _webcam_frame()[None]
    coverage = analysis_coverage(frames, jaw_mask)
    assert analysis_factor((480, 640)) == 5
    assert coverage.shape == (1, 96, 128) and coverage.dtype == np.float32
    np.testing.assert_allclose(coverage[0, 20:60, 10:60], 0.4, atol=1e-6)
    assert coverage[0, :20].max() == 0.0
    # Masking the averaged frame instead calls the whole band jaw: the bias it removes.
    assert jaw_mask(analysis_frames(frames)[0])[20:60, 10:60].all()
    cube = analysis_coverage(frames, cube_mask)[0]
    np.testing.assert_allclose(cube.sum() * 25, 70 * 70)


def test_coverage_at_the_analysis_size_is_the_mask_itself():
    frame = np.zeros((96, 128, 3), dtype=np.uint8)
    frame[10:30, 40:50] = JAW
    np.testing.assert_array_equal(analysis_coverage(frame[None], jaw_mask)[0], jaw_mask(frame))


def test_the_silhouette_model_fits_against_coverage_not_masks_of_averaged_frames():
    frame = _webcam_frame()
    start = np.asarray(robot.KEYFRAMES["start"], dtype=float)
    recording = CalibrationRecording(
        task="PickCube",
        world="fake",
        cube_xy=(0.25, 0.0),
        control_hz=30.0,
        sample_hz=30.0,
        step_rad=0.1,
        pose_readings=start[None],
        pose_frames=frame[None],
        step_writes=np.zeros((1, 6)),
        step_samples=np.zeros((1, 6)),
        step_sample_write=np.zeros(1, dtype=int),
    )
    model = _SilhouetteModel(recording, supersample=1, cube_size_m=None)
    try:
        assert model.keep == [0]
        np.testing.assert_allclose(model.jaw_targets[0, 20:60, 10:60], 0.4, atol=1e-6)
    finally:
        model.close()
