"""RMA-style adaptation for the point mass: a teacher that sees the true mass,
plus an estimator that infers the mass from recent history.

The estimator is an MLP ``3 -> 32 tanh -> 1`` on one transition
``(v_t, v_t+1, force_t)``. It is trained by regression on rollouts of the
teacher that is given the *true* mass. At test time the teacher is told the
running mean of the estimates so far (1.0, the nominal mass, before any
history exists).

The known limit (reported, not hidden): for heavy masses the adapted rollout
starts with the teacher told 1.0, so it pushes too weakly and produces
transitions the estimator never saw in training; its estimate for mass 2.5
then lags. On rollouts where the teacher gets the true mass the estimates are
accurate within a few steps. ``estimate_errors`` measures both.
"""

from __future__ import annotations

import torch

from realgap.toy.pointmass import (
    BATCH,
    ESTIMATOR_TRAIN_STEPS,
    LR_MLP,
    BatchedMLP,
    FeedbackPolicy,
    MassRange,
    rollout,
)

NOMINAL_GUESS = 1.0
"""What the teacher is told before any transition has been seen."""


def transitions(v: torch.Tensor, force: torch.Tensor) -> torch.Tensor:
    """Stack (v_t, v_t+1, force_t) for every step: (S, B, STEPS, 3).

    ``v`` holds velocities *after* each step, so v_0 = 0 is prepended.
    """
    v_before = torch.cat([torch.zeros_like(v[..., :1]), v[..., :-1]], dim=-1)
    return torch.stack([v_before, v, force], dim=-1)


def train_estimator(
    teacher: FeedbackPolicy,
    seeds: list[int],
    mass_range: MassRange,
    steps: int = ESTIMATOR_TRAIN_STEPS,
) -> BatchedMLP:
    """Regress the true mass from single transitions of teacher rollouts."""
    estimator = BatchedMLP(seeds, 3)
    generators = [torch.Generator().manual_seed(seed) for seed in seeds]
    optimizer = torch.optim.Adam(estimator.parameters(), lr=LR_MLP)
    for _ in range(steps):
        mass = torch.stack([mass_range.sample(BATCH, g) for g in generators])
        with torch.no_grad():
            traj = rollout(teacher, mass)
        inputs = transitions(traj.v, traj.force).flatten(1, 2)  # (S, B*STEPS, 3)
        labels = mass[:, :, None].expand(-1, -1, traj.v.shape[-1]).flatten(1)
        loss = ((estimator(inputs) - labels) ** 2).mean(dim=1).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return estimator


class RunningMeanEstimate:
    """``mass_seen`` callable for :func:`rollout`: mean of per-transition estimates.

    Records the estimate it handed out at every step in ``history`` (S, B, STEPS).
    """

    def __init__(self, estimator: BatchedMLP):
        self.estimator = estimator
        self.history: list[torch.Tensor] = []
        self._sum: torch.Tensor | None = None

    def __call__(self, step: int, v_hist: list[torch.Tensor], f_hist: list[torch.Tensor]):
        if step == 0:
            guess = torch.full_like(v_hist[0], NOMINAL_GUESS)
            self._sum = torch.zeros_like(guess)
        else:
            features = torch.stack([v_hist[-2], v_hist[-1], f_hist[-1]], dim=-1)
            self._sum = self._sum + self.estimator(features)
            guess = self._sum / step
        self.history.append(guess)
        return guess


def estimate_errors(
    teacher: FeedbackPolicy,
    estimator: BatchedMLP,
    masses: tuple[float, ...],
    history_steps: int,
) -> dict[str, torch.Tensor]:
    """|running-mean estimate - true mass| after ``history_steps`` transitions, (S, M).

    ``adapted``: the teacher acts on the estimates (deployment).
    ``true_mass``: the teacher acts on the true mass; the estimator only listens.
    """
    n_seeds = estimator.w1.shape[0]
    mass = torch.tensor(masses).expand(n_seeds, -1).contiguous()
    with torch.no_grad():
        adapted = RunningMeanEstimate(estimator)
        rollout(teacher, mass, adapted)
        adapted_est = adapted.history[history_steps]

        traj = rollout(teacher, mass)
        per_step = estimator(transitions(traj.v, traj.force)[:, :, :history_steps].flatten(1, 2))
        listened_est = per_step.view(n_seeds, len(masses), history_steps).mean(-1)
    return {
        "adapted": (adapted_est - mass).abs(),
        "true_mass": (listened_est - mass).abs(),
    }
