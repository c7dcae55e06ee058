"""The twin tones every rendered pixel before it averages them, as a camera does: a
camera clips and tones each sensor pixel, and the policy's 16x16 image averages what it
delivered. Toned after the average, a bright desk saturating around a dark cube drew
the cube's edges lighter in the twin than on the (fake) arm."""

from dataclasses import replace

import numpy as np
import pytest

from realgap.bridge.camera_lock import DEFAULT_SETTINGS
from realgap.bridge.profile import RealityProfile
from realgap.bridge.worlds import open_fake_world
from realgap.policy_io import camera_to_policy, postprocess, postprocess_batch, tone
from realgap.sim.batched_env import BatchedEnv
from realgap.sim.randomization import DomainRandomization


def test_an_over_exposed_box_averages_what_each_pixel_clipped_to():
    # Half the box white, half black, at twice the exposure: a camera clips the white
    # pixels to 1 and the box reads 0.5; clipping the average read 1.0.
    image = np.zeros((4, 4, 3), np.uint8)
    image[:, :2] = 255
    assert postprocess(image, 1, exposure=2.0)[0, 0, 0] == 128
    assert postprocess(image, 1, exposure=0.5)[0, 0, 0] == 64  # a gain below 1 never clips


def test_the_randomizations_exposure_jitter_is_an_augmentation_on_the_average():
    # The camera's exposure goes on every pixel; the randomization's gain on top of it
    # goes on the average, like brightness (drawn per pixel, it cost the demo's Reach
    # policies 10 points in the sim and 22 on reference_pitfalls, seeds 0-3).
    image = np.zeros((4, 4, 3), np.uint8)
    image[:, :2] = 255
    assert postprocess(image, 1, gain=2.0)[0, 0, 0] == 255
    assert postprocess(image, 1, exposure=2.0, gain=0.5)[0, 0, 0] == 64


def test_a_batch_tones_each_image_with_its_own_values_before_averaging():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (4, 8, 8, 3), dtype=np.uint8)
    exposure, gamma, black = [0.8, 1.5, 1.0, 1.3], [1.0, 1.0, 0.8, 1.2], [0.0, 0.0, 0.0, 0.05]
    ones, zeros = np.ones(4), np.zeros(4)
    out = postprocess_batch(images, 2, np.array(exposure), zeros, ones, ones, zeros, gamma, black)
    for i in range(4):
        toned = tone(images[i].astype(np.float32) / 255, exposure[i], gamma[i], black[i])
        expected = toned.reshape(2, 4, 2, 4, 3).mean(axis=(1, 3))
        assert np.abs(out[i].astype(int) - np.round(expected * 255)).max() <= 1, i


@pytest.mark.parametrize("exposure", [1.0, 1.6])
def test_the_twin_draws_what_the_fake_arms_camera_delivers_on_a_bright_desk(exposure):
    # The same state through both: the batched twin's render and the fake camera's
    # (the plain path, the twin's own renderer at the camera's resolution).
    twin = RealityProfile().twin.updated(
        {"camera": {"background_rgb": [0.9, 0.8, 0.6], "exposure_scale": exposure}}, "test"
    )
    env = BatchedEnv("PickCube", 1, randomization=DomainRandomization.none(twin), seed=0)
    obs, _ = env.reset_to(np.array([0.13, 0.07]), yaw=0.0, seed=0)
    world = open_fake_world("PickCube", replace(RealityProfile(), twin=twin), seed=0)
    camera = world.camera
    camera.connect()
    camera.apply_settings(DEFAULT_SETTINGS)
    mocap = None if env.mocap_pos is None else env.mocap_pos[0]
    frame = camera._expose(camera.renderer.render_raw(env.qpos[0], mocap))
    difference = np.abs(obs["image"][0].astype(int) - camera_to_policy(frame, 16).astype(int))
    env.close()
    camera.disconnect()
    # Toned after the average, at 1.6: 5.8 grey levels apart on average and 76 at the
    # cube's edges; toned first, 0.7 and 20 (at 1.0: 0.8 and 19 either way, from the
    # two renders' resolutions).
    assert difference.mean() < 2.0 and difference.max() < 50, (difference.mean(), difference.max())
