"""A differentiable point-mass simulator and the policies the tutorial compares.

A point mass of unknown mass starts at rest at x=0 and must stop at x=1. Each step::

    v += DT * (force - FRICTION * v) / mass
    x += DT * v

Training is plain gradient descent through this simulator (torch autograd), so
the only thing that differs between the policies is what they see and what
masses they trained on -- exactly the lesson the tutorial is about.

Every function here is batched over *seeds*: a leading axis ``S`` holds one
independent policy per seed, trained together as one problem. Because Adam is
elementwise and the seeds' losses are summed, this gives the same result as
training them one by one, about 8x faster.

The constants STEPS, DT and FRICTION are not published with the tutorial. A
grid search over them (and over the Adam learning rates, which are not
published either) found that STEPS=40, DT=0.05, FRICTION=0.2 with lr 0.03 for
the open-loop force sequence and lr 0.01 for the MLPs reproduce the published
policy table to within 0.001 in every cell; ``docs/tutorial.md`` lists the
measured deviations of all three tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from realgap.errors import ConfigError

STEPS = 40
"""Control steps per rollout (found by grid search, see module docstring)."""
DT = 0.05
"""Integration step in seconds (found by grid search)."""
FRICTION = 0.2
"""Viscous friction coefficient (found by grid search)."""
TEST_MASSES = (0.5, 1.0, 2.0, 3.0)
"""Masses every policy is tested on; the metric is |x_final - 1|."""
HIDDEN = 32
"""Hidden width of every MLP in the tutorial."""
TRAIN_STEPS = 600
"""Adam steps per policy."""
BATCH = 64
"""Masses per training batch."""
LR_OPEN_LOOP = 0.03
"""Adam learning rate of the open-loop force sequence (found by grid search)."""
LR_MLP = 0.01
"""Adam learning rate of the MLP policies and the mass estimator (found by grid search)."""
ESTIMATOR_TRAIN_STEPS = 1500
"""Adam steps for the mass estimator: 600 leaves it underfit (6-step estimates off by
up to 0.26 even on true-mass rollouts); 1500 reproduces the published adaptation row."""


@dataclass(frozen=True)
class MassRange:
    """Training masses drawn uniformly from [low, high]; low == high means nominal."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not (0 < self.low <= self.high):
            raise ConfigError(f"mass range needs 0 < low <= high, got {self.low}-{self.high}")

    @property
    def nominal(self) -> bool:
        return self.low == self.high

    @property
    def label(self) -> str:
        return "nominal" if self.nominal else f"{self.low:g}-{self.high:g}"

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        if self.nominal:
            return torch.full((n,), self.low)
        return torch.rand(n, generator=generator) * (self.high - self.low) + self.low


NOMINAL = MassRange(1.0, 1.0)
DEFAULT_RANDOMIZED = MassRange(0.5, 3.0)


class BatchedMLP(nn.Module):
    """S independent ``in -> 32 tanh -> 1`` MLPs evaluated in one batched matmul.

    Each seed's weights are initialised exactly as ``nn.Linear`` would be after
    ``torch.manual_seed(seed)``, so seed ``s`` here equals an unbatched run
    with that seed.
    """

    def __init__(self, seeds: list[int], n_in: int, hidden: int = HIDDEN):
        super().__init__()
        w1, b1, w2, b2 = [], [], [], []
        for seed in seeds:
            torch.manual_seed(seed)
            first, second = nn.Linear(n_in, hidden), nn.Linear(hidden, 1)
            w1.append(first.weight.T)
            b1.append(first.bias)
            w2.append(second.weight.T)
            b2.append(second.bias)
        self.w1 = nn.Parameter(torch.stack(w1).detach().clone())  # (S, in, H)
        self.b1 = nn.Parameter(torch.stack(b1).detach().clone()[:, None, :])  # (S, 1, H)
        self.w2 = nn.Parameter(torch.stack(w2).detach().clone())  # (S, H, 1)
        self.b2 = nn.Parameter(torch.stack(b2).detach().clone()[:, None, :])  # (S, 1, 1)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """``inputs`` (S, B, in) -> (S, B)."""
        hidden = torch.tanh(torch.baddbmm(self.b1, inputs, self.w1))
        return torch.baddbmm(self.b2, hidden, self.w2).squeeze(-1)


