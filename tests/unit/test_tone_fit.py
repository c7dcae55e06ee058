"""The camera's tone response, fitted from pixels of known colour (jaws and cube)."""

import numpy as np

from realgap.diagnose.camera import fit_tone
from realgap.policy_io import tone


def _jaw_pairs(seed: int = 0):
    """Renders of printed-yellow jaw pixels over the whole brightness range, and what a
    camera with a known response makes of them."""
    rng = np.random.default_rng(seed)
    red = rng.uniform(60, 230, size=(8, 24, 32))
    renders = np.stack([red, 0.8 * red, 0.1 * red], axis=-1)
    truth = {"exposure": 1.2, "gamma": 0.9, "black_level": 0.02}
    frames = tone(renders / 255.0, **truth) * 255
    return renders, frames, truth


def test_the_tone_fit_recovers_a_known_response():
    renders, frames, truth = _jaw_pairs()
    fit = fit_tone(frames.round().astype(np.uint8), renders.round().astype(np.uint8))
    assert abs(fit["exposure"] - truth["exposure"]) < 0.03
    assert abs(fit["gamma"] - truth["gamma"]) < 0.03


def test_a_shadow_the_twin_does_not_draw_does_not_bend_the_tone():
    # A quarter of the jaw pixels lie in a shadow (or lack a highlight) the twin does
    # not draw: their colour keeps its ratios, only darker. Least squares read that as
    # a darker camera (exposure 1.2 -> 0.97); the response is the other pixels'.
    renders, frames, truth = _jaw_pairs()
    frames[:, :, :8] *= 0.5
    fit = fit_tone(frames.round().astype(np.uint8), renders.round().astype(np.uint8))
    assert abs(fit["exposure"] - truth["exposure"]) < 0.06
    assert abs(fit["gamma"] - truth["gamma"]) < 0.06
