"""The visual SAC agent of the reference recipe: networks, replay and one update.

Follows the reference's released ``train_squint.py`` where it matters to learning:

- one image encoder, trained by the critic loss only, run twice per update (next
  observation without gradients, observation with);
- a critic of two C51 heads (3 x 512, layer norm) over its own projection of the
  encoder features; the target critic is a Polyak copy of it, *buffers included*
  (its state normalizer must follow the online one's statistics);
- each head regresses onto its own target head's projected distribution;
- the actor (3 x 256, layer norm, its own projection) maximizes the *mean* of the
  two heads' expected values, every ``policy_frequency`` critic updates;
- the entropy temperature steps after *every* critic update.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from realgap.policy.networks import (
    RunningNorm,
    SquintEncoder,
    SquintHead,
    SquintPolicy,
    SquintProjection,
    layer_normed_trunk,
)

ACTION_DIM = 6
STATE_DIM = 12


@dataclass(frozen=True)
class SacHyper:
    """What one update needs from the recipe's ``Args``."""

    gamma: float = 0.9
    tau: float = 0.01
    lr: float = 3e-4
    policy_frequency: int = 4
    atoms: int = 101
    v_min: float = -20.0
    v_max: float = 20.0
    alpha_init: float = 1.0
    target_entropy: float = -float(ACTION_DIM)


class Critic(nn.Module):
    """State normalizer, the critic's own projection and two C51 heads."""

    def __init__(self, image_features: int, atoms: int, hidden: int = 512):
        super().__init__()
        self.state_norm = RunningNorm(STATE_DIM)
        self.projection = SquintProjection(image_features, STATE_DIM)
        width = self.projection.features + ACTION_DIM
        self.heads = nn.ModuleList(
            nn.Sequential(layer_normed_trunk(width, hidden, 3), nn.Linear(hidden, atoms))
            for _ in range(2)
        )

    def forward(self, image_features, state, action) -> torch.Tensor:
        """Logits over the support, ``[2, batch, atoms]``."""
        x = torch.cat([self.projection(image_features, self.state_norm(state)), action], -1)
        return torch.stack([head(x) for head in self.heads])


class Actor(nn.Module):
    """Tanh-Gaussian over (detached) encoder features and normalized joint numbers;
    its mean is the shipped :class:`SquintPolicy`'s head."""

    LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0

    def __init__(self, image_features: int):
        super().__init__()
        self.head = SquintHead(image_features, STATE_DIM)
        self.log_std = nn.Linear(self.head.mean.in_features, ACTION_DIM)

    def sample(self, image_features, normalized_state) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.head.hidden(image_features, normalized_state)
        mean = self.head.mean(hidden)
        # The reference squashes log-std smoothly into its range instead of clamping.
        squashed = torch.tanh(self.log_std(hidden))
        log_std = self.LOG_STD_MIN + 0.5 * (self.LOG_STD_MAX - self.LOG_STD_MIN) * (squashed + 1)
        normal = torch.distributions.Normal(mean, log_std.exp())
        raw = normal.rsample()
        action = torch.tanh(raw)
        logp = (normal.log_prob(raw) - torch.log(1 - action**2 + 1e-6)).sum(-1)
        return action, logp


class Replay:
    """Uniform replay over uint8 images and float joint numbers."""

    def __init__(self, capacity: int, image_size: int):
        self.capacity, self.size, self.index = capacity, 0, 0
        shape = (capacity, image_size, image_size, 3)
        self.image, self.next_image = np.zeros(shape, np.uint8), np.zeros(shape, np.uint8)
        self.state = np.zeros((capacity, STATE_DIM), np.float32)
        self.next_state = np.zeros((capacity, STATE_DIM), np.float32)
        self.action = np.zeros((capacity, ACTION_DIM), np.float32)
        self.reward = np.zeros(capacity, np.float32)
        self.done = np.zeros(capacity, np.float32)

    def add(self, obs, action, reward, next_obs, done):
        n = len(reward)
        idx = (self.index + np.arange(n)) % self.capacity
        self.image[idx], self.state[idx] = obs["image"], obs["state"]
        self.next_image[idx], self.next_state[idx] = next_obs["image"], next_obs["state"]
        self.action[idx], self.reward[idx], self.done[idx] = action, reward, done
        self.index = (self.index + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, batch: int, rng: np.random.Generator, device: torch.device):
        """image, state, action, reward, next_image, next_state, done as tensors."""
        idx = rng.integers(0, self.size, batch)
        arrays = (
            self.image,
            self.state,
            self.action,
            self.reward,
            self.next_image,
            self.next_state,
            self.done,
        )
        return [torch.from_numpy(a[idx]).to(device) for a in arrays]


def project(next_probs, reward, done, gamma, support):
    """C51 projection of r + gamma * z onto the fixed support, for ``[batch, atoms]``
    probabilities (or ``[heads, batch, atoms]`` with one reward per batch row)."""
    if next_probs.dim() == 3:
        heads = next_probs.shape[0]
        flat = project(
            next_probs.flatten(0, 1), reward.repeat(heads), done.repeat(heads), gamma, support
        )
        return flat.view_as(next_probs)
    v_min, v_max = support[0], support[-1]
    delta = support[1] - support[0]
    target = (reward[:, None] + gamma * (1 - done[:, None]) * support[None]).clamp(v_min, v_max)
    position = ((target - v_min) / delta).clamp(0, len(support) - 1)
    lower, upper = position.floor().long(), position.ceil().long()
    lower[(upper > 0) & (lower == upper)] -= 1
    upper[(lower < len(support) - 1) & (lower == upper)] += 1
    projected = torch.zeros_like(next_probs)
    projected.scatter_add_(1, lower, next_probs * (upper.float() - position))
    projected.scatter_add_(1, upper, next_probs * (position - lower.float()))
    return projected


