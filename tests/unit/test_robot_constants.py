"""robot.py's constants agree with the compiled model, so no second source of truth drifts."""

import mujoco
import numpy as np
import pytest

from realgap.sim import robot
from realgap.sim.scene import SceneConfig, compile_scene, joint_ids


@pytest.fixture(scope="module")
def model():
    return compile_scene(SceneConfig())[0]


def test_joint_names_order_and_ranges(model):
    hinges = [
        model.joint(i).name
        for i in range(model.njnt)
        if model.jnt_type[i] == mujoco.mjtJoint.mjJNT_HINGE
    ]
    assert tuple(hinges) == robot.JOINT_NAMES
    ids = joint_ids(model)
    assert np.allclose(
        model.jnt_range[[model.joint(n).id for n in robot.JOINT_NAMES]], robot.JOINT_RANGES
    )
    assert list(ids["actuator"]) == [model.actuator(n).id for n in robot.JOINT_NAMES]


def test_new_calibration_zero_is_mid_range_except_documented_offsets():
    # "new calibration": zero is the middle of each range, to within the official
    # file's asymmetric wrist_roll and gripper ranges.
    middles = robot.JOINT_RANGES.mean(axis=1)
    assert np.allclose(middles[:4], 0.0, atol=1e-6)


def test_link_masses(model):
    for body, mass in robot.LINK_MASSES.items():
        assert model.body(body).mass[0] == pytest.approx(mass)


def test_servo_parameters_reach_the_model(model):
    for name in robot.JOINT_NAMES:
        servo = robot.SERVOS[name]
        actuator, joint = model.actuator(name), model.joint(name)
        assert actuator.gainprm[0] == pytest.approx(servo.kp)
        assert actuator.biasprm[:3] == pytest.approx([0, -servo.kp, -servo.kv])
        assert actuator.forcerange == pytest.approx([-servo.torque_limit, servo.torque_limit])
        assert model.dof_damping[joint.dofadr[0]] == pytest.approx(servo.damping)
        assert model.dof_frictionloss[joint.dofadr[0]] == pytest.approx(servo.frictionloss)
        assert model.dof_armature[joint.dofadr[0]] == pytest.approx(servo.armature)
    assert model.actuator(robot.GRIPPER).forcerange[1] < robot.ARM_SERVO.torque_limit


def test_keyframes_inside_joint_limits():
    for name, pose in robot.KEYFRAMES.items():
        assert pose.shape == (6,), name
        assert np.all(pose >= robot.JOINT_RANGES[:, 0]) and np.all(pose <= robot.JOINT_RANGES[:, 1])


def test_pan_axis_is_where_the_model_puts_it(model):
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    shoulder = data.body("shoulder")
    assert np.allclose(shoulder.xpos[:2], robot.PAN_AXIS_XY, atol=1e-6)
    # The pan axis is vertical, so it meets the table at its xy: 3.9 cm ahead of the origin.
    assert abs(shoulder.xmat.reshape(3, 3)[:, 2] @ [0, 0, 1]) == pytest.approx(1.0)
    assert robot.PAN_AXIS_XY[0] == pytest.approx(0.0388, abs=1e-4)


def test_frame_conversion_round_trip():
    point = np.array([0.2, -0.05])
    assert np.allclose(robot.sim_to_arm(robot.arm_to_sim(point)), point)
    assert robot.arm_to_sim([0, 0]) == pytest.approx(robot.PAN_AXIS_XY)


def test_camera_and_pinch_constants_match_the_shipped_model(model):
    camera = model.camera(robot.WRIST_CAMERA)
    assert camera.pos == pytest.approx(robot.WRIST_CAMERA_POS)
    assert camera.fovy[0] == pytest.approx(robot.WRIST_CAMERA_FOVY)
    assert model.site(robot.PINCH_SITE).pos == pytest.approx(robot.PINCH_POS)
    assert model.body(model.camera(robot.WRIST_CAMERA).bodyid[0]).name == robot.GRIPPER_BODY


def test_start_pinch_constant_matches_the_model(model):
    data = mujoco.MjData(model)
    data.qpos[joint_ids(model)["qpos"]] = robot.KEYFRAMES["start"]
    mujoco.mj_kinematics(model, data)
    pinch = data.site_xpos[model.site(robot.PINCH_SITE).id]
    assert robot.sim_to_arm(pinch[:2]) == pytest.approx(robot.START_PINCH_ARM[:2], abs=1e-3)
    assert pinch[2] == pytest.approx(robot.START_PINCH_ARM[2], abs=1e-3)
