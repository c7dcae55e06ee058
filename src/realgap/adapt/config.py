"""``realgap adapt``'s settings, one field per option of the command."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class AdaptConfig:
    policy: Path
    """The policy to adapt: a policy folder (its run's teacher.pt is reused if present)."""
    out: Path
    """Run folder: recording, calibration, train/, before/ and after/ evaluations, report."""
    world: str = "fake"
    """``fake`` (a twin with a hidden reality profile) or ``real`` (the arm)."""
    recording: Path | None = None
    """A calibration recording to use instead of recording one."""
    rig: Path | None = None
    """``rig.toml``: what images cannot tell (cube mass, size, friction), weighed and
    measured by the user; see docs/adapt.md."""
    layout: Path | None = None
    """Evaluation layout TOML (default: the shipped 13 spots)."""
    trials: int = 39
    """Episodes per evaluation (old and new policy alike)."""
    budget_s: float = 600.0
    """Wall-clock budget for retraining (10 minutes on a 2-core CPU for Reach)."""
    quick: bool = False
    """A tiny run for smoke tests: minimal training and few episodes."""
    attribute: bool = True
    """Also attribute the old policy's gap to each measured difference (in the twin)."""
    follow_placement: bool = True
    """When the placement check finds the operator's positions consistently off, build
    the arm's twin with objects where they actually land (``placement.offset_xy_m``),
    so the retrained policy works where the cubes will be. False: only report it."""
    seed: int = 0
    resume: bool = False
    """Continue an interrupted run in ``out``: finished steps are kept, a retraining
    continues from its checkpoint, evaluations from their last finished episode."""


QUICK_TRIALS = 13  # one per spot of the default layout
QUICK_BUDGET_S = 60.0
