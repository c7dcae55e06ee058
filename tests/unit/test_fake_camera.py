"""The fake camera's own image chain: each effect changes a frame as its model says, and
a profile's room and sensor sections are validated like the rest of it."""

from dataclasses import replace

import cv2
import numpy as np
import pytest

from realgap.bridge import fake_camera
from realgap.bridge.appearance import Appearance, Desk, Lights, Sensor
from realgap.bridge.camera_lock import DEFAULT_SETTINGS
from realgap.bridge.profile import ProfileError, RealityProfile, load_profile
from realgap.bridge.worlds import Spot, at_start_pose, open_fake_world
from realgap.policy_io import camera_to_policy, postprocess_batch
from realgap.sim.camera_effects import (
    NoiseBank,
    add_sensor_noise,
    distort_points,
    distortion_maps,
    jpeg_roundtrip,
    vignetting_gain,
)
from realgap.sim.textures import TEXTURES, desk_texture

WEBCAM = """
name = "webcam"
[camera]
background_rgb = [0.5, 0.38, 0.24]
[desk]
texture = "wood"
contrast = 0.35
[sensor]
resolution = [640, 480]
noise = 0.01
shot_noise = 0.02
jpeg_quality = 70
distortion_k = [-0.05, 0.0]
vignetting = 0.3
exposure_ms = 20
white_balance_rgb = [1.05, 1.0, 0.92]
[lights]
shadows = true
extra = [{pos_m = [0.1, 0.3, 0.45], intensity = 0.4}]
[clutter]
objects = 4
seed = 2
"""


def test_distortion_moves_a_point_by_the_models_amount():
    shape, fovy, k1, k2 = (120, 160), 75.0, -0.12, 0.02
    undistorted = np.array([[130.0, 30.0], [40.0, 100.0]])  # (x, y)
    expected = distort_points(undistorted, shape, fovy, k1, k2)
    # The remap draws a distorted frame from an undistorted one: a dot at an undistorted
    # position shows up where the radial model sends it.
    map_x, map_y = distortion_maps(shape, fovy, k1, k2)
    for (ux, uy), (ex, ey) in zip(undistorted, expected):
        distance = np.hypot(map_x - ux, map_y - uy)
        row, column = np.unravel_index(np.argmin(distance), distance.shape)
        assert abs(column - ex) <= 1.0 and abs(row - ey) <= 1.0
    # r -> r (1 + k1 r^2 + k2 r^4) on normalized coordinates; the centre stays.
    focal = (shape[0] / 2) / np.tan(np.deg2rad(fovy) / 2)
    centre = np.array([(shape[1] - 1) / 2, (shape[0] - 1) / 2])
    r = np.linalg.norm((undistorted[0] - centre) / focal)
    moved = np.linalg.norm((expected[0] - centre) / focal)
    assert moved == pytest.approx(r * (1 + k1 * r**2 + k2 * r**4))
    assert np.allclose(distort_points(centre[None], shape, fovy, k1, k2), centre)


def test_the_lens_draws_the_sensor_frame_from_a_half_size_render():
    # The fake camera renders at half the sensor's size; the lens's remap resamples it.
    # A blob at an undistorted sensor position, drawn in the half-size render, must land
    # where the radial model sends that position in the full-size frame.
    shape, fovy, k1, k2, scale = (120, 160), 75.0, -0.12, 0.02, 0.5
    point = np.array([[118.0, 33.0]])  # (x, y) in the sensor's undistorted pixels
    expected = distort_points(point, shape, fovy, k1, k2)[0]
    small = (round(shape[0] * scale), round(shape[1] * scale))
    rows, columns = np.mgrid[0 : small[0], 0 : small[1]].astype(np.float32)
    x, y = (point[0] + 0.5) * scale - 0.5  # pixel centres: i covers [i, i + 1)
    render = np.exp(-((columns - x) ** 2 + (rows - y) ** 2) / (2 * 1.5**2)).astype(np.float32)
    maps = distortion_maps(shape, fovy, k1, k2, source_scale=scale)
    frame = cv2.remap(render, *maps, cv2.INTER_LINEAR)
    assert frame.shape == shape
    weight = np.where(frame > 0.2 * frame.max(), frame, 0.0)
    rows, columns = np.mgrid[0 : shape[0], 0 : shape[1]]
    found = np.array([(weight * columns).sum(), (weight * rows).sum()]) / weight.sum()
    assert np.allclose(found, expected, atol=0.2), (found, expected)


def test_jpeg_at_quality_10_differs_from_95_and_from_off():
    frame = desk_texture("cloth", (0.6, 0.3, 0.2), 0.6, 0.004, seed=1, size=128)
    off = jpeg_roundtrip(frame, 0)
    high, low = jpeg_roundtrip(frame, 95), jpeg_roundtrip(frame, 10)
    error = lambda image: np.abs(image.astype(int) - frame.astype(int)).mean()  # noqa: E731
    assert off is frame
    assert 0 < error(high) < error(low)


