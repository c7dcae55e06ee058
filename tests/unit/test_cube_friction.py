"""What a twin's ``cube.friction`` is: the cube's friction on the desk, never below the
desk's own, and not the grip (the jaw pads' friction governs that).

Found on random webcam arm 323 (soft gripper, a 29 g cube): the scripted expert grasped
84% of the time with the arm's true cube friction (0.70) and 30% with the twin's
unmeasured 1.0; any value up to the desk's 0.8 gave the same 84%.
"""

import mujoco
import pytest

from realgap.sim.scene import CUBE, DESK_FRICTION, FLOOR, SceneConfig, compile_scene


def _cube_on_desk_friction(cube_friction: float) -> list[float]:
    model, _ = compile_scene(SceneConfig(cube_friction=cube_friction))
    data = mujoco.MjData(model)
    for _ in range(20):  # let the cube settle onto the desk
        mujoco.mj_step(model, data)
    cube, floor = model.geom(CUBE).id, model.geom(FLOOR).id
    return [
        float(contact.friction[0])
        for contact in data.contact[: data.ncon]
        if {contact.geom1, contact.geom2} == {cube, floor}
    ]


@pytest.mark.parametrize(
    ("cube_friction", "on_desk"), [(0.3, DESK_FRICTION), (0.8, DESK_FRICTION), (1.1, 1.1)]
)
def test_the_cube_slides_on_the_desk_with_the_larger_of_the_two_frictions(cube_friction, on_desk):
    frictions = _cube_on_desk_friction(cube_friction)
    assert frictions, "the cube should rest on the desk"
    assert frictions == pytest.approx([on_desk] * len(frictions))


def test_the_jaw_pads_friction_governs_the_grip():
    model, _ = compile_scene(SceneConfig())
    cube = model.geom(CUBE).id
    pads = [model.geom(name).id for name in ("fixed_jaw", "moving_jaw")]
    # MuJoCo takes the higher-priority geom's friction for a contact: the pads'.
    assert all(model.geom_priority[pad] > model.geom_priority[cube] for pad in pads)
