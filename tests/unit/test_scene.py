"""Scene building: another arm MJCF through the joint-name contract, clear errors."""

import re

import mujoco
import pytest

from realgap.sim import robot
from realgap.sim.scene import SceneConfig, compile_scene


def strip_extras(xml: str) -> str:
    """Our arm without pinch site and wrist camera, like the official mesh MJCF."""
    xml = re.sub(r'<site name="pinch"[^>]*/>', "", xml)
    return re.sub(r'<camera name="wrist"[^>]*/>', "", xml)


def test_foreign_arm_model_loads_through_the_contract(tmp_path):
    path = tmp_path / "other_so101.xml"
    path.write_text(strip_extras(robot.robot_xml_path().read_text()))
    model, _ = compile_scene(SceneConfig(robot_xml=path))
    assert model.site(robot.PINCH_SITE).id >= 0
    assert model.camera(robot.WRIST_CAMERA).id >= 0
    assert model.actuator("gripper").gainprm[0] == pytest.approx(robot.GRIPPER_SERVO.kp)


def test_arm_missing_a_joint_is_refused_by_name(tmp_path):
    path = tmp_path / "renamed.xml"
    path.write_text(robot.robot_xml_path().read_text().replace('name="wrist_roll"', 'name="roll"'))
    with pytest.raises(ValueError, match=r"lacks joints \['wrist_roll'\]"):
        compile_scene(SceneConfig(robot_xml=path))


def test_written_scene_recompiles(tmp_path):
    from realgap.cli import main

    out = tmp_path / "scene.xml"
    assert main(["model", "--task", "PlaceCube", "--xml", str(out)]) == 0
    model = mujoco.MjModel.from_xml_path(str(out))
    assert model.body("bin").id >= 0 and model.joint("gripper").id >= 0


def test_added_camera_equals_the_shipped_one(tmp_path):
    path = tmp_path / "other_so101.xml"
    path.write_text(strip_extras(robot.robot_xml_path().read_text()))
    foreign, _ = compile_scene(SceneConfig(robot_xml=path))
    shipped, _ = compile_scene(SceneConfig())
    for name in ("pos", "quat", "fovy"):
        assert getattr(foreign.camera("wrist"), name) == pytest.approx(
            getattr(shipped.camera("wrist"), name), abs=1e-6
        )
