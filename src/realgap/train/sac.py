"""Visual SAC recipe (the "Squint" recipe): end-to-end from the 16x16 wrist image.

Read top to bottom:
1. Many parallel envs render the wrist image (rendered larger, area-downsampled
   to 16x16) under full domain randomization; transitions go to a replay buffer.
2. Critic: a two-convolution image encoder, trained by the critic loss only,
   feeding two distributional (C51) Q heads with layer norm.
3. Actor: a tanh-Gaussian on the encoder's features (detached) and the joint
   numbers, updated every ``policy_frequency`` critic updates, with automatic
   entropy tuning.
4. The update-to-data ratio ``utd`` sets gradient updates per env transition.
The published defaults (meant for a GPU): 1,024 envs, batch 512, UTD 0.25,
gamma 0.9, tau 0.01, lr 3e-4, actor every 4 critic updates, 101 atoms on
[-20, 20]. On a 2-core CPU pass fewer envs (``--envs``).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from rich.progress import Progress
from torch import nn

from realgap.policy.networks import ImageEncoder, RunningNorm, VisualPolicy, mlp
from realgap.runs import RunFolder
from realgap.sim.batched_env import BatchedEnv
from realgap.train.common import evaluate, finish_run, policy_actor, training_worlds


@dataclass
class Args:
    task: str = "Reach"
    """Registered task name."""
    out: str = "runs/sac"
    """Run folder."""
    seed: int = 0
    """Seed for envs and torch."""
    randomize: bool = True
    """Train under domain randomization (False: exactly the twin, no randomization)."""
    randomization: str | None = None
    """A randomization TOML (``[randomization]`` widths); None: the default widths."""
    twin: str | None = None
    """The twin to train in: a calibration.json or a TwinParams TOML. The randomization
    is centred on it and evaluation runs in it; None: the nominal twin."""
    num_envs: int = 1024
    """Parallel envs (the published default; use ~32-64 on a CPU)."""
    total_steps: int = 2_000_000
    """Total env transitions."""
    learning_starts: int = 10_000
    """Random-action transitions before updates begin."""
    buffer_size: int = 300_000
    """Replay capacity (transitions)."""
    batch_size: int = 512
    """Minibatch size."""
    utd: float = 0.25
    """Gradient updates per env transition."""
    gamma: float = 0.9
    """Discount."""
    tau: float = 0.01
    """Target network Polyak rate."""
    lr: float = 3e-4
    """Adam learning rate (critic, actor, entropy)."""
    policy_frequency: int = 4
    """Critic updates per actor update."""
    atoms: int = 101
    """C51 support size."""
    v_min: float = -20.0
    """Lowest value on the support."""
    v_max: float = 20.0
    """Highest value on the support."""
    eval_every: int = 20
    """Evaluate every N env steps (of all envs)."""
    eval_episodes: int = 32
    """Episodes per evaluation."""
    progress: bool = True
    """Show a progress bar."""


QUICK = {
    "num_envs": 8,
    "total_steps": 1_600,
    "learning_starts": 400,
    "batch_size": 64,
    "eval_every": 100,
    "eval_episodes": 8,
}
"""Overrides for a tiny run (seconds): smoke tests and ``--quick``; not a useful policy."""


class Critic(nn.Module):
    """Image encoder (trained here only) + two distributional Q heads."""

    def __init__(self, image_size: int, atoms: int, hidden: int = 256):
        super().__init__()
        self.encoder = ImageEncoder(image_size)
        self.state_norm = RunningNorm(12)
        width = self.encoder.features + 12 + 6
        self.q1 = mlp([width, hidden, hidden, atoms], activation=nn.ReLU, layer_norm=True)
        self.q2 = mlp([width, hidden, hidden, atoms], activation=nn.ReLU, layer_norm=True)

    def features(self, image, state):
        return torch.cat([self.encoder(image), self.state_norm(state)], dim=-1)

    def forward(self, features, action):
        x = torch.cat([features, action], dim=-1)
        return self.q1(x), self.q2(x)  # logits over the support


class Actor(nn.Module):
    """Tanh-Gaussian over the critic's (detached) features; exports as a VisualPolicy."""

    def __init__(self, features: int, hidden: int = 256):
        super().__init__()
        self.head = mlp([features, hidden, hidden, 12], activation=nn.ReLU)

    def forward(self, features):
        mean, log_std = self.head(features).chunk(2, dim=-1)
        return mean, log_std.clamp(-5, 2)

    def sample(self, features):
        mean, log_std = self(features)
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
        self.state = np.zeros((capacity, 12), np.float32)
        self.next_state = np.zeros((capacity, 12), np.float32)
        self.action = np.zeros((capacity, 6), np.float32)
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

    def sample(self, batch: int, rng: np.random.Generator):
        idx = rng.integers(0, self.size, batch)
        return [
            torch.from_numpy(a[idx])
            for a in (
                self.image,
                self.state,
                self.action,
                self.reward,
                self.next_image,
                self.next_state,
                self.done,
            )
        ]


def project(next_probs, reward, done, gamma, support):
    """C51 projection of r + gamma * z onto the fixed support."""
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


def export_policy(critic: Critic, actor: Actor, image_size: int) -> VisualPolicy:
    """The deterministic actor (tanh of the mean) as the shipped VisualPolicy."""
    policy = VisualPolicy(image_size=image_size)
    policy.encoder.load_state_dict(critic.encoder.state_dict())
    policy.state_norm.load_state_dict(critic.state_norm.state_dict())
    with torch.no_grad():
        for mine, theirs in zip(policy.head, actor.head):
            if isinstance(mine, nn.Linear):
                rows = mine.weight.shape[0]
                mine.weight.copy_(theirs.weight[:rows])
                mine.bias.copy_(theirs.bias[:rows])
    return policy


