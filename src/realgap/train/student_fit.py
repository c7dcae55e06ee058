"""The student's regression in one DAgger round: on single steps for a memoryless
student, on whole episodes for a recurrent one.

``args`` is the distill recipe's ``Args`` (``student_updates``, ``student_epochs``,
``student_batch``, ``sequence_batch``).
"""

from __future__ import annotations

import numpy as np
import torch


def fit_samples(student, optimizer, images, states, labels, args):
    """One DAgger round's regression for a memoryless student, on single steps; returns
    the last minibatch's loss and the samples regressed on."""
    data_img = torch.from_numpy(np.concatenate(images))
    data_state = torch.from_numpy(np.concatenate(states))
    data_label = torch.from_numpy(np.concatenate(labels)).float()
    total = len(data_label)
    for idx in minibatches(total, args):
        loss = ((student(data_img[idx], data_state[idx]) - data_label[idx]) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss, total


def fit_sequences(student, optimizer, images, states, labels, firsts, episode_steps, args):
    """One DAgger round's regression for a recurrent student, on whole episodes: each
    minibatch is ``sequence_batch`` windows of ``episode_steps`` steps (fewer when the
    buffer is shorter), starting where an episode begins, unrolled from a zero memory
    (backpropagation through the whole episode: what to remember is learnt from the
    labels of the steps that need it). Returns as :func:`fit_samples`."""
    data_img = torch.from_numpy(np.stack(images))  # (T, N, H, W, 3)
    data_state = torch.from_numpy(np.stack(states))
    data_label = torch.from_numpy(np.stack(labels)).float()
    data_first = torch.from_numpy(np.stack(firsts))  # (T, N)
    steps, total = len(data_first), data_first.numel()
    length = min(episode_steps, steps)
    candidates = torch.nonzero(data_first[: steps - length + 1])
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
        first[0] = True  # every window starts from a fresh memory
        actions = student.unroll(
            data_img[time_index, env_index], data_state[time_index, env_index], first
        )
        loss = ((actions - data_label[time_index, env_index]) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss, total


def minibatches(total: int, args):
    """Index batches for one DAgger round: ``student_updates`` random batches, or
    ``student_epochs`` shuffled passes over the ``total`` samples."""
    if args.student_updates is not None:
        for _ in range(args.student_updates):
            yield torch.randint(0, total, (min(args.student_batch, total),))
        return
    for _ in range(args.student_epochs):
        yield from torch.randperm(total).split(args.student_batch)
