"""The student's regression in one DAgger round: on single steps for a memoryless
student, on whole episodes for a recurrent one.

``args`` is the distill recipe's ``Args`` (``student_updates``, ``student_epochs``,
``student_batch``, ``sequence_batch``). Both take an optional :class:`WeightAverage`,
updated after every gradient step.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn


class WeightAverage:
    """An exponential moving average of a module's weights, updated after every
    gradient step; its buffers (the running state normalization) are copied as they
    are. A student's weights wander from step to step under a constant learning rate
    and a dataset that changes every DAgger round; their average acts more steadily
    (docs/training.md has the figures)."""

    def __init__(self, module: nn.Module, decay: float):
        if not 0.0 < decay < 1.0:
            raise ValueError(f"decay must be in (0, 1), got {decay}")
        self.source, self.decay = module, decay
        self.module = copy.deepcopy(module)
        self.module.requires_grad_(False)

    @torch.no_grad()
    def update(self) -> None:
        for average, weight in zip(self.module.parameters(), self.source.parameters()):
            average.lerp_(weight, 1.0 - self.decay)
        for average, buffer in zip(self.module.buffers(), self.source.buffers()):
            average.copy_(buffer)


def _gradient_step(optimizer, loss, average: WeightAverage | None) -> None:
    """One optimizer step on ``loss``, then the weight average follows it."""
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if average is not None:
        average.update()


def fit_samples(student, optimizer, images, states, labels, args, average=None):
    """One DAgger round's regression for a memoryless student, on single steps; returns
    the last minibatch's loss and the samples regressed on."""
    data_img = torch.from_numpy(np.concatenate(images))
    data_state = torch.from_numpy(np.concatenate(states))
    data_label = torch.from_numpy(np.concatenate(labels)).float()
    total = len(data_label)
    for idx in minibatches(total, args):
        loss = ((student(data_img[idx], data_state[idx]) - data_label[idx]) ** 2).mean()
        _gradient_step(optimizer, loss, average)
    return loss, total


def fit_sequences(
    student,
    optimizer,
    images,
    states,
    labels,
    firsts,
    episode_steps,
    args,
    average=None,
    memories=None,
):
    """One DAgger round's regression for a recurrent student, on episodes: each
    minibatch is ``sequence_batch`` windows of ``episode_steps`` steps (fewer when the
    buffer is shorter), unrolled with backpropagation through the window (what to
    remember is learnt from the labels of the steps that need it). Windows start where
    an episode begins, from a zero memory, and -- for episodes longer than a window (a
    slow speed's) -- every ``episode_steps`` steps after, from ``memories``: the memory
    the collecting student carried into that step (a few rounds stale at most; the
    stored-state recipe of recurrent replay). Returns as :func:`fit_samples`."""
    data_img = torch.from_numpy(np.stack(images))  # (T, N, H, W, 3)
    data_state = torch.from_numpy(np.stack(states))
    data_label = torch.from_numpy(np.stack(labels)).float()
    data_first = torch.from_numpy(np.stack(firsts))  # (T, N)
    stored = None if memories is None else torch.from_numpy(np.stack(memories))
    steps, total = len(data_first), data_first.numel()
    length = min(episode_steps, steps)
    starts = data_first.clone()
    if stored is not None:  # later windows of long episodes, on the stored memory
        starts |= (_steps_into_episode(data_first) % length == 0) & (
            _steps_into_episode(data_first) >= 0
        )
    candidates = torch.nonzero(starts[: steps - length + 1])
    if len(candidates) == 0:  # a buffer shorter than an episode: any window
        candidates = torch.cartesian_prod(
            torch.arange(steps - length + 1), torch.arange(data_first.shape[1])
        )
    updates = args.student_updates
    if updates is None:
        updates = args.student_epochs * max(1, total // args.student_batch)
    offsets = torch.arange(length)[:, None]
    for _ in range(updates):
        pick = candidates[torch.randint(0, len(candidates), (args.sequence_batch,))]
        time_index, env_index = pick[:, 0] + offsets, pick[:, 1].expand(length, -1)
        first = data_first[time_index, env_index].clone()
        initial = None
        if stored is None:
            first[0] = True  # every window starts from a fresh memory
        else:
            initial = stored[pick[:, 0], pick[:, 1]] * (~first[0]).float().unsqueeze(-1)
        actions = student.unroll(
            data_img[time_index, env_index], data_state[time_index, env_index], first, initial
        )
        loss = ((actions - data_label[time_index, env_index]) ** 2).mean()
        _gradient_step(optimizer, loss, average)
    return loss, total


def _steps_into_episode(firsts: torch.Tensor) -> torch.Tensor:
    """(T, N) steps since each env's episode began (-1 before its first recorded start:
    the buffer opens mid-episode and the episode's beginning is gone)."""
    out = torch.full(firsts.shape, -1, dtype=torch.long)
    count = torch.full(firsts.shape[1:], -1, dtype=torch.long)
    for t in range(len(firsts)):
        count = torch.where(firsts[t], torch.zeros_like(count), count + (count >= 0).long())
        out[t] = count
    return out


def minibatches(total: int, args):
    """Index batches for one DAgger round: ``student_updates`` random batches, or
    ``student_epochs`` shuffled passes over the ``total`` samples."""
    if args.student_updates is not None:
        for _ in range(args.student_updates):
            yield torch.randint(0, total, (min(args.student_batch, total),))
        return
    for _ in range(args.student_epochs):
        yield from torch.randperm(total).split(args.student_batch)
