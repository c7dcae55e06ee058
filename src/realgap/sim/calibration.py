"""The calibration file: what was measured on one arm, as a partial twin with uncertainties.

One JSON file per robot (like LeRobot's calibration per robot id)::

    {"twin": {"joints": {"zero_offset_deg": [6 values]},
              "servo": {"kp_scale": 0.6, "latency_steps": 1, ...},
              "camera": {"offset_m": [3], "rotation_deg": [3], "fov_deg_delta": 2.0,
                         "exposure_scale": 1.2, "background_rgb": [3], ...}},
     "uncertainty": {"servo": {"kp_scale": 0.05}, ...},
     "source": {"recording": "...", ...}}

``twin`` holds only what was measured, in :class:`~realgap.sim.twin.TwinParams`
sections and keys (unknown keys are refused with the file and key named);
``uncertainty`` holds one standard deviation per measured value, same shape.

- **The bridge** (:class:`realgap.bridge.interfaces.Arm`) subtracts the measured
  joint zero offsets from every reading and adds them to every command, once,
  for fake and real arms alike.
- **The twin**: :meth:`Calibration.twin` is the arm's twin (the nominal twin with
  the measured values), which ``realgap eval --world sim --twin`` and
  ``realgap train --twin`` take.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from realgap.sim.twin import (
    TwinParams,
    TwinParamsError,
    check_value,
    flatten,
    parse_sections,
    read_json_object,
    unflatten,
)


class CalibrationError(TwinParamsError):
    """A calibration file is unreadable or has an unknown key or a bad value."""


_TOP_KEYS = ("twin", "uncertainty", "source")


@dataclass
class Calibration:
    """Measured twin values (``section.key -> value``) and their standard deviations."""

    values: dict[str, object] = field(default_factory=dict)
    uncertainty: dict[str, object] = field(default_factory=dict)
    source: dict = field(default_factory=dict)
    """What produced each part (recording path, fit residuals)."""

    def __post_init__(self) -> None:
        # Validate through TwinParams: the one place keys and ranges are checked.
        parse_sections(TwinParams(), unflatten(self.values), "calibration", CalibrationError)
        missing = sorted(set(self.uncertainty) - set(self.values))
        if missing:
            raise CalibrationError(f"calibration: uncertainty for unmeasured {missing}")
        for key, sigma in self.uncertainty.items():
            if not np.all(np.isfinite(sigma)) or np.any(np.asarray(sigma) < 0):
                raise CalibrationError(f"calibration: uncertainty.{key} must be >= 0")

    def measure(self, key: str, value, sigma=None) -> None:
        """Record one measured ``section.key`` (and its standard deviation)."""
        section, name = key.split(".", 1)
        default = getattr(getattr(TwinParams(), section, None), name, None)
        if default is None:
            raise CalibrationError(f"calibration: unknown key {key!r}")
        value = check_value(f"calibration: {key}", default, value, CalibrationError)
        self.values[key] = list(value) if isinstance(value, tuple) else value
        if sigma is not None:
            self.uncertainty[key] = np.asarray(sigma, dtype=float).tolist()

    def twin(self, base: TwinParams | None = None) -> TwinParams:
        """The arm's twin: ``base`` (nominal) with every measured value applied."""
        return parse_sections(
            base or TwinParams(), unflatten(self.values), "calibration", CalibrationError
        )

    def through_bridge(self) -> Calibration:
        """What a policy sees of this arm through a bridge that applies this calibration:
        the joint zero offsets are corrected, so only their residual remains (zero,
        within the same uncertainty); everything else is as measured."""
        values = dict(self.values)
        if "joints.zero_offset_deg" in values:
            values["joints.zero_offset_deg"] = [0.0] * len(values["joints.zero_offset_deg"])
        return Calibration(values, dict(self.uncertainty), {**self.source, "through_bridge": True})

    @property
    def joint_offsets_rad(self) -> np.ndarray:
        """Measured encoder zero errors (zeros where not measured)."""
        return np.deg2rad(np.asarray(self.values.get("joints.zero_offset_deg", [0.0] * 6)))

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "twin": unflatten(self.values),
            "uncertainty": unflatten(self.uncertainty),
            "source": self.source,
        }
        path.write_text(json.dumps(data, indent=2))
        return path

    @classmethod
    def load(cls, path: str | Path | None) -> Calibration:
        """Load a file; None gives an empty (identity) calibration. A missing file, bad
        JSON, an unknown key or a bad value raise :class:`CalibrationError` naming it."""
        if path is None:
            return cls()
        path = Path(path)
        data = read_json_object(path, CalibrationError, "calibration file")
        unknown = sorted(set(data) - set(_TOP_KEYS))
        if unknown:
            raise CalibrationError(
                f"{path}: unknown calibration keys {unknown}; known: {_TOP_KEYS}"
            )
        twin = data.get("twin", {})
        # Checked section by section so the message names the file.
        parse_sections(TwinParams(), twin, str(path), CalibrationError)
        sigma = data.get("uncertainty", {})
        if not isinstance(sigma, dict) or not all(isinstance(v, dict) for v in sigma.values()):
            raise CalibrationError(f"{path}: uncertainty must be a table of sections")
        try:
            return cls(flatten(twin), flatten(sigma), dict(data.get("source", {})))
        except CalibrationError as error:
            raise CalibrationError(f"{path}: {error}") from None


def load_twin(path: str | Path) -> TwinParams:
    """An arm's twin from a file: a calibration (``.json``) or a TwinParams TOML."""
    path = Path(path)
    if path.suffix == ".json":
        return Calibration.load(path).twin()
    return TwinParams.from_toml(path)
