"""A USB wrist camera through OpenCV, with exposure, gain and white balance under control.

LeRobot's OpenCV camera config has no exposure, gain or white-balance
controls, so realgap drives ``cv2.VideoCapture`` itself. A background thread
reads frames continuously (so the driver's queue never goes stale) and keeps
the newest; ``read`` still returns frames in order, the way a plain
``VideoCapture.read`` loop would see them.

Property values follow the V4L2 backend (Linux): auto-exposure 1 = manual,
3 = auto; exposure in 100 us units; white balance in kelvin.
"""

from __future__ import annotations

import threading
from collections import deque

from realgap.bridge.interfaces import Camera, CameraSettings, Clock, Frame
from realgap.errors import MissingExtra

V4L2_MANUAL_EXPOSURE, V4L2_AUTO_EXPOSURE = 1, 3


def _cv2():
    try:
        import cv2
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise MissingExtra("the real camera needs OpenCV: pip install 'realgap[real]'") from error
    return cv2


class OpenCVCamera(Camera):
    """``cv2.VideoCapture`` on a device index or path; ``capture_factory`` is for tests."""

    def __init__(
        self,
        source: int | str = 0,
        width: int = 640,
        height: int = 480,
        fps: float = 30.0,
        camera_id: str | None = None,
        clock: Clock | None = None,
        capture_factory=None,
        buffer_frames: int = 4,
    ):
        self.source, self.width, self.height, self.fps = source, width, height, fps
        self.camera_id = camera_id or f"opencv_{source}".replace("/", "_")
        self.clock = clock or Clock()
        self.capture_factory = capture_factory
        self.capture = None
        self.frames: deque[Frame] = deque(maxlen=buffer_frames)
        self.new_frame = threading.Condition()
        self._thread: threading.Thread | None = None
        self._running = False

    def connect(self) -> None:
        cv2 = _cv2() if self.capture_factory is None else None
        if self.capture_factory is not None:
            self.capture = self.capture_factory(self.source)
        else:
            self.capture = cv2.VideoCapture(self.source, cv2.CAP_V4L2)
        if not self.capture.isOpened():
            raise ConnectionError(f"camera {self.source!r} could not be opened")
        self._set("CAP_PROP_FRAME_WIDTH", self.width)
        self._set("CAP_PROP_FRAME_HEIGHT", self.height)
        self._set("CAP_PROP_FPS", self.fps)
        self._running = True
        self._thread = threading.Thread(target=self._grab, name="realgap-camera", daemon=True)
        self._thread.start()

    def disconnect(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self.capture is not None:
            self.capture.release()
            self.capture = None

    def _prop(self, name: str) -> int:
        if self.capture_factory is not None:
            return name  # test captures take property names
        return getattr(_cv2(), name)

    def _set(self, name: str, value) -> None:
        self.capture.set(self._prop(name), float(value))

    def _get(self, name: str) -> float:
        return float(self.capture.get(self._prop(name)))

    def _grab(self) -> None:
        while self._running:
            ok, image = self.capture.read()
            if not ok:
                continue
            frame = Frame(image[:, :, ::-1].copy(), self.clock.now())  # BGR -> RGB
            with self.new_frame:
                self.frames.append(frame)
                self.new_frame.notify_all()

    def _wait(self, timeout: float = 2.0) -> None:
        with self.new_frame:
            if not self.frames and not self.new_frame.wait_for(lambda: self.frames, timeout):
                raise TimeoutError(f"camera {self.camera_id!r} delivered no frame")

    def read(self) -> Frame:
        self._wait()
        with self.new_frame:
            return self.frames.popleft()

    def read_latest(self) -> Frame:
        self._wait()
        with self.new_frame:
            frame = self.frames.pop()
            self.frames.clear()
            return frame

    def flush(self) -> int:
        with self.new_frame:
            dropped = len(self.frames)
            self.frames.clear()
            return dropped

    def get_settings(self) -> CameraSettings:
        auto = self._get("CAP_PROP_AUTO_EXPOSURE") != V4L2_MANUAL_EXPOSURE
        auto_wb = self._get("CAP_PROP_AUTO_WB") != 0
        return CameraSettings(
            auto_exposure=auto,
            exposure=self._get("CAP_PROP_EXPOSURE"),
            gain=self._get("CAP_PROP_GAIN"),
            white_balance=None if auto_wb else self._get("CAP_PROP_WB_TEMPERATURE"),
        )

    def apply_settings(self, settings: CameraSettings) -> None:
        mode = V4L2_AUTO_EXPOSURE if settings.auto_exposure else V4L2_MANUAL_EXPOSURE
        self._set("CAP_PROP_AUTO_EXPOSURE", mode)
        if not settings.auto_exposure:
            self._set("CAP_PROP_EXPOSURE", settings.exposure)
            self._set("CAP_PROP_GAIN", settings.gain)
        if settings.white_balance is None:
            self._set("CAP_PROP_AUTO_WB", 1)
        else:
            self._set("CAP_PROP_AUTO_WB", 0)
            self._set("CAP_PROP_WB_TEMPERATURE", settings.white_balance)
        self.flush()  # frames taken with the old settings are no use
