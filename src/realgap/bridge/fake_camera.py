"""The fake arm's wrist camera: a webcam's frame queue and its own image chain.

It queues frames like a V4L2 driver (new frames are dropped while the queue is full,
so an unread queue goes stale) and auto-exposes unless locked. A frame is captured
as the scene's state (cheap) and developed when read, through the camera's chain:

1. the scene rendered at :data:`RESOLVED_FRACTION` of the sensor's resolution in the
   fake world's dressed model (textured desk, lamps and shadows, clutter), at up to
   :data:`BLUR_SAMPLES` states across the exposure, averaged (motion blur);
2. lens: radial distortion (a remap from a wider render, which also brings it to the
   sensor's resolution) and vignetting;
3. sensor: the profile's exposure, the camera's gain or auto-exposure, read and shot
   noise, white balance, then the tone response (gamma, black level);
4. MJPEG at the sensor's quality.

A profile with no ``[desk]``/``[sensor]``/``[lights]``/``[clutter]`` takes the path it
always took (render, exposure, tone), bit for bit.
"""

from __future__ import annotations

from collections import deque

import cv2
import numpy as np

from realgap.bridge.fake import NOISE_BANK
from realgap.bridge.interfaces import Camera, CameraSettings, Frame
from realgap.policy_io import tone
from realgap.sim import robot
from realgap.sim.camera_effects import (
    NoiseBank,
    add_sensor_noise,
    distortion_maps,
    jpeg_roundtrip,
    motion_blur,
    required_margin,
    vignetting_gain,
    widened_fovy,
)
from realgap.sim.render import WristRenderer, set_wrist_camera

AUTO_EXPOSURE_TARGET = 0.35
"""Mean pixel value (0..1) an auto-exposing camera steers towards."""
BLUR_SAMPLES = 2
"""Renders averaged over an exposure while the arm moves (its start and end: each costs
a render, and a third cost a 640x480 frame 10 ms more for a smear the 16x16 policy
image barely tells apart)."""
RESOLVED_FRACTION = 0.5
"""The scene is rendered at this fraction of the sensor's width and height and resampled
(bilinear) to it. A cheap webcam's lens and Bayer demosaicking resolve about half its
pixel count (plausible, not measured on one), and on a CPU renderer the render's cost
grows with its pixels: at 640x480 with shadows a full-size render took 14 ms, a half-size
one 5.7 ms. Noise, vignetting and MJPEG still act on every sensor pixel."""
MOVING_RAD = 0.002
"""Joint travel over the exposure below which one render stands for all."""


