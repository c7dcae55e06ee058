"""The OpenCV wrist camera: settings go to V4L2 properties and read back; frames are RGB."""

import threading
import time

import numpy as np
import pytest

from realgap.bridge.camera_lock import CameraCheckFailed, check_camera, lock_camera
from realgap.bridge.interfaces import CameraSettings
from realgap.bridge.opencv_camera import OpenCVCamera


class FakeCapture:
    """Stands in for cv2.VideoCapture: BGR frames, properties by name, auto-exposure
    brightening the frame while it is on."""

    def __init__(self, source):
        self.props = {"CAP_PROP_AUTO_EXPOSURE": 3.0, "CAP_PROP_AUTO_WB": 1.0}
        self.count = 0
        self.lock = threading.Lock()

    def isOpened(self):  # OpenCV's name
        return True

    def set(self, name, value):
        with self.lock:
            self.props[name] = value
        return True

    def get(self, name):
        return self.props.get(name, 0.0)

    def read(self):
        time.sleep(0.005)
        self.count += 1
        level = 90 if self.props["CAP_PROP_AUTO_EXPOSURE"] == 3.0 else 20
        frame = np.full((48, 64, 3), level, dtype=np.uint8)
        frame[..., 0] = 0  # blue channel in BGR
        return True, frame

    def release(self):
        pass


@pytest.fixture
def camera():
    camera = OpenCVCamera(0, capture_factory=FakeCapture, camera_id="test_cam")
    camera.connect()
    yield camera
    camera.disconnect()


def test_frames_are_rgb_and_fresh(camera):
    frame = camera.read_latest()
    assert frame.image.shape == (48, 64, 3) and frame.image[0, 0, 2] == 0  # BGR -> RGB
    later = camera.read_fresh(not_before=frame.timestamp + 0.02)
    assert later.timestamp >= frame.timestamp + 0.02


def test_lock_sets_manual_exposure_and_check_reads_it_back(camera, tmp_path):
    settings = CameraSettings(auto_exposure=False, exposure=120, gain=8, white_balance=4600)
    lock_camera(camera, settings, folder=tmp_path)
    props = camera.capture.props
    assert props["CAP_PROP_AUTO_EXPOSURE"] == 1 and props["CAP_PROP_AUTO_WB"] == 0
    assert props["CAP_PROP_WB_TEMPERATURE"] == 4600
    assert camera.get_settings() == settings
    assert check_camera(camera, folder=tmp_path)["ok"]
    camera.apply_settings(CameraSettings())  # someone turned auto-exposure back on
    with pytest.raises(CameraCheckFailed, match="auto-exposure is ON"):
        check_camera(camera, folder=tmp_path)
