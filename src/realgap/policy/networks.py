"""Networks: a state-based teacher and the visual student that runs on the arm."""

from __future__ import annotations

import numpy as np
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
    """Two convolutions on a small wrist image, then a linear projection.

    ``normalize``: each image is first standardized by its own statistics (every
    channel's mean removed, divided by the image's spread), so the desk, which fills
    most of a wrist view, reads about the same whether it is black cloth or white
    paper: what is left is the cube and the jaws against it."""

    def __init__(self, image_size: int = 16, features: int = 48, normalize: bool = False):
        super().__init__()
        self.features, self.normalize = features, normalize
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
        if self.normalize:
            x = x - x.mean(dim=(2, 3), keepdim=True)
            # The floor keeps a plain image (a flat desk, nothing in view) from being
            # blown up into its sensor noise.
            x = x / (x.std(dim=(1, 2, 3), keepdim=True) + IMAGE_SPREAD_FLOOR)
        return self.project(self.convs(x))


IMAGE_SPREAD_FLOOR = 0.02
"""Added to an image's standard deviation (of full scale) before dividing by it."""


class VisualPolicy(nn.Module):
    """Wrist image (uint8 NHWC) + 12 joint numbers -> 6 actions in [-1, 1].

    This is the network that ships: ~300k parameters, well under a millisecond
    per decision on a laptop CPU (``realgap bench policy``).
    """

    def __init__(
        self,
        image_size: int = 16,
        state_dim: int = 12,
        hidden: int = 256,
        normalize_images: bool = False,
    ):
        super().__init__()
        self.image_size = image_size
        self.state_norm = RunningNorm(state_dim)
        self.encoder = ImageEncoder(image_size, normalize=normalize_images)
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


class SquintEncoder(nn.Module):
    """The reference recipe's 16x16 encoder: 4x4 stride-2 then 4x4 stride-1
    convolutions, 1,024 features, no projection (each user projects its own).
    A student update of the whole network took 1.8x less time than with
    :class:`ImageEncoder` (batch 256, one CPU thread)."""

    def __init__(self, image_size: int = 16):
        super().__init__()
        if image_size != 16:
            raise ValueError(f"the squint encoder takes 16x16 images, not {image_size}")
        self.convs = nn.Sequential(
            nn.Conv2d(3, 32, 4, stride=2), nn.ReLU(), nn.Conv2d(32, 64, 4), nn.ReLU(), nn.Flatten()
        )
        self.features = 64 * 4 * 4

    def forward(self, image_uint8_nhwc: torch.Tensor) -> torch.Tensor:
        x = image_uint8_nhwc.permute(0, 3, 1, 2).float() / 255.0 - 0.5
        return self.convs(x)


class SquintProjection(nn.Module):
    """The reference's input projection: image features -> 50 (layer norm, tanh)
    beside state -> 256 (layer norm, ReLU). Actor and critic each own one."""

    def __init__(self, image_features: int, state_dim: int = 12):
        super().__init__()
        self.features = 50 + 256
        self.image = nn.Sequential(nn.Linear(image_features, 50), nn.LayerNorm(50), nn.Tanh())
        self.state = nn.Sequential(nn.Linear(state_dim, 256), nn.LayerNorm(256), nn.ReLU())

    def forward(self, image_features: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.image(image_features), self.state(state)], dim=-1)


def layer_normed_trunk(width_in: int, hidden: int, layers: int) -> nn.Sequential:
    """``layers`` x (linear, layer norm, ReLU), as the reference's actor and critic."""
    trunk = mlp([width_in] + [hidden] * layers, nn.ReLU, layer_norm=True)
    trunk.append(nn.LayerNorm(hidden))
    trunk.append(nn.ReLU())
    return trunk


