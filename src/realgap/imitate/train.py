"""Imitation recipe: a chunked-action policy from sim and real demonstrations --
the built-in BC policy (``policy="chunk"``) or LeRobot's ACT (``policy="act"``).

Read top to bottom:
1. Load the sim and/or real datasets (LeRobot layout). Each frame's target is
   the chunk of the next ``chunk`` commanded joint targets of its episode
   (padded with the episode's last one), as in ACT.
2. Batches mix the two sources at a fixed ratio: ``mix`` of every batch comes
   from the real demos, the rest from sim -- so ten real episodes are not
   drowned by hundreds of sim ones. (LeRobot's ``MultiLeRobotDataset`` raises,
   and ``merge_datasets`` keeps one set of statistics with no ratio: hence a
   sampler of our own.)
3. Images get a random 1-pixel shift; the policy's own loss (L1 in normalized
   units; ACT adds its KL term), AdamW with a cosine schedule. ``init`` fine-tunes
   an existing policy (keeping its normalization), e.g. on the real demos only.
4. The policy folder: weights, and a contract with ``action_mode = "absolute"``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
from rich.progress import Progress

from realgap import runs
from realgap.errors import ConfigError
from realgap.imitate.act import ACTLearner, act_statistics
from realgap.imitate.dataset import Demos, load_demos
from realgap.imitate.policy import ChunkLearner, ChunkPolicy, load_chunk_policy
from realgap.policy.checkpoint import load_contract
from realgap.policy.contract import PolicyContract
from realgap.runs import RunFolder
from realgap.sim.tasks import make_task, task_for_instruction


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
    """A policy folder to fine-tune instead of starting fresh (same --policy)."""
    policy: str = "chunk"
    """"chunk": the built-in chunked BC policy; "act": LeRobot's ACT (needs the real extra)."""
    chunk: int = 10
    """Joint targets predicted per observation."""
    n_action_steps: int = 2
    """Targets executed before planning again. Replanning often is the feedback that
    recovers from errors: on PickCube, 1-2 steps scored 57-78%, 5 steps 48-56%."""
    ensemble: float | None = None
    """ACT's temporal ensembling coefficient (plans every step; None: off)."""
    shift: int = 1
    """Random-shift image augmentation in pixels (0: off); a 16x16 image moves ~4 deg/pixel."""
    hidden: int = 256
    """Width of the two hidden layers."""
    steps: int = 10000
    """Gradient steps."""
    batch: int = 128
    """Batch size."""
    lr: float | None = None
    """Learning rate; default 1e-3 for chunk, 1e-4 for ACT (a third of it when fine-tuning)."""
    seed: int = 0
    """Seed for sampling and initialization."""
    progress: bool = True
    """Show a progress bar."""


def chunk_targets(demos: Demos, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, chunk, 6): each frame's next ``chunk`` targets within its episode, padded
    with the episode's last; and (N, chunk) booleans marking the padded steps."""
    index = np.arange(len(demos.actions))
    ends = np.zeros_like(index)
    for episode in np.unique(demos.episode):
        members = np.nonzero(demos.episode == episode)[0]
        ends[members] = members[-1]
    wanted = index[:, None] + np.arange(chunk)[None]
    picks = np.minimum(wanted, ends[:, None])
    return demos.actions[picks], wanted > ends[:, None]


def random_shift(images: torch.Tensor, pixels: int, generator: torch.Generator) -> torch.Tensor:
    """DrQ-style augmentation: pad by replicating the border, crop back at a random offset."""
    if pixels <= 0:
        return images
    n, height, width, _ = images.shape
    padded = torch.nn.functional.pad(
        images.permute(0, 3, 1, 2).float(), (pixels,) * 4, mode="replicate"
    ).permute(0, 2, 3, 1)
    dy, dx = torch.randint(0, 2 * pixels + 1, (2, n, 1), generator=generator)
    rows = (torch.arange(height)[None] + dy)[:, :, None]
    cols = (torch.arange(width)[None] + dx)[:, None, :]
    return padded[torch.arange(n)[:, None, None], rows, cols].to(images.dtype)


class MixSampler:
    """Batches with ``round(mix * batch)`` real frames and the rest sim frames."""

    def __init__(self, sim_size: int, real_size: int, mix: float, batch: int, seed: int = 0):
        if not 0.0 <= mix <= 1.0:
            raise ConfigError(f"--mix must be in [0, 1], got {mix}")
        self.sim_size, self.real_size, self.batch = sim_size, real_size, batch
        self.rng = np.random.default_rng(seed)
        real = round(mix * batch) if sim_size and real_size else (batch if real_size else 0)
        self.real_per_batch = real

    def sample(self) -> tuple[np.ndarray, np.ndarray]:
        """Indices into the sim and the real frames for one batch."""
        real = self.rng.integers(0, max(self.real_size, 1), self.real_per_batch)
        sim = self.rng.integers(0, max(self.sim_size, 1), self.batch - self.real_per_batch)
        return sim, real


