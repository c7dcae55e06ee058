"""Networks: a state-based teacher and the visual student that runs on the arm."""

from __future__ import annotations

import torch
from torch import nn


class RunningNorm(nn.Module):
    """Running mean/std normalizer whose statistics are saved with the weights."""

    def __init__(self, dim: int, clip: float = 10.0):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.tensor(1e-4))
        self.clip = clip

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        mean, var, n = batch.mean(0), batch.var(0, unbiased=False), batch.shape[0]
        delta, total = mean - self.mean, self.count + n
        self.mean += delta * n / total
        self.var = (self.var * self.count + var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / torch.sqrt(self.var + 1e-8)).clamp(-self.clip, self.clip)


def mlp(sizes: list[int], activation=nn.Tanh, layer_norm: bool = False) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            if layer_norm:
                layers.append(nn.LayerNorm(sizes[i + 1]))
            layers.append(activation())
    return nn.Sequential(*layers)


class ImageEncoder(nn.Module):
    """Two convolutions on a small wrist image, then a linear projection."""

    def __init__(self, image_size: int = 16, features: int = 48):
        super().__init__()
        self.features = features
        self.convs = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1),
            nn.ReLU(),
        )
        side = (image_size + 1) // 2
        self.project = nn.Sequential(
            nn.Flatten(), nn.Linear(64 * side * side, features), nn.LayerNorm(features), nn.Tanh()
        )

    def forward(self, image_uint8_nhwc: torch.Tensor) -> torch.Tensor:
        x = image_uint8_nhwc.permute(0, 3, 1, 2).float() / 255.0
        return self.project(self.convs(x))


class VisualPolicy(nn.Module):
    """Wrist image (uint8 NHWC) + 12 joint numbers -> 6 actions in [-1, 1].

    This is the network that ships: ~300k parameters, well under a millisecond
    per decision on a laptop CPU (``realgap bench policy``).
    """

    def __init__(self, image_size: int = 16, state_dim: int = 12, hidden: int = 256):
        super().__init__()
        self.image_size = image_size
        self.state_norm = RunningNorm(state_dim)
        self.encoder = ImageEncoder(image_size)
        self.head = mlp([self.encoder.features + state_dim, hidden, hidden, 6], activation=nn.ReLU)

    def forward(self, image: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        features = torch.cat([self.encoder(image), self.state_norm(state)], dim=-1)
        return torch.tanh(self.head(features))


class StateTeacher(nn.Module):
    """Gaussian actor-critic on joint numbers + privileged state (PPO)."""

    def __init__(self, obs_dim: int, hidden: int = 256):
        super().__init__()
        self.norm = RunningNorm(obs_dim)
        self.actor = mlp([obs_dim, hidden, hidden, 6])
        self.critic = mlp([obs_dim, hidden, hidden, 1])
        self.log_std = nn.Parameter(torch.full((6,), -0.5))
        with torch.no_grad():
            self.actor[-1].weight.mul_(0.01)

    def distribution(self, obs: torch.Tensor) -> torch.distributions.Normal:
        mean = self.actor(self.norm(obs))
        return torch.distributions.Normal(mean, self.log_std.exp().expand_as(mean))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(self.norm(obs)).squeeze(-1)

    def act_deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self.norm(obs)).clamp(-1, 1)


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
