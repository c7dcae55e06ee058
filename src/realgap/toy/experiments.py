"""The tutorial's three experiments, as one batched run.

1. ``policies``: open loop vs feedback, nominal vs randomized training, and a
   feedback policy that sees the mass.
2. ``width``: how the width of the training-mass range trades light-mass
   accuracy for heavy-mass robustness (blind feedback).
3. ``adaptation``: an RMA-style teacher + mass estimator vs the blind policy.

Every (policy kind, mass range, seed) cell is trained once: the rows of all
tables that share a kind are stacked into one batched problem, and rows that
two tables share (for example blind feedback on 0.5-3.0, seeds 0-2) are reused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from realgap.errors import ConfigError
from realgap.toy import adaptation
from realgap.toy.pointmass import (
    DEFAULT_RANDOMIZED,
    DT,
    ESTIMATOR_TRAIN_STEPS,
    FRICTION,
    LR_MLP,
    LR_OPEN_LOOP,
    NOMINAL,
    STEPS,
    TEST_MASSES,
    TRAIN_STEPS,
    FeedbackPolicy,
    MassRange,
    OpenLoopPolicy,
    evaluate_errors,
    train,
)

WIDTH_RANGES = {
    "nominal": NOMINAL,
    "0.8-1.25": MassRange(0.8, 1.25),
    "0.5-2.0": MassRange(0.5, 2.0),
    "0.5-3.0": MassRange(0.5, 3.0),
    "0.3-5.0": MassRange(0.3, 5.0),
}
"""Rows of the width table: training-mass ranges for blind feedback."""

# Row id -> (policy kind, training range) for the first table.
POLICY_ROWS = {
    "open_loop_nominal": ("open_loop", NOMINAL),
    "open_loop_randomized": ("open_loop", DEFAULT_RANDOMIZED),
    "feedback_nominal": ("feedback", NOMINAL),
    "feedback_randomized": ("feedback", DEFAULT_RANDOMIZED),
    "feedback_randomized_sees_mass": ("feedback_sees_mass", DEFAULT_RANDOMIZED),
}
ESTIMATE_MASSES = (0.7, 1.5, 2.5)
"""Masses whose running-mean estimate is checked after ESTIMATE_HISTORY steps."""
ESTIMATE_HISTORY = 6


@dataclass(frozen=True)
class ToyConfig:
    """What to run; the defaults reproduce the published tables."""

    seeds_policies: int = 5
    """Seeds for the policy table (seeds 0..N-1)."""
    seeds_other: int = 3
    """Seeds for the width and adaptation tables."""
    train_steps: int = TRAIN_STEPS
    """Adam steps per policy (600 published; fewer for fast tests)."""
    estimator_steps: int = ESTIMATOR_TRAIN_STEPS
    """Adam steps for the mass estimator."""

    def __post_init__(self) -> None:
        if self.seeds_policies < 1 or self.seeds_other < 1:
            raise ConfigError("need at least one seed per table")
        if self.train_steps < 1 or self.estimator_steps < 1:
            raise ConfigError("train_steps must be positive")


def _build(kind: str, seeds: list[int]):
    if kind == "open_loop":
        return OpenLoopPolicy(seeds)
    return FeedbackPolicy(seeds, sees_mass=kind == "feedback_sees_mass")


@dataclass
class _TrainedKind:
    """All trained rows of one policy kind, with a lookup (range, seed) -> row."""

    policy: torch.nn.Module
    rows: dict[tuple[MassRange, int], int] = field(default_factory=dict)
    errors: torch.Tensor | None = None

    def select(self, mass_range: MassRange, seeds: range) -> list[int]:
        return [self.rows[(mass_range, s)] for s in seeds]


def _summary(errors: torch.Tensor) -> dict[str, list[float]]:
    # Sample std (ddof=1) as published; a single seed has no spread.
    std = errors.std(dim=0, correction=1) if errors.shape[0] > 1 else torch.zeros(errors.shape[1])
    return {"mean": errors.mean(dim=0).tolist(), "std": std.tolist()}


def run(config: ToyConfig = ToyConfig(), progress: Callable[[str], None] | None = None) -> dict:
    """Run the three experiments and return the JSON-ready result."""
    started = time.perf_counter()
    report = progress or (lambda message: None)
    seeds_main, seeds_other = range(config.seeds_policies), range(config.seeds_other)

    needed: dict[str, set[tuple[MassRange, int]]] = {}
    for kind, mass_range in POLICY_ROWS.values():
        needed.setdefault(kind, set()).update((mass_range, s) for s in seeds_main)
    needed["feedback"].update((r, s) for r in WIDTH_RANGES.values() for s in seeds_other)
    needed["feedback"].update((DEFAULT_RANDOMIZED, s) for s in seeds_other)
    needed["feedback_sees_mass"].update((DEFAULT_RANDOMIZED, s) for s in seeds_other)

    trained: dict[str, _TrainedKind] = {}
    for kind, cells in needed.items():
        cells_sorted = sorted(cells, key=lambda c: (c[0].low, c[0].high, c[1]))
        seeds = [seed for _, seed in cells_sorted]
        report(f"training {kind}: {len(cells_sorted)} policies as one batch")
        policy = train(_build(kind, seeds), seeds, [r for r, _ in cells_sorted], config.train_steps)
        entry = _TrainedKind(policy, {cell: i for i, cell in enumerate(cells_sorted)})
        entry.errors = evaluate_errors(policy, len(seeds))
        trained[kind] = entry

    def cell_errors(kind: str, mass_range: MassRange, seeds: range) -> torch.Tensor:
        entry = trained[kind]
        return entry.errors[entry.select(mass_range, seeds)]

    policies = {
        row: _summary(cell_errors(kind, mass_range, seeds_main))
        for row, (kind, mass_range) in POLICY_ROWS.items()
    }
    width = {
        row: _summary(cell_errors("feedback", mass_range, seeds_other))
        for row, mass_range in WIDTH_RANGES.items()
    }

    report("training the mass estimator on teacher rollouts")
    teacher_entry = trained["feedback_sees_mass"]
    teacher = _slice_feedback(teacher_entry, DEFAULT_RANDOMIZED, seeds_other)
    estimator = adaptation.train_estimator(
        teacher, list(seeds_other), DEFAULT_RANDOMIZED, config.estimator_steps
    )
    adapted_errors = evaluate_errors(
        teacher, len(seeds_other), adaptation.RunningMeanEstimate(estimator)
    )
    adaptation_table = {
        "teacher": _summary(cell_errors("feedback_sees_mass", DEFAULT_RANDOMIZED, seeds_other)),
        "adapted": _summary(adapted_errors),
        "blind": _summary(cell_errors("feedback", DEFAULT_RANDOMIZED, seeds_other)),
    }
    estimates = adaptation.estimate_errors(teacher, estimator, ESTIMATE_MASSES, ESTIMATE_HISTORY)

    return {
        "masses": list(TEST_MASSES),
        "tables": {"policies": policies, "width": width, "adaptation": adaptation_table},
        "mass_estimates": {
            "masses": list(ESTIMATE_MASSES),
            "history_steps": ESTIMATE_HISTORY,
            "abs_error_adapted": estimates["adapted"].tolist(),
            "abs_error_true_mass": estimates["true_mass"].tolist(),
        },
        "constants": {
            "STEPS": STEPS,
            "DT": DT,
            "FRICTION": FRICTION,
            "train_steps": config.train_steps,
            "estimator_steps": config.estimator_steps,
            "batch": 64,
            "lr_open_loop": LR_OPEN_LOOP,
            "lr_mlp": LR_MLP,
            "randomized_range": [DEFAULT_RANDOMIZED.low, DEFAULT_RANDOMIZED.high],
            "seeds_policies": config.seeds_policies,
            "seeds_other": config.seeds_other,
        },
        "seconds": round(time.perf_counter() - started, 2),
    }


def _slice_feedback(entry: _TrainedKind, mass_range: MassRange, seeds: range) -> FeedbackPolicy:
    """A FeedbackPolicy holding only the chosen rows of a trained batch."""
    rows = entry.select(mass_range, seeds)
    source: FeedbackPolicy = entry.policy
    sliced = FeedbackPolicy(list(seeds), sees_mass=source.sees_mass)
    with torch.no_grad():
        for name, param in sliced.net.named_parameters():
            param.copy_(getattr(source.net, name)[rows])
    sliced.requires_grad_(False)
    return sliced