def test_noise_has_the_stated_standard_deviation():
    bank = NoiseBank((200, 200, 3), seed=0)
    grey = np.full((200, 200, 3), 0.5, np.float32)
    read = add_sensor_noise(grey.copy(), 0.02, 0.0, bank.draw())
    assert read.std() == pytest.approx(0.02, rel=0.05)
    both = add_sensor_noise(grey.copy(), 0.02, 0.04, bank.draw())
    assert both.std() == pytest.approx(np.sqrt(0.02**2 + 0.04**2 * 0.5), rel=0.05)
    assert np.array_equal(add_sensor_noise(grey.copy(), 0.0, 0.0, bank.draw()), grey)


def test_vignetting_darkens_the_corners_by_its_strength():
    gain = vignetting_gain((48, 64), 0.3)
    assert gain[24, 32] == pytest.approx(1.0, abs=1e-3)
    assert gain[0, 0] == pytest.approx(0.7) and gain[-1, -1] == pytest.approx(0.7)


def test_desk_textures_are_deterministic_from_their_seed():
    for kind in TEXTURES:
        first = desk_texture(kind, (0.5, 0.4, 0.3), 0.4, 0.02, seed=1, size=256)
        assert np.array_equal(first, desk_texture(kind, (0.5, 0.4, 0.3), 0.4, 0.02, 1, 256))
        assert abs(first.mean() / 255 - 0.4) < 0.12  # around the base colour
        if kind != "flat":
            assert first.std() > 5
            other = desk_texture(kind, (0.5, 0.4, 0.3), 0.4, 0.02, 2, 256)
            assert kind == "mat" or not np.array_equal(first, other)  # a mat's grid is a grid


def frame_of(profile: RealityProfile, spot=(0.2, 0.0)) -> np.ndarray:
    world = open_fake_world("Reach", profile, seed=0)
    with at_start_pose(world):
        world.place_scene(Spot("centre", spot))
        world.camera.apply_settings(DEFAULT_SETTINGS)
        return world.camera.read_fresh(world.clock.now()).image


def test_the_shadow_darkens_the_desk_under_the_arm():
    # Both through the camera's own chain (a sensor of its own), so they differ by the
    # shadow alone.
    light_desk = {
        "camera": {"background_rgb": [0.8, 0.8, 0.8]},
        "sensor": {"resolution": [256, 192]},
    }
    lit = frame_of(RealityProfile.from_dict(light_desk))
    shadowed = frame_of(RealityProfile.from_dict({**light_desk, "lights": {"shadows": True}}))
    darker = lit.astype(int).sum(axis=2) - shadowed.astype(int).sum(axis=2)
    assert (darker > 60).mean() > 0.05  # a visible patch of the view lies in shadow
    assert (darker < -60).mean() < 0.01  # and nothing is much brighter for it


def test_a_webcam_profile_runs_the_whole_chain(tmp_path):
    path = tmp_path / "webcam.toml"
    path.write_text(WEBCAM)
    profile = load_profile(path)
    assert profile.appearance.sensor.resolution == (640, 480)
    assert profile.appearance.lights.extra[0].intensity == 0.4
    frame = frame_of(profile)
    assert frame.shape == (480, 640, 3)
    assert camera_to_policy(frame, 16).shape == (16, 16, 3)
    # The desk is wood, not the flat colour: the view above the jaws has structure.
    assert frame[:150].astype(float).std(axis=(0, 1)).mean() > 5
    assert "appearance" in profile.to_dict()


def test_a_profile_without_the_sections_is_the_plain_camera():
    profile = load_profile("typical_so101")
    assert profile.appearance.is_plain and "appearance" not in profile.to_dict()
    world = open_fake_world("Reach", profile)
    world.camera.connect()
    assert world.camera.chain is None and world.camera.shape == (96, 128)
    world.camera.disconnect()
    assert not Appearance(desk=Desk(texture="wood")).is_plain
    assert not Appearance(sensor=Sensor(noise=0.01)).is_plain
    assert not Appearance(lights=Lights(shadows=True)).is_plain


@pytest.mark.parametrize(
    "section, expected",
    [
        ("[desk]\ntexture = 'marble'\n", "desk.texture"),
        ("[desk]\ncolour = [1, 0, 0]\n", "desk.colour: unknown key"),
        ("[desk]\ncontrast = 1.5\n", "desk.contrast"),
        ("[sensor]\nresolution = [640.5, 480]\n", "sensor.resolution"),
        ("[sensor]\njpeg_quality = 150\n", "sensor.jpeg_quality"),
        ("[sensor]\ndistortion_k = [-0.1]\n", "sensor.distortion_k"),
        ("[lights]\nshadows = 1\n", "lights.shadows"),
        ("[lights]\nextra = [{pos_m = [0, 0, 0.4]}]\n", "lights.extra[0]"),
        ("[lights]\nextra = [{pos_m = [0, 0, -0.1], intensity = 1}]\n", "above the desk"),
        ("[clutter]\nobjects = -1\n", "clutter.objects"),
        ("[clutter]\nobjects = 2.5\n", "clutter.objects"),
        ("[scene]\nshadows = true\n", "scene.shadows is a twin's room"),
        ("[camera]\nbackground_texture = 'desk.png'\n", "is a twin's learned desk"),
        ("[camera]\nlens_k1 = -0.06\n", "is a twin's measured lens"),
    ],
)
def test_bad_room_and_sensor_values_are_refused_naming_file_and_key(tmp_path, section, expected):
    path = tmp_path / "bad.toml"
    path.write_text(section)
    with pytest.raises(ProfileError) as refused:
        load_profile(path)
    assert str(path) in str(refused.value) and expected in str(refused.value)


