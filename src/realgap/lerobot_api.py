"""The one door to LeRobot: every LeRobot name realgap uses is imported here.

Install with ``pip install 'realgap[real]'`` (LeRobot >= 0.5 needs Python >= 3.12).
LeRobot's API moves between releases, so each import is version-checked against
:data:`SUPPORTED` and anything else is refused with a message rather than failing
deep inside a session. Users of these names: :mod:`realgap.bridge.lerobot_arm`
(the SO-101 follower) and :mod:`realgap.imitate.act` (the ACT policy).

Facts this module relies on (all checked on 0.6.1):

- ``SO101Follower`` is an alias of ``SOFollower`` in ``lerobot.robots.so_follower``
  (``so101_follower`` went away in 0.4.3).
- ACT lives in ``lerobot.policies.act``. Normalization is not inside the policy but
  in processor pipelines (``make_pre_post_processors``), saved beside the weights as
  ``policy_preprocessor.json`` / ``policy_postprocessor.json`` with their statistics.
"""

from __future__ import annotations

from types import SimpleNamespace

from realgap.errors import MissingExtra

SUPPORTED = ("0.5", "0.6")
"""LeRobot minor versions realgap is tested against."""

INSTALL_HINT = (
    "this needs LeRobot: pip install 'realgap[real]' "
    "(LeRobot >= 0.5 needs Python >= 3.12; see the README)"
)


class LeRobotUnavailable(MissingExtra):
    """LeRobot is missing, or a version realgap does not support."""


def check_version() -> str:
    """The installed LeRobot version; raises :class:`LeRobotUnavailable` if unsupported."""
    try:
        import lerobot
    except ImportError as error:
        raise LeRobotUnavailable(f"{INSTALL_HINT} ({error})") from error
    version = getattr(lerobot, "__version__", "unknown")
    if not any(version == v or version.startswith(v + ".") for v in SUPPORTED):
        raise LeRobotUnavailable(
            f"LeRobot {version} is not supported; realgap supports {', '.join(SUPPORTED)}.x. "
            f"Install a supported release: pip install 'lerobot[feetech]>=0.5,<0.7'"
        )
    return version


def is_available() -> bool:
    """Whether a supported LeRobot is importable (no exception)."""
    try:
        check_version()
    except LeRobotUnavailable:
        return False
    return True


def import_follower():
    """LeRobot's SO-101 follower: ``(robot class, config class)``."""
    check_version()
    try:
        from lerobot.robots.so_follower import SO101Follower, SO101FollowerConfig
    except ImportError as error:
        raise LeRobotUnavailable(f"{INSTALL_HINT} ({error})") from error
    return SO101Follower, SO101FollowerConfig


def import_act() -> SimpleNamespace:
    """LeRobot's ACT policy, its config, processors and feature types."""
    check_version()
    try:
        from lerobot.configs.types import FeatureType, PolicyFeature
        from lerobot.policies.act.configuration_act import ACTConfig
        from lerobot.policies.act.modeling_act import ACTPolicy
        from lerobot.policies.factory import make_pre_post_processors
    except ImportError as error:
        raise LeRobotUnavailable(f"{INSTALL_HINT} ({error})") from error
    return SimpleNamespace(
        ACTConfig=ACTConfig,
        ACTPolicy=ACTPolicy,
        make_pre_post_processors=make_pre_post_processors,
        FeatureType=FeatureType,
        PolicyFeature=PolicyFeature,
    )