class FakeCamera(Camera):
    """The fake twin's wrist camera (see the module docstring)."""

    def __init__(
        self,
        world,
        shape: tuple[int, int] | None = None,
        fps: float = 30.0,
        buffer_frames: int = 4,
        camera_id: str = "fake_wrist",
    ):
        self.world, self.fps = world, fps
        self.appearance = world.profile.appearance
        self.shape = shape or self.appearance.shape
        self.buffer: deque[Frame] = deque()
        self.buffer_frames = buffer_frames
        self.camera_id = camera_id
        self.connected = False
        self.renderer: WristRenderer | None = None
        self.chain: _ImageChain | None = None
        self._power_up()

    def _power_up(self) -> None:
        # Settings live in the camera until it loses power: a lock is forgotten on unplug.
        self.settings = CameraSettings(
            auto_exposure=self.world.profile.hardware.camera_auto_exposure
        )
        self.next_capture = self.world.time

    def unplug_and_replug(self) -> None:
        """Power-cycle the camera: it comes back with its power-up settings."""
        self.buffer.clear()
        self._power_up()

    def connect(self) -> None:
        with self.world.lock:
            if self.renderer is None:
                if self.appearance.is_plain:
                    self.renderer = WristRenderer(self.world.model, 16, 1, shape=self.shape)
                    # The mount error, field of view, colours and light of the arm's twin.
                    self.renderer.apply_twin(self.world.twin, 0)
                else:
                    self.chain = _ImageChain(self.world, self.shape, self.appearance)
                    self.renderer = self.chain.renderer
            self.buffer.clear()
            self.next_capture = self.world.time
            self.world.cameras.append(self)
            self.connected = True

    def disconnect(self) -> None:
        with self.world.lock:
            if self in self.world.cameras:
                self.world.cameras.remove(self)
            if self.renderer is not None:
                self.renderer.close()
                self.renderer, self.chain = None, None
            self.connected = False

    def begin_episode(self, rng: np.random.Generator) -> None:
        """Draw the sensor's noise from ``rng`` from now on (the world's episode stream)."""
        if self.chain is not None:
            self.chain.noise.rng = rng

    def maybe_capture(self, time: float) -> None:
        """Called by the world at every physics step: take a frame when one is due."""
        if not self.connected or time + 1e-9 < self.next_capture:
            return
        self.next_capture += 1.0 / self.fps
        if self.next_capture < time:  # after a long pause, resume the frame grid
            self.next_capture = time + 1.0 / self.fps
        if len(self.buffer) >= self.buffer_frames:
            return  # queue full: the driver drops the new frame
        # Keep the scene as it was over the exposure; render when read, in the reader's
        # thread (the GL context belongs to it, and dropped frames cost nothing).
        world = self.world
        exposure = self.appearance.sensor.exposure_ms / 1000.0
        states = world.states_during(time - exposure, time, BLUR_SAMPLES)
        self.buffer.append(Frame(states, time))

    def _develop(self, frame: Frame) -> Frame:
        states = frame.image
        if self.chain is not None:
            return Frame(self.chain.develop(states, self.settings), frame.timestamp)
        qpos, mocap = states[-1]
        return Frame(self._expose(self.renderer.render_raw(qpos, mocap)), frame.timestamp)

    def _expose(self, raw: np.ndarray) -> np.ndarray:
        camera = self.world.profile.twin.camera
        pixels = raw.astype(np.float32) / 255.0 * camera.exposure_scale
        return (_sensor_tone(pixels, self.settings, camera) * 255 + 0.5).astype(np.uint8)

    def read(self) -> Frame:
        if not self.connected:
            raise ConnectionError(f"camera {self.camera_id!r} is not connected")
        world = self.world
        for _ in range(int(self.fps) + 2):
            world.advance()
            if self.buffer:
                return self._develop(self.buffer.popleft())
            # Wait for the next capture, which happens on a physics step boundary.
            due = max(self.next_capture, world.time + world.model.opt.timestep)
            world.clock.sleep(max(due - world.clock.now(), 1e-4))
        raise TimeoutError(f"camera {self.camera_id!r} produced no frame")

    def read_latest(self) -> Frame:
        self.world.advance()
        if len(self.buffer) >= self.buffer_frames:
            # A full queue has been dropping new frames: everything in it may be old.
            self.buffer.clear()
        if len(self.buffer) > 1:
            newest = self.buffer.pop()
            self.buffer.clear()
            return self._develop(newest)
        return self.read()

    def flush(self) -> int:
        self.world.advance()
        dropped = len(self.buffer)
        self.buffer.clear()
        return dropped

    def get_settings(self) -> CameraSettings:
        return self.settings

    def apply_settings(self, settings: CameraSettings) -> None:
        self.settings = settings
        self.buffer.clear()  # frames taken with the old settings are no use


def _sensor_tone(pixels: np.ndarray, settings: CameraSettings, camera) -> np.ndarray:
    """Gain (auto-exposure, or the locked exposure and gain), then the sensor's tone
    response (gamma, black level), on linear 0..1 pixels."""
    if settings.auto_exposure:
        gain = np.clip(AUTO_EXPOSURE_TARGET / max(float(pixels.mean()), 1e-3), 0.25, 6.0)
    else:
        gain = settings.exposure * settings.gain
    # The sensor's tone response acts on what the exposure let through.
    return tone(pixels, gain, camera.gamma, camera.black_level)


