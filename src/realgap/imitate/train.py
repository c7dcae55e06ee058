"""Imitation recipe: a chunked-action BC policy from sim and real demonstrations.

Read top to bottom:
1. Load the sim and/or real datasets (LeRobot layout). Each frame's target is
   the chunk of the next ``chunk`` commanded joint targets of its episode
   (padded with the episode's last one), as in ACT.
2. Batches mix the two sources at a fixed ratio: ``mix`` of every batch comes
   from the real demos, the rest from sim -- so ten real episodes are not
   drowned by hundreds of sim ones. (LeRobot's ``MultiLeRobotDataset`` raises,
   and ``merge_datasets`` keeps one set of statistics with no ratio: hence a
   sampler of our own.)
3. L1 loss in normalized units; Adam. ``init`` fine-tunes an existing policy
   (keeping its normalization), e.g. on the real demos only.
4. The policy folder: weights, and a contract with ``action_mode = "absolute"``.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from rich.progress import Progress

from realgap.imitate.dataset import Demos, load_demos
from realgap.imitate.demos import TASK_TEXT
from realgap.imitate.policy import ChunkPolicy, load_chunk_policy, save_chunk_policy
from realgap.policy.contract import PolicyContract
from realgap.sim.tasks import make_task


@dataclass
class Args:
    out: str = "runs/imitate"
    """Run folder: config.json, metrics.csv and policy/."""
    sim: str | None = None
    """Sim demonstrations (a LeRobot dataset folder)."""
    real: str | None = None
    """Real (or fake-arm) demonstrations."""
    mix: float = 0.5
    """Fraction of every batch drawn from the real demos when both are given."""
    init: str | None = None
    """A policy folder to fine-tune instead of starting fresh."""
    chunk: int = 10
    """Joint targets predicted per observation."""
    n_action_steps: int = 5
    """Targets executed before planning again."""
    steps: int = 3000
    """Gradient steps."""
    batch: int = 128
    """Batch size."""
    lr: float = 1e-3
    """Adam learning rate (a third of it when fine-tuning)."""
    seed: int = 0
    """Seed for sampling and initialization."""
    progress: bool = True
    """Show a progress bar."""


def chunk_targets(demos: Demos, chunk: int) -> np.ndarray:
    """(N, chunk, 6): each frame's next ``chunk`` targets within its episode."""
    index = np.arange(len(demos.actions))
    ends = np.zeros_like(index)
    for episode in np.unique(demos.episode):
        members = np.nonzero(demos.episode == episode)[0]
        ends[members] = members[-1]
    picks = np.minimum(index[:, None] + np.arange(chunk)[None], ends[:, None])
    return demos.actions[picks]


class MixSampler:
    """Batches with ``round(mix * batch)`` real frames and the rest sim frames."""

    def __init__(self, sim_size: int, real_size: int, mix: float, batch: int, seed: int = 0):
        if not 0.0 <= mix <= 1.0:
            raise ValueError(f"--mix must be in [0, 1], got {mix}")
        self.sim_size, self.real_size, self.batch = sim_size, real_size, batch
        self.rng = np.random.default_rng(seed)
        real = round(mix * batch) if sim_size and real_size else (batch if real_size else 0)
        self.real_per_batch = real

    def sample(self) -> tuple[np.ndarray, np.ndarray]:
        """Indices into the sim and the real frames for one batch."""
        real = self.rng.integers(0, max(self.real_size, 1), self.real_per_batch)
        sim = self.rng.integers(0, max(self.sim_size, 1), self.batch - self.real_per_batch)
        return sim, real


def main(args: Args) -> dict:
    """Train; returns the summary written to ``out/summary.json``."""
    started = time.perf_counter()
    if args.sim is None and args.real is None:
        raise ValueError("give --sim and/or --real demonstrations")
    torch.manual_seed(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps({"recipe": "imitate", **asdict(args)}, indent=2))
    sources = {
        name: load_demos(path)
        for name, path in (("sim", args.sim), ("real", args.real))
        if path is not None
    }
    first = next(iter(sources.values()))
    task = {text: name for name, text in TASK_TEXT.items()}.get(first.task)
    if task is None:
        raise ValueError(f"unknown task text {first.task!r} in the dataset")
    image_size = first.images.shape[1]
    data = {
        name: {
            "image": torch.from_numpy(d.images),
            "state": torch.from_numpy(d.states),
            "target": torch.from_numpy(chunk_targets(d, args.chunk)),
        }
        for name, d in sources.items()
    }
    if args.init:
        _, network = load_chunk_policy(args.init)
        network.train()
        lr = args.lr / 3
    else:
        network = ChunkPolicy(image_size, args.chunk)
        states = np.concatenate([d.states for d in sources.values()])
        actions = np.concatenate([d.actions for d in sources.values()])
        network.set_statistics(states, actions)
        lr = args.lr
    sampler = MixSampler(
        len(sources["sim"].actions) if "sim" in sources else 0,
        len(sources["real"].actions) if "real" in sources else 0,
        args.mix,
        args.batch,
        args.seed,
    )
    optimizer = torch.optim.Adam(network.parameters(), lr=lr)
    metrics = (out / "metrics.csv").open("w")
    metrics.write("phase,update,loss,seconds\n")
    with Progress(disable=not args.progress, transient=True) as progress:
        bar = progress.add_task("imitation (chunked BC)", total=args.steps)
        for step in range(args.steps):
            sim_index, real_index = sampler.sample()
            parts = [
                (data[n], i)
                for n, i in (("sim", sim_index), ("real", real_index))
                if n in data and len(i)
            ]
            image = torch.cat([d["image"][i] for d, i in parts])
            state = torch.cat([d["state"][i] for d, i in parts])
            target = torch.cat([d["target"][i] for d, i in parts])
            normalized = (target - network.action_mean) / network.action_std
            loss = (network.normalized(image, state) - normalized).abs().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 50 == 0 or step == args.steps - 1:
                seconds = time.perf_counter() - started
                metrics.write(f"imitation,{step + 1},{loss.item():.5f},{seconds:.1f}\n")
                metrics.flush()
            progress.update(bar, advance=1)
    metrics.close()
    network.eval()
    config = make_task(task).config
    contract = PolicyContract(
        task=task,
        image_size=image_size,
        control_hz=float(first.fps),
        action_scale=tuple(config.action_scale),
        action_mode="absolute",
        extra={
            "recipe": "imitate",
            "sim": args.sim,
            "real": args.real,
            "mix": args.mix,
            "init": args.init,
        },
    )
    save_chunk_policy(out / "policy", network, contract, args.n_action_steps)
    summary = {
        "task": task,
        "recipe": "imitate",
        "policy": str(out / "policy"),
        "frames": {name: len(d.actions) for name, d in sources.items()},
        "episodes": {name: d.episodes for name, d in sources.items()},
        "final_loss": loss.item(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
