"""A chunked-action behaviour-cloning policy: the built-in, CPU-sized stand-in for ACT.

Like ACT it predicts a *chunk* of future absolute joint targets from one
observation and executes the first ``n_action_steps`` of them before planning
again; unlike ACT it has no transformer or CVAE -- the shipped image encoder
and an MLP -- so it trains on a laptop CPU in minutes. Inputs and targets are
normalized with dataset statistics stored in the weights.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch import nn

from realgap.policy.contract import PolicyContract
from realgap.policy.networks import ImageEncoder, mlp

WEIGHTS = "policy.pt"


class ChunkPolicy(nn.Module):
    """Wrist image (uint8 NHWC) + 12 joint numbers -> (chunk, 6) joint targets (radians)."""

    def __init__(self, image_size: int = 16, chunk: int = 10, hidden: int = 256):
        super().__init__()
        self.image_size, self.chunk, self.hidden = image_size, chunk, hidden
        self.encoder = ImageEncoder(image_size)
        self.head = mlp([self.encoder.features + 12, hidden, hidden, chunk * 6], activation=nn.ReLU)
        for name, size in (("state", 12), ("action", 6)):
            self.register_buffer(f"{name}_mean", torch.zeros(size))
            self.register_buffer(f"{name}_std", torch.ones(size))

    def set_statistics(self, states: np.ndarray, chunks: np.ndarray) -> None:
        """Normalization from the training frames: states (N, 12), target chunks (N, chunk, 6)."""
        actions = chunks.reshape(-1, 6)
        with torch.no_grad():
            for name, values in (("state", states), ("action", actions)):
                getattr(self, f"{name}_mean").copy_(torch.as_tensor(values.mean(0)))
                getattr(self, f"{name}_std").copy_(torch.as_tensor(values.std(0) + 1e-3))

    def normalized(self, image: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """The chunk in normalized units (what the loss compares)."""
        features = torch.cat([self.encoder(image), (state - self.state_mean) / self.state_std], -1)
        return self.head(features).view(-1, self.chunk, 6)

    def forward(self, image: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return self.normalized(image, state) * self.action_std + self.action_mean


class ChunkRunner:
    """Stateful executor: plans a chunk, plays ``n_action_steps`` of it, plans again.
    Works on one observation or a batch (envs stepping in lock-step).

    With ``ensemble`` (ACT's temporal ensembling) it plans at *every* step and plays
    the weighted mean of what each live chunk says about the current step, weights
    ``exp(-ensemble * i)`` with i = 0 the oldest chunk: closed-loop, yet smooth.
    """

    def __init__(self, network: ChunkPolicy, n_action_steps: int, ensemble: float | None = None):
        self.network, self.n_action_steps, self.ensemble = network, n_action_steps, ensemble
        self.reset()

    def reset(self) -> None:
        self.plan, self.step = None, 0
        self.plans: list[np.ndarray] = []  # live chunks, oldest first (ensembling)

    def _predict(self, image, state) -> np.ndarray:
        with torch.no_grad():
            return self.network(torch.from_numpy(image), torch.from_numpy(state)).numpy()

    def __call__(self, image, state) -> np.ndarray:
        image, state = np.asarray(image, dtype=np.uint8), np.asarray(state, dtype=np.float32)
        if image.ndim == 3:
            return self(image[None], state[None])[0]
        if self.ensemble is not None:
            if self.plans and len(self.plans[0]) != len(image):
                self.reset()
            self.plans = [plan[:, 1:] for plan in self.plans if plan.shape[1] > 1]
            self.plans.append(self._predict(image, state))
            weights = np.exp(-self.ensemble * np.arange(len(self.plans)))
            now = np.stack([plan[:, 0] for plan in self.plans])  # (plans, batch, 6)
            return np.tensordot(weights / weights.sum(), now, axes=1)
        if self.plan is None or self.step >= self.n_action_steps or len(self.plan) != len(image):
            self.plan, self.step = self._predict(image, state), 0
        action = self.plan[:, self.step]
        self.step += 1
        return action


class ChunkLearner:
    """Training-side wrapper: the interface :mod:`realgap.imitate.train` drives
    (the same one :class:`realgap.imitate.act.ACTLearner` offers)."""

    def __init__(self, network: ChunkPolicy, n_action_steps: int, ensemble: float | None = None):
        self.network, self.n_action_steps, self.ensemble = network, n_action_steps, ensemble

    def parameters(self):
        return self.network.parameters()

    def train(self, mode: bool = True):
        self.network.train(mode)
        return self

    def loss(self, image, state, target, pad) -> torch.Tensor:
        """L1 in normalized units. Padded steps (past the episode's end) are kept:
        they teach the policy to hold still once the task is done."""
        network = self.network
        normalized = (target - network.action_mean) / network.action_std
        return (network.normalized(image, state) - normalized).abs().mean()

    def save(self, folder, contract: PolicyContract) -> Path:
        return save_chunk_policy(folder, self.network, contract, self.n_action_steps, self.ensemble)


def save_chunk_policy(
    folder,
    network: ChunkPolicy,
    contract: PolicyContract,
    n_action_steps: int,
    ensemble: float | None = None,
):
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu() for k, v in network.state_dict().items()}
    config = {"image_size": network.image_size, "chunk": network.chunk, "hidden": network.hidden}
    torch.save(
        {
            "state_dict": state,
            "config": config,
            "n_action_steps": n_action_steps,
            "ensemble": ensemble,
        },
        folder / WEIGHTS,
    )
    (folder / "contract.json").write_text(json.dumps(contract.to_dict(), indent=2))
    return folder


def load_chunk_policy(folder) -> tuple[ChunkRunner, ChunkPolicy]:
    """Load on the CPU (tensors mapped to the CPU, as every realgap checkpoint)."""
    payload = torch.load(Path(folder) / WEIGHTS, map_location="cpu", weights_only=True)
    network = ChunkPolicy(**payload["config"])
    network.load_state_dict(payload["state_dict"])
    network.eval()
    runner = ChunkRunner(network, int(payload["n_action_steps"]), payload.get("ensemble"))
    return runner, network


def load_chunk_runner(folder) -> ChunkRunner:
    """The ``chunk`` policy loader (registered under ``realgap.policy_loaders``)."""
    return load_chunk_policy(folder)[0]
