"""The hand-eye fit's lens: the twin's wider render, remapped, shows a point where a
lens with k1 puts it in the camera's frame."""

import numpy as np
import pytest

from realgap.diagnose.lens import K1_COVERED, Lens
from realgap.sim.camera_effects import distort_points, required_margin


@pytest.mark.parametrize("k1", [0.0, -0.05, 0.04])
def test_the_lens_shows_a_point_where_the_radial_model_puts_it(k1):
    shape, nominal_fovy, frame_fovy = (96, 128), 75.0, 76.5
    lens = Lens(shape, nominal_fovy)
    point = np.array([[104.0, 22.0]])  # (x, y) in the frame's pinhole pixels
    expected = distort_points(point, shape, frame_fovy, k1, 0.0)[0]
    # The same direction in the render, whose view is wider by the lens's margin.
    wide = lens.render_fovy(frame_fovy)
    focal = (shape[0] / 2) / np.tan(np.deg2rad(frame_fovy) / 2)
    wide_focal = (shape[0] / 2) / np.tan(np.deg2rad(wide) / 2)
    centre = np.array([(shape[1] - 1) / 2, (shape[0] - 1) / 2])
    x, y = centre + (point[0] - centre) * wide_focal / focal
    rows, columns = np.mgrid[0 : shape[0], 0 : shape[1]].astype(np.float32)
    render = np.exp(-((columns - x) ** 2 + (rows - y) ** 2) / (2 * 1.2**2)).astype(np.float32)
    frame = lens.apply(render, frame_fovy, k1)
    weight = np.where(frame > 0.2 * frame.max(), frame, 0.0)
    found = np.array([(weight * columns).sum(), (weight * rows).sum()]) / weight.sum()
    assert np.allclose(found, expected, atol=0.25), (found, expected)


def test_the_render_covers_the_frame_of_the_strongest_covered_lens():
    lens = Lens((96, 128), 75.0)
    assert lens.margin >= required_margin((96, 128), 75.0, K1_COVERED, 0.0)
    frame = lens.apply(np.ones((96, 128), np.float32), 75.0, K1_COVERED)
    assert frame.min() > 0.99  # no border shows through