class OpenLoopPolicy(nn.Module):
    """A learnable force per time step, blind to state and mass (zero-initialised)."""

    kind = "open_loop"
    lr = LR_OPEN_LOOP

    def __init__(self, seeds: list[int]):
        super().__init__()
        self.forces = nn.Parameter(torch.zeros(len(seeds), STEPS))

    def forward(self, step: int, x: torch.Tensor, v: torch.Tensor, mass_seen: torch.Tensor):
        return self.forces[:, step : step + 1].expand_as(x)


class FeedbackPolicy(nn.Module):
    """MLP on (x, v); with ``sees_mass`` also on the mass it is told."""

    lr = LR_MLP

    def __init__(self, seeds: list[int], sees_mass: bool = False):
        super().__init__()
        self.sees_mass = sees_mass
        self.kind = "feedback_sees_mass" if sees_mass else "feedback"
        self.net = BatchedMLP(seeds, 3 if sees_mass else 2)

    def forward(self, step: int, x: torch.Tensor, v: torch.Tensor, mass_seen: torch.Tensor):
        features = [x, v, mass_seen] if self.sees_mass else [x, v]
        return self.net(torch.stack(features, dim=-1))


@dataclass
class Rollout:
    """Trajectories of shape (S, B, STEPS) plus the summed cost (S, B)."""

    x: torch.Tensor
    v: torch.Tensor
    force: torch.Tensor
    cost: torch.Tensor

    @property
    def final_error(self) -> torch.Tensor:
        return (self.x[..., -1] - 1.0).abs()


def rollout(policy: nn.Module, mass: torch.Tensor, mass_seen=None) -> Rollout:
    """Simulate ``policy`` on true masses ``mass`` (S, B).

    ``mass_seen`` is what a mass-aware policy is told: the true mass by
    default, or a callable ``(step, v_hist, f_hist) -> (S, B)`` for adaptation.
    """
    x = torch.zeros_like(mass)
    v = torch.zeros_like(mass)
    cost = torch.zeros_like(mass)
    xs, vs, fs = [], [v], []
    for step in range(STEPS):
        seen = mass if mass_seen is None else mass_seen(step, vs, fs)
        force = policy(step, x, v, seen)
        v = v + DT * (force - FRICTION * v) / mass
        x = x + DT * v
        cost = cost + (x - 1.0) ** 2 + 0.01 * force**2
        xs.append(x)
        vs.append(v)
        fs.append(force)
    cost = cost + 20.0 * (x - 1.0) ** 2 + 5.0 * v**2
    return Rollout(torch.stack(xs, -1), torch.stack(vs[1:], -1), torch.stack(fs, -1), cost)


def train(policy: nn.Module, seeds: list[int], ranges: list[MassRange], steps: int = TRAIN_STEPS):
    """Train the S seeds of ``policy`` together; row ``s`` draws masses from ``ranges[s]``.

    Each seed's mass stream is seeded afresh with its own seed *after* the
    policy is built, as in the published reproduction.
    """
    if len(ranges) != len(seeds):
        raise ConfigError("need one mass range per seed")
    generators = [torch.Generator().manual_seed(seed) for seed in seeds]
    optimizer = torch.optim.Adam(policy.parameters(), lr=policy.lr)
    for _ in range(steps):
        mass = torch.stack([r.sample(BATCH, g) for r, g in zip(ranges, generators)])
        loss = rollout(policy, mass).cost.mean(dim=1).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return policy


def evaluate_errors(policy: nn.Module, n_seeds: int, mass_seen=None) -> torch.Tensor:
    """|x_final - 1| on TEST_MASSES, shape (S, 4)."""
    mass = torch.tensor(TEST_MASSES).expand(n_seeds, -1).contiguous()
    with torch.no_grad():
        return rollout(policy, mass, mass_seen).final_error