def twin_images(seed=0, moves=2, centre=None, **widths):
    """The batched twin's policy images after a few moves, under ``widths`` only."""
    from realgap.sim.batched_env import BatchedEnv
    from realgap.sim.randomization import DomainRandomization

    randomization = replace(DomainRandomization.none(centre), **widths)
    env = BatchedEnv("Reach", 4, randomization=randomization, seed=seed)
    obs, _ = env.reset(seed=seed)
    for _ in range(moves):
        obs, *_ = env.step(np.full((4, 6), 0.8))
    env.close()
    return obs["image"].astype(int)


@pytest.mark.parametrize(
    "widths",
    [
        {"desk_texture_p": 1.0, "background_value": (0.5, 0.5)},
        {"shadow_p": 1.0, "background_value": (0.7, 0.7)},
        {"blur_px": (20.0, 20.0)},
        {"distortion_k1": (-0.3, -0.3)},
        {"vignetting": (0.6, 0.6)},
        {"white_balance": 0.3},
        {"sensor_noise": (0.05, 0.05)},
        {"jpeg_p": 1.0, "jpeg_quality": (5.0, 5.0)},
    ],
)
def test_each_twin_camera_width_changes_the_policy_image(widths):
    plain_widths = {k: v for k, v in widths.items() if k == "background_value"}
    plain = twin_images(**plain_widths)
    changed = twin_images(**widths)
    assert np.abs(changed - plain).mean() > 0.5, widths


def test_a_room_that_casts_shadows_shadows_every_episode_of_its_twin():
    # rig.toml's scene.shadows: the arm's twin draws the shadow with no width at all,
    # as shadow_p = 1 would, and the draws after it do not move.
    from realgap.sim.twin import TwinParams

    light = {"background_value": (0.7, 0.7)}
    room = TwinParams().updated({"scene": {"shadows": True}}, "test")
    shadowed = twin_images(centre=room, **light)
    assert np.array_equal(shadowed, twin_images(shadow_p=1.0, **light))
    assert np.abs(shadowed - twin_images(**light)).mean() > 0.5


def test_a_measured_lens_is_drawn_in_every_episode_of_its_twin():
    # A calibration's camera.lens_k1: the arm's twin draws it with no width at all, and
    # a width then spreads around it rather than around a pinhole.
    from realgap.sim.twin import TwinParams

    lens = TwinParams().updated({"camera": {"lens_k1": -0.3}}, "test")
    bent = twin_images(centre=lens)
    assert np.array_equal(bent, twin_images(distortion_k1=(-0.3, -0.3)))
    assert np.abs(bent - twin_images()).mean() > 0.5
    assert np.array_equal(
        twin_images(centre=lens, distortion_k1=(0.1, 0.1)), twin_images(distortion_k1=(-0.2, -0.2))
    )


def test_the_twins_vignetting_darkens_corners_more_than_the_centre():
    plain, dark = twin_images(), twin_images(vignetting=(0.6, 0.6))
    loss = (plain - dark).sum(axis=3)
    corners = loss[:, [0, 0, -1, -1], [0, -1, 0, -1]].mean()
    assert corners > 3 * max(loss[:, 6:10, 6:10].mean(), 1.0)


def test_the_batch_area_downsample_is_each_images_own_box_mean():
    # postprocess_batch downsamples the batch as one tall image; no box may mix images.
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (5, 48, 64, 3), dtype=np.uint8)
    images[1] = 255  # a white image between darker ones: a straddling box would show
    ones, zeros = np.ones(5), np.zeros(5)
    out = postprocess_batch(images, 8, ones, zeros, ones, ones, zeros, ones, zeros)
    crop = images[:, :, 8:56]  # camera_to_policy's square; here the batch is already 48
    expected = (images.astype(np.float64) / 255).reshape(5, 8, 6, 8, 8, 3).mean(axis=(2, 4))
    assert out.shape == (5, 8, 8, 3) and crop.shape[2] == 48
    assert np.abs(out.astype(int) - np.round(expected * 255)).max() <= 1
    assert (out[1] == 255).all()


def test_a_half_size_render_changes_the_policy_image_by_less_than_a_grey_level(monkeypatch):
    # Why the fake camera may render at RESOLVED_FRACTION of its sensor: what the policy
    # sees (16x16 of a 640x480 frame) hardly changes.
    def policy_image(fraction):
        monkeypatch.setattr(fake_camera, "RESOLVED_FRACTION", fraction)
        return camera_to_policy(frame_of(load_profile("white_desk_webcam")), 16).astype(int)

    half, full = policy_image(0.5), policy_image(1.0)
    assert np.abs(half - full).mean() < 0.6  # 0.36 measured; a fifth-size render: 0.95