def main(args: Args) -> dict:
    """Train; returns the summary written to ``out/summary.json``."""
    started = time.perf_counter()
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    run = RunFolder(args.out)
    run.write_config("sac", asdict(args))
    randomization, twin = training_worlds(args)
    env = BatchedEnv(
        args.task, args.num_envs, randomization=randomization, twin=twin, seed=args.seed
    )
    nominal = BatchedEnv(args.task, min(32, args.eval_episodes), twin=twin, seed=args.seed + 1)
    size = env.config.image_size
    critic, critic_target = Critic(size, args.atoms), Critic(size, args.atoms)
    critic_target.load_state_dict(critic.state_dict())
    actor = Actor(critic.encoder.features + 12)
    log_alpha = torch.zeros(1, requires_grad=True)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=args.lr)
    actor_opt = torch.optim.Adam(actor.parameters(), lr=args.lr)
    alpha_opt = torch.optim.Adam([log_alpha], lr=args.lr)
    support = torch.linspace(args.v_min, args.v_max, args.atoms)
    replay = Replay(args.buffer_size, size)
    obs, _ = env.reset(seed=args.seed)
    iterations = max(1, args.total_steps // args.num_envs)
    updates_per_step = max(1, round(args.utd * args.num_envs))
    critic_updates = 0
    metrics = run.metrics(["env_steps", "critic_loss", "alpha", "success_rate"], started)
    policy = export_policy(critic, actor, size)
    with Progress(disable=not args.progress, transient=True) as progress:
        bar = progress.add_task("visual SAC", total=iterations)
        for iteration in range(iterations):
            steps = (iteration + 1) * args.num_envs
            if steps <= args.learning_starts:
                action = rng.uniform(-1, 1, (args.num_envs, 6)).astype(np.float32)
            else:
                with torch.no_grad():
                    feats = critic.features(
                        torch.from_numpy(obs["image"]), torch.from_numpy(obs["state"])
                    )
                    action = actor.sample(feats)[0].numpy()
            critic.state_norm.update(torch.from_numpy(obs["state"]))
            next_obs, reward, terminated, truncated, info = env.step(action)
            real_next = next_obs
            if "final_observation" in info:
                real_next = {k: v.copy() for k, v in next_obs.items()}
                done_ids = np.nonzero(terminated | truncated)[0]
                for key in real_next:
                    real_next[key][done_ids] = info["final_observation"][key][done_ids]
            replay.add(obs, action, reward, real_next, terminated.astype(np.float32))
            obs = next_obs
            row = {"env_steps": steps}
            if steps > args.learning_starts:
                for _ in range(updates_per_step):
                    image, state, act, rew, next_image, next_state, done = replay.sample(
                        args.batch_size, rng
                    )
                    alpha = log_alpha.exp().detach()
                    with torch.no_grad():
                        next_feats = critic_target.features(next_image, next_state)
                        next_action, next_logp = actor.sample(
                            critic.features(next_image, next_state)
                        )
                        l1, l2 = critic_target(next_feats, next_action)
                        p1, p2 = F.softmax(l1, -1), F.softmax(l2, -1)
                        # Pessimistic: the head whose expected value is lower.
                        pick = ((p1 * support).sum(-1) < (p2 * support).sum(-1))[:, None]
                        next_probs = torch.where(pick, p1, p2)
                        # Soft target r + gamma * (z - alpha * log pi), with the entropy
                        # term folded into the reward before the projection.
                        soft_reward = rew - args.gamma * (1 - done) * alpha * next_logp
                        target = project(next_probs, soft_reward, done, args.gamma, support)
                    l1, l2 = critic(critic.features(image, state), act)
                    critic_loss = (
                        -(target * (F.log_softmax(l1, -1) + F.log_softmax(l2, -1))).sum(-1).mean()
                    )
                    critic_opt.zero_grad()
                    critic_loss.backward()
                    critic_opt.step()
                    critic_updates += 1
                    if critic_updates % args.policy_frequency == 0:
                        feats = critic.features(image, state).detach()  # encoder: critic only
                        new_action, logp = actor.sample(feats)
                        q1, q2 = critic(feats, new_action)
                        q = torch.min(
                            (F.softmax(q1, -1) * support).sum(-1),
                            (F.softmax(q2, -1) * support).sum(-1),
                        )
                        actor_loss = (alpha * logp - q).mean()
                        actor_opt.zero_grad()
                        actor_loss.backward()
                        actor_opt.step()
                        critic_opt.zero_grad()  # the actor loss must not move the critic
                        alpha_loss = -(log_alpha.exp() * (logp.detach() - 6.0)).mean()
                        alpha_opt.zero_grad()
                        alpha_loss.backward()
                        alpha_opt.step()
                    with torch.no_grad():
                        for p, tp in zip(critic.parameters(), critic_target.parameters()):
                            tp.lerp_(p, args.tau)
                row.update(
                    critic_loss=float(critic_loss.detach()), alpha=float(log_alpha.exp().detach())
                )
            if (iteration + 1) % args.eval_every == 0 or iteration + 1 == iterations:
                policy = export_policy(critic, actor, size)
                row["success_rate"] = evaluate(
                    nominal, policy_actor(policy), args.eval_episodes, args.seed + 5
                )
                progress.update(bar, description=f"visual SAC success {row['success_rate']:.2f}")
            metrics.log(row)
            progress.update(bar, advance=1)
    metrics.close()
    env.close()
    summary = finish_run(
        run,
        policy,
        nominal,
        recipe="sac",
        task=args.task,
        started=started,
        episodes=args.eval_episodes,
        seed=args.seed + 11,
    )
    nominal.close()
    return summary