class SquintHead(nn.Module):
    """The reference's actor body: its own projection, three 256-wide layer-normed
    ReLU layers, and the action mean."""

    def __init__(self, image_features: int, state_dim: int = 12, hidden: int = 256):
        super().__init__()
        self.projection = SquintProjection(image_features, state_dim)
        self.trunk = layer_normed_trunk(self.projection.features, hidden, 3)
        self.mean = nn.Linear(hidden, 6)

    def hidden(self, image_features: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return self.trunk(self.projection(image_features, state))

    def forward(self, image_features: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return self.mean(self.hidden(image_features, state))


class SquintPolicy(nn.Module):
    """The reference recipe's deployed network (what visual SAC trains): same
    inputs and outputs as :class:`VisualPolicy`, ~300k parameters."""

    def __init__(self, image_size: int = 16, state_dim: int = 12):
        super().__init__()
        self.image_size = image_size
        self.state_norm = RunningNorm(state_dim)
        self.encoder = SquintEncoder(image_size)
        self.head = SquintHead(self.encoder.features, state_dim)

    def forward(self, image: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.head(self.encoder(image), self.state_norm(state)))


class RecurrentVisualPolicy(nn.Module):
    """:class:`VisualPolicy` with a memory: a GRU cell carries what the wrist camera
    saw earlier in the episode. Stacking needs it: while the held cube is carried,
    the lower object is mostly out of view, but it was seen on the way there.

    ``forward(image, state, memory) -> (action, memory)``; a fresh episode starts
    from :meth:`initial_memory` (zeros). :meth:`unroll` runs whole sequences for
    training, zeroing the memory where an episode begins.
    """

    def __init__(
        self, image_size: int = 16, state_dim: int = 12, hidden: int = 256, memory_size: int = 64
    ):
        super().__init__()
        self.image_size, self.memory_size = image_size, memory_size
        self.state_norm = RunningNorm(state_dim)
        self.encoder = ImageEncoder(image_size)
        width = self.encoder.features + state_dim
        self.memory = nn.GRUCell(width, memory_size)
        self.head = mlp([width + memory_size, hidden, hidden, 6], activation=nn.ReLU)

    def initial_memory(self, batch: int) -> torch.Tensor:
        return torch.zeros(batch, self.memory_size)

    def _features(self, image: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.encoder(image), self.state_norm(state)], dim=-1)

    def forward(
        self, image: torch.Tensor, state: torch.Tensor, memory: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        features = self._features(image, state)
        memory = self.memory(features, memory)
        return torch.tanh(self.head(torch.cat([features, memory], dim=-1))), memory

    def unroll(
        self,
        images: torch.Tensor,
        states: torch.Tensor,
        firsts: torch.Tensor,
        initial: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Actions for (T, B) sequences of observations; ``firsts`` (T, B) marks the
        steps where an episode begins (memory zeroed before them); ``initial`` (B,
        memory) is the memory before the first step (zeros by default)."""
        steps, batch = firsts.shape
        features = self._features(images.flatten(0, 1), states.flatten(0, 1))
        features = features.view(steps, batch, -1)
        memory = self.initial_memory(batch) if initial is None else initial
        memories = []
        for t in range(steps):
            memory = self.memory(features[t], memory * (~firsts[t]).float().unsqueeze(-1))
            memories.append(memory)
        joined = torch.cat([features, torch.stack(memories)], dim=-1)
        return torch.tanh(self.head(joined))


def is_recurrent(policy: nn.Module) -> bool:
    """Whether a visual network carries memory between decisions."""
    return isinstance(policy, RecurrentVisualPolicy)


class MemoryRunner:
    """Stateful numpy executor of a :class:`RecurrentVisualPolicy`:
    ``runner(image, state) -> action`` for one observation or a batch of envs stepping
    in lock-step; ``reset()`` at every episode start, ``reset(mask)`` for the envs of a
    batch whose episode just began."""

    def __init__(self, network: RecurrentVisualPolicy):
        self.network = network
        self.memory: torch.Tensor | None = None

    def reset(self, which=None) -> None:
        if which is None or self.memory is None:
            self.memory = None
        else:
            self.memory[torch.as_tensor(which, dtype=torch.bool)] = 0.0

    def __call__(self, image, state):
        image, state = np.asarray(image, dtype=np.uint8), np.asarray(state, dtype=np.float32)
        if image.ndim == 3:
            return self(image[None], state[None])[0]
        if self.memory is None or len(self.memory) != len(image):
            self.memory = self.network.initial_memory(len(image))
        with torch.no_grad():
            action, self.memory = self.network(
                torch.from_numpy(image), torch.from_numpy(state), self.memory
            )
        return action.numpy()


class DeskInvariantPolicy(VisualPolicy):
    """:class:`VisualPolicy` whose images are standardized one by one
    (``ImageEncoder(normalize=True)``), for policies trained on desks from black to
    white (``--architecture desk_invariant``; PickCube's and PlaceCube's default). Same
    weights' shapes, so the parameter count is unchanged."""

    def __init__(self, image_size: int = 16, state_dim: int = 12, hidden: int = 256):
        super().__init__(image_size, state_dim, hidden, normalize_images=True)


ARCHITECTURES: dict[str, type[nn.Module]] = {
    "student": VisualPolicy,
    "desk_invariant": DeskInvariantPolicy,
    "squint": SquintPolicy,
    "recurrent": RecurrentVisualPolicy,
}
"""The visual networks a policy folder may hold, by the name its contract records."""


def build_policy(architecture: str, image_size: int) -> nn.Module:
    """A fresh visual policy network of a named architecture."""
    if architecture not in ARCHITECTURES:
        raise ValueError(
            f"unknown policy architecture {architecture!r} (known: {sorted(ARCHITECTURES)})"
        )
    return ARCHITECTURES[architecture](image_size=image_size)


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