class _ImageChain:
    """The full chain of a profile with a room and a sensor (see the module docstring);
    the lens maps, vignetting and noise bank are built once per connection."""

    def __init__(self, world, shape: tuple[int, int], appearance):
        self.world, self.shape = world, shape
        sensor = appearance.sensor
        self.sensor = sensor
        twin_camera = world.profile.twin.camera
        model = world.model
        fovy = (
            float(model.cam_fovy[model.camera(robot.WRIST_CAMERA).id]) + twin_camera.fov_deg_delta
        )
        k1, k2 = sensor.distortion_k
        height, width = shape
        render_shape = (round(height * RESOLVED_FRACTION), round(width * RESOLVED_FRACTION))
        self.maps, wide = None, fovy
        if k1 or k2:
            # Barrel lenses see beyond the pinhole's frame: a render with a wider view
            # (as many pixels, each covering a little more) is the source.
            margin = required_margin(shape, fovy, k1, k2) * 1.02
            scale = render_shape[0] / height
            maps = distortion_maps(shape, fovy, k1, k2, margin=margin, source_scale=scale)
            # Fixed-point maps (1/32 pixel) remap 1.6 times faster than float ones.
            self.maps = cv2.convertMaps(*maps, cv2.CV_16SC2)
            wide = widened_fovy(fovy, margin)
        self.renderer = WristRenderer(world.model, 16, 1, shape=render_shape)
        # The mount error, field of view, colours and light of the arm's twin ...
        self.renderer.apply_twin(world.twin, 0)
        if self.maps is not None:  # ... with the wider view the lens needs
            renderer = self.renderer
            set_wrist_camera(
                renderer.model,
                renderer.camera,
                renderer.nominal,
                world.twin.camera_offset[0],
                world.twin.camera_rotation[0],
                twin_camera.fov_deg_delta + (wide - fovy),
            )
        gain = np.ones((*shape, 3), np.float32) * np.float32(twin_camera.exposure_scale)
        if sensor.vignetting:
            gain *= vignetting_gain(shape, sensor.vignetting)[:, :, None]
        gain *= np.asarray(sensor.white_balance_rgb, dtype=np.float32)
        self.gain = gain * np.float32(1 / 255)
        # The bank is the arm's own (its seed's), whenever and however often the camera
        # connects; which slice a frame reads is the episode's draw (begin_episode).
        self.noise = NoiseBank((*shape, 3), seed=(world.seed, NOISE_BANK))

    def develop(self, states: list[tuple], settings: CameraSettings) -> np.ndarray:
        renders = [self.renderer.render_raw(q, m) for q, m in self._moving(states)]
        render = renders[0]
        if len(renders) > 1:  # averaged on the small render, back to 8 bits for the lens
            render = cv2.convertScaleAbs(motion_blur(renders), alpha=255.0)
        # The lens (or a plain resample) brings the render to the sensor's size, on 8 bits:
        # three times cheaper than on floats.
        if self.maps is not None:
            frame = cv2.remap(render, *self.maps, cv2.INTER_LINEAR)
        else:
            frame = cv2.resize(render, self.shape[::-1], interpolation=cv2.INTER_LINEAR)
        # 8 bits to linear, exposure, vignetting and white balance: one gain map (built once).
        linear = cv2.multiply(frame, self.gain, dtype=cv2.CV_32F)
        # Noise is added where the sensor counts photons: after the optics, before the ISP.
        sensor = self.sensor
        linear = add_sensor_noise(linear, sensor.noise, sensor.shot_noise, self.noise.draw())
        toned = _sensor_tone(linear, settings, self.world.profile.twin.camera)
        frame = cv2.convertScaleAbs(toned, alpha=255.0)  # rounds and saturates to 8 bits
        return jpeg_roundtrip(frame, sensor.jpeg_quality)

    @staticmethod
    def _moving(states: list[tuple]) -> list[tuple]:
        """All the exposure's states while the arm moves; the last alone when still."""
        if len(states) > 1:
            travel = np.abs(states[-1][0][:6] - states[0][0][:6]).max()
            if travel > MOVING_RAD:
                return states
        return states[-1:]
