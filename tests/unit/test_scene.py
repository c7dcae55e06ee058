"""Scene building: another arm MJCF through the joint-name contract, clear errors."""

import re

import mujoco
import numpy as np
import pytest

from realgap.sim import robot
from realgap.sim.scene import SceneConfig, TargetSlots, compile_scene


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


def test_target_slots_set_the_bin_and_the_lower_object_down_in_one_world_or_a_batch():
    bin_model, _ = compile_scene(SceneConfig(with_bin=True))
    slots = TargetSlots.of(bin_model)
    assert slots.bin_mocap >= 0 and slots.base_qpos == -1
    data = mujoco.MjData(bin_model)
    slots.place([0.1, 0.2, 0.0], data.qpos, data.mocap_pos)
    assert list(data.mocap_pos[slots.bin_mocap]) == [0.1, 0.2, 0.0]

    base_model, _ = compile_scene(SceneConfig(stack_base="cube"))
    slots = TargetSlots.of(base_model)
    assert slots.bin_mocap == -1 and slots.base_qpos >= 0
    qpos = np.tile(base_model.qpos0, (2, 1))
    qvel = np.ones((2, base_model.nv))
    where = np.array([[0.1, 0.2, 0.015], [0.3, -0.1, 0.015]])
    slots.place(where, qpos, None, qvel, yaw=np.array([0.0, np.pi / 2]))
    body = qpos[:, slots.base_qpos : slots.base_qpos + 7]
    np.testing.assert_allclose(body[:, :3], where)
    np.testing.assert_allclose(body[1, 3:], [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)])
    assert not qvel[:, slots.base_dof : slots.base_dof + 6].any()
    assert qvel[:, : slots.base_dof].all()  # nothing else at rest