def make_learner(args: Args, sources: dict[str, Demos], data: dict, image_size: int):
    """The policy being trained: fresh (statistics from all training frames) or ``init``."""
    if args.init:
        kind = load_contract(args.init).extra.get("policy", "chunk")
        if kind != args.policy:
            raise ConfigError(f"--init {args.init} holds a {kind!r} policy; pass --policy {kind}")
    if args.policy == "act":
        if args.init:
            return ACTLearner.load(args.init)
        return ACTLearner.fresh(
            image_size,
            args.chunk,
            args.n_action_steps,
            args.ensemble,
            act_statistics(
                np.concatenate([d.images for d in sources.values()]),
                np.concatenate([d.states for d in sources.values()]),
                np.concatenate([d.actions for d in sources.values()]),
            ),
        )
    if args.init:
        _, network = load_chunk_policy(args.init)
        return ChunkLearner(network, args.n_action_steps, args.ensemble)
    network = ChunkPolicy(image_size, args.chunk, args.hidden)
    network.set_statistics(
        np.concatenate([d.states for d in sources.values()]),
        np.concatenate([data[name]["target"].numpy() for name in sources]),
    )
    return ChunkLearner(network, args.n_action_steps, args.ensemble)


def main(args: Args) -> dict:
    """Train; returns the summary written to ``out/summary.json``."""
    started = time.perf_counter()
    if args.sim is None and args.real is None:
        raise ConfigError("give --sim and/or --real demonstrations")
    if args.policy not in ("chunk", "act"):
        raise ConfigError(f"--policy must be chunk or act, got {args.policy!r}")
    torch.manual_seed(args.seed)
    run = RunFolder(args.out)
    run.write_config("imitate", asdict(args))
    sources = {
        name: load_demos(path)
        for name, path in (("sim", args.sim), ("real", args.real))
        if path is not None
    }
    first = next(iter(sources.values()))
    task = task_for_instruction(first.task)
    if task is None:
        raise ConfigError(f"unknown task text {first.task!r} in the dataset")
    if len({d.fps for d in sources.values()}) > 1:
        raise ConfigError(f"the datasets were recorded at different rates: {args.sim}, {args.real}")
    image_size = first.images.shape[1]
    data = {}
    for name, demos in sources.items():
        targets, padded = chunk_targets(demos, args.chunk)
        data[name] = {
            "image": torch.from_numpy(demos.images),
            "state": torch.from_numpy(demos.states),
            "target": torch.from_numpy(targets),
            "pad": torch.from_numpy(padded),
        }
    learner = make_learner(args, sources, data, image_size).train()
    lr = args.lr if args.lr is not None else (1e-4 if args.policy == "act" else 1e-3)
    lr = lr / 3 if args.init else lr
    sampler = MixSampler(
        len(sources["sim"].actions) if "sim" in sources else 0,
        len(sources["real"].actions) if "real" in sources else 0,
        args.mix,
        args.batch,
        args.seed,
    )
    optimizer = torch.optim.AdamW(learner.parameters(), lr=lr, weight_decay=1e-4)
    # Cosine decay: the last steps refine instead of bouncing around at the full rate.
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, max(args.steps, 1))
    generator = torch.Generator().manual_seed(args.seed)
    metrics = run.metrics(["phase", "update", "loss"], started)
    with Progress(disable=not args.progress, transient=True) as progress:
        bar = progress.add_task(f"imitation ({args.policy})", total=args.steps)
        for step in range(args.steps):
            indices = dict(zip(("sim", "real"), sampler.sample()))
            parts = [(data[n], i) for n, i in indices.items() if n in data and len(i)]
            batch = {key: torch.cat([d[key][i] for d, i in parts]) for key in parts[0][0]}
            image = random_shift(batch["image"], args.shift, generator)
            loss = learner.loss(image, batch["state"], batch["target"], batch["pad"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            if step % 50 == 0 or step == args.steps - 1:
                metrics.log({"phase": "imitation", "update": step + 1, "loss": loss.item()})
            progress.update(bar, advance=1)
    metrics.close()
    learner.train(False)
    config = make_task(task).config
    contract = PolicyContract(
        task=task,
        image_size=image_size,
        control_hz=float(first.fps),
        action_scale=tuple(config.action_scale),
        action_mode="absolute",
        start_pose=tuple(config.start_pose),
        extra={
            "recipe": "imitate",
            "policy": args.policy,
            "sim": args.sim,
            "real": args.real,
            "mix": args.mix,
            "init": args.init,
        },
    )
    learner.save(run.policy, contract)
    summary = {
        "task": task,
        "recipe": "imitate",
        "policy_type": args.policy,
        "policy": str(run.policy),
        "frames": {name: len(d.actions) for name, d in sources.items()},
        "episodes": {name: d.episodes for name, d in sources.items()},
        "final_loss": loss.item(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    run.write_json(runs.SUMMARY, summary)
    return summary
