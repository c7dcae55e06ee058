"""Where objects land is a twin parameter: an operator measuring from the wrong point is
modelled in the twin, randomized around a measurement, and played by the fake arm."""

import numpy as np
import pytest

from realgap.adapt.run import placement_offset
from realgap.bridge.profile import ProfileError, RealityProfile, load_profile
from realgap.sim import robot
from realgap.sim.batched_env import BatchedEnv
from realgap.sim.calibration import Calibration
from realgap.sim.draws import sample_episode
from realgap.sim.randomization import DomainRandomization
from realgap.sim.twin import PlacementParams, TwinParams

BACK_EDGE = (-0.0388353, 0.0)


def placed(twin: TwinParams, cube_xy, target_xy):
    env = BatchedEnv("PlaceCube", 2, twin=twin, render=False)
    try:
        env.reset_to(cube_xy=cube_xy, target_xy=target_xy, seed=0)
        cube = robot.sim_to_arm(env.cube_start[:, :2])
        target = robot.sim_to_arm(env.target_start[:, :2])
        return cube, target
    finally:
        env.close()


def test_a_placement_offset_moves_the_object_and_the_bin_alike():
    shifted = TwinParams(placement=PlacementParams(offset_xy_m=(-0.03, 0.01)))
    cube, target = placed(shifted, (0.20, 0.05), (0.25, -0.05))
    np.testing.assert_allclose(cube, [[0.17, 0.06]] * 2, atol=1e-9)
    np.testing.assert_allclose(target, [[0.22, -0.04]] * 2, atol=1e-9)
    cube, target = placed(TwinParams(), (0.20, 0.05), (0.25, -0.05))
    np.testing.assert_allclose(cube, [[0.20, 0.05]] * 2, atol=1e-9)


def test_drawn_objects_land_in_the_shifted_square():
    twin = TwinParams(placement=PlacementParams(offset_xy_m=(-0.05, 0.0)))
    env = BatchedEnv("PickCube", 128, twin=twin, render=False)
    try:
        env.reset(seed=3)
        x = robot.sim_to_arm(env.cube_start[:, :2])[:, 0]
    finally:
        env.close()
    half = env.config.cube_square_size / 2
    centre = env.config.cube_square_center[0] - 0.05
    assert np.all((x >= centre - half - 1e-9) & (x <= centre + half + 1e-9))
    assert x.min() < centre - half + 0.03  # reaches into the strip the nominal square lacks


def test_a_measured_offset_centres_the_randomization_with_its_uncertainty():
    calibration = Calibration()
    calibration.measure("placement.offset_xy_m", [-0.036, 0.001], [0.002, 0.001])
    randomization = DomainRandomization().around(calibration)
    assert randomization.placement_offset_m == pytest.approx(0.004)
    drawn = sample_episode(randomization, np.random.default_rng(0), 256).placement_offset
    assert np.all(np.abs(drawn - [-0.036, 0.001]) <= 0.004 + 1e-12)
    assert drawn[:, 0].std() > 0.001
    # Nominal widths: nobody's tape measure is randomized unless measured.
    nominal = sample_episode(DomainRandomization(), np.random.default_rng(0), 8)
    assert np.all(nominal.placement_offset == 0.0)


def test_profiles_speak_the_twin_placement_and_refuse_the_old_key():
    assert load_profile("reference_pitfalls").twin.placement.offset_xy_m == pytest.approx(BACK_EDGE)
    assert load_profile("typical_so101").twin.placement.offset_xy_m == (0.0, 0.0)
    with pytest.raises(ProfileError, match=r"\[placement\] offset_xy_m"):
        RealityProfile.from_dict({"world": {"origin_offset_m": [0.0, 0.0]}})


def test_the_placement_check_becomes_an_offset_and_its_standard_error():
    check = {"mean_offset_cm": [-3.63, 0.09], "standard_error_cm": [0.122, 0.054]}
    offset, sigma = placement_offset(check)
    np.testing.assert_allclose(offset, [-0.0363, 0.0009])
    np.testing.assert_allclose(sigma, [0.00122, 0.00054])
