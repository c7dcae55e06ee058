"""``rig.toml``: what the camera cannot measure, weighed and measured by the user.

Images fix the camera and the joints and step responses fix the servos, but not
what the cube weighs or how grippy it is. The user writes them down::

    # Weighed on a kitchen scale, measured with calipers.
    [cube]
    mass_kg = 0.011
    size_m = 0.025
    friction = 0.6        # on the desk: tan of the angle a tilted board of it slides at

    [fingers]
    friction = 0.8

    [scene]
    shadows = true        # the arm casts a shadow on the desk: look, and say so

    [uncertainty]         # one standard deviation each; defaults below
    "cube.friction" = 0.2

Keys are :class:`~realgap.sim.twin.TwinParams` keys of the ``cube`` and ``fingers``
sections and ``scene.shadows``; unknown keys and bad values are refused with the file
and key named. Shadows are the user's to say: the spread of the desk's brightness over
a recording's poses did not tell shadowed rooms from others (0.19-0.25 on six random
webcam arms with shadows, 0.05-0.52 on four without).
"""

from __future__ import annotations

import logging
from pathlib import Path

from realgap.diagnose.hand_eye import MEASURED_CUBE_SIGMA_M
from realgap.sim.scene import DESK_FRICTION
from realgap.sim.twin import TwinParams, TwinParamsError, flatten, parse_sections, read_toml

log = logging.getLogger(__name__)

RIG_SECTIONS = ("cube", "fingers", "scene")
SCENE_KEYS = ("shadows",)
"""Of the twin's ``[scene]``, what a user says; its light is measured from images."""
DEFAULT_SIGMA = {
    "cube.mass_kg": 0.001,  # a kitchen scale's gram
    "cube.size_m": MEASURED_CUBE_SIGMA_M,  # half a millimetre with a ruler
    "cube.friction": 0.15,  # friction is guessed, not measured, on most desks
    "fingers.friction": 0.15,
}
"""One standard deviation of what a user measures without a lab; colour is exact."""


def load_rig(path: str | Path | None) -> dict[str, tuple[object, object]]:
    """``section.key -> (value, sigma)`` from a rig file; None gives nothing."""
    if path is None:
        return {}
    data = read_toml(path, TwinParamsError)
    sigma = data.pop("uncertainty", {})
    outside = sorted(set(data) - set(RIG_SECTIONS))
    if outside:
        raise TwinParamsError(
            f"{path}: rig.toml holds only {list(RIG_SECTIONS)} (and [uncertainty]); "
            f"{outside} come from the calibration recording"
        )
    scene = data.get("scene", {})
    extra = sorted(set(scene) - set(SCENE_KEYS)) if isinstance(scene, dict) else []
    if extra:
        raise TwinParamsError(
            f"{path}: scene.{extra[0]}: rig.toml's [scene] holds only {list(SCENE_KEYS)}; "
            "the light comes from the calibration recording"
        )
    parse_sections(TwinParams(), data, str(path))  # names the file and key on a bad value
    values = flatten(data)
    if not isinstance(sigma, dict):
        raise TwinParamsError(f"{path}: [uncertainty] must be a table of 'section.key' = number")
    exact = sorted(key for key in sigma if isinstance(values.get(key), bool))
    if exact:
        raise TwinParamsError(f"{path}: {exact[0]} is true or false: it has no uncertainty")
    unknown = sorted(set(sigma) - set(values))
    if unknown:
        raise TwinParamsError(f"{path}: uncertainty for keys not given: {unknown}")
    friction = values.get("cube.friction")
    if friction is not None and friction < DESK_FRICTION:
        # Said, not refused: the value is right, the twin cannot draw it (docs/twin.md).
        log.warning(
            "%s: cube.friction %g is below the twin's desk (%g), which is a floor: the "
            "twin's cube slides on it as %g",
            path,
            friction,
            DESK_FRICTION,
            DESK_FRICTION,
        )
    return {key: (value, sigma.get(key, DEFAULT_SIGMA.get(key))) for key, value in values.items()}