@torch.no_grad()
def soft_update(target: nn.Module, online: nn.Module, tau: float) -> None:
    """Polyak-average parameters; copy buffers (running statistics are not learned
    weights: a target that keeps its own would read inputs on another scale)."""
    for theirs, mine in zip(target.parameters(), online.parameters()):
        theirs.lerp_(mine, tau)
    for theirs, mine in zip(target.buffers(), online.buffers()):
        theirs.copy_(mine)


class SacAgent:
    """Encoder, critic, target critic, actor, temperature and their optimizers."""

    def __init__(self, image_size: int, hyper: SacHyper, device: torch.device):
        self.hyper, self.device, self.image_size = hyper, device, image_size
        self.encoder = SquintEncoder(image_size).to(device)
        features = self.encoder.features
        self.critic = Critic(features, hyper.atoms).to(device)
        self.critic_target = Critic(features, hyper.atoms).to(device)
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.critic_target.requires_grad_(False)
        self.actor = Actor(features).to(device)
        self.log_alpha = torch.tensor(
            [float(np.log(hyper.alpha_init))], requires_grad=True, device=device
        )
        # The encoder learns from the critic loss only, as in the reference.
        self.critic_opt = torch.optim.Adam(
            [*self.critic.parameters(), *self.encoder.parameters()], lr=hyper.lr
        )
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=hyper.lr)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=hyper.lr)
        self.support = torch.linspace(hyper.v_min, hyper.v_max, hyper.atoms, device=device)
        self.critic_updates = 0

    @property
    def alpha(self) -> float:
        return float(self.log_alpha.detach().exp())

    def observe(self, state: np.ndarray) -> None:
        """Fold collected joint numbers into the state normalizer."""
        self.critic.state_norm.update(torch.from_numpy(state).to(self.device))

    @torch.no_grad()
    def act(self, obs: dict) -> np.ndarray:
        """Sampled actions for the rollout envs."""
        image = torch.from_numpy(obs["image"]).to(self.device)
        state = torch.from_numpy(obs["state"]).to(self.device)
        action, _ = self.actor.sample(self.encoder(image), self.critic.state_norm(state))
        return action.cpu().numpy()

    def expected_q(self, logits: torch.Tensor) -> torch.Tensor:
        return (F.softmax(logits, -1) * self.support).sum(-1)

    def update(self, batch) -> dict:
        """One critic update (with the temperature), the actor every
        ``policy_frequency`` updates, then the target critic."""
        hyper = self.hyper
        image, state, action, reward, next_image, next_state, done = batch
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            next_features = self.encoder(next_image)
            next_action, next_logp = self.actor.sample(
                next_features, self.critic.state_norm(next_state)
            )
            next_probs = F.softmax(self.critic_target(next_features, next_state, next_action), -1)
            # Soft target r + gamma * (z - alpha * log pi): the entropy term is folded
            # into the reward before the projection; each head gets its own target.
            soft_reward = reward - hyper.gamma * (1 - done) * alpha * next_logp
            target = project(next_probs, soft_reward, done, hyper.gamma, self.support)
        features = self.encoder(image)
        logits = self.critic(features, state, action)
        critic_loss = -(target * F.log_softmax(logits, -1)).sum(-1).mean(-1).sum()
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()
        self.critic_updates += 1

        features = features.detach()
        normalized = self.critic.state_norm(state)
        with torch.no_grad():
            _, logp = self.actor.sample(features, normalized)
        alpha_loss = -(self.log_alpha.exp() * (logp + hyper.target_entropy)).mean()
        self.alpha_opt.zero_grad()
        alpha_loss.backward()
        self.alpha_opt.step()

        row = {"critic_loss": float(critic_loss.detach()), "alpha": self.alpha}
        if self.critic_updates % hyper.policy_frequency == 0:
            new_action, logp = self.actor.sample(features, normalized)
            self.critic.requires_grad_(False)  # the actor loss must not move the critic
            q = self.expected_q(self.critic(features, state, new_action)).mean(0)
            self.critic.requires_grad_(True)
            actor_loss = (alpha * logp - q).mean()
            self.actor_opt.zero_grad()
            actor_loss.backward()
            self.actor_opt.step()
            row["actor_loss"] = float(actor_loss.detach())
        soft_update(self.critic_target, self.critic, hyper.tau)
        return row

    def policy(self) -> SquintPolicy:
        """The deterministic actor (tanh of the mean) as the shipped network, on the CPU."""
        policy = SquintPolicy(image_size=self.image_size)
        policy.encoder.load_state_dict(self.encoder.state_dict())
        policy.state_norm.load_state_dict(self.critic.state_norm.state_dict())
        policy.head.load_state_dict(self.actor.head.state_dict())
        return policy.cpu().eval()
