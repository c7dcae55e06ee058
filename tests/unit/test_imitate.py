"""Imitation pieces: chunk targets, the mix sampler, the chunk runner."""

import numpy as np
import pytest
import torch

from realgap.imitate.dataset import Demos
from realgap.imitate.policy import ChunkPolicy, ChunkRunner
from realgap.imitate.train import MixSampler, chunk_targets, random_shift


def test_chunk_targets_stay_inside_each_episode():
    actions = np.arange(5 * 6, dtype=np.float32).reshape(5, 6)
    demos = Demos(
        np.zeros((5, 16, 16, 3), np.uint8),
        np.zeros((5, 12), np.float32),
        actions,
        np.array([0, 0, 0, 1, 1]),
        10.0,
        "t",
        {},
    )
    chunks, padded = chunk_targets(demos, 3)
    assert np.array_equal(chunks[0], actions[[0, 1, 2]])
    assert np.array_equal(chunks[1], actions[[1, 2, 2]])  # padded with the episode's last
    assert np.array_equal(chunks[3], actions[[3, 4, 4]])  # never crosses into another episode
    assert padded[1].tolist() == [False, False, True] and not padded[0].any()
    assert padded[4].tolist() == [False, True, True]


@pytest.mark.parametrize("mix", [0.0, 0.25, 0.5, 1.0])
def test_mix_ratio_is_respected_in_every_batch(mix):
    sampler = MixSampler(sim_size=5000, real_size=500, mix=mix, batch=128, seed=1)
    for _ in range(20):
        sim, real = sampler.sample()
        assert len(real) == round(mix * 128) and len(sim) + len(real) == 128
        assert (real < 500).all() and (sim < 5000).all()


def test_single_source_and_bad_mix():
    sim, real = MixSampler(0, 300, 0.25, 64).sample()
    assert len(real) == 64 and len(sim) == 0  # real only: every frame is real
    sim, real = MixSampler(300, 0, 0.25, 64).sample()
    assert len(sim) == 64 and len(real) == 0
    with pytest.raises(ValueError, match="mix"):
        MixSampler(10, 10, 1.5, 8)


def test_runner_plays_a_chunk_then_plans_again():
    network = ChunkPolicy(chunk=4)
    calls = []
    original = network.forward

    def counting(image, state):
        calls.append(1)
        return original(image, state)

    network.forward = counting
    runner = ChunkRunner(network, n_action_steps=3)
    image, state = np.zeros((2, 16, 16, 3), np.uint8), np.zeros((2, 12), np.float32)
    with torch.no_grad():
        plan = network(torch.from_numpy(image), torch.from_numpy(state)).numpy()
    calls.clear()
    outputs = [runner(image, state) for _ in range(7)]
    assert len(calls) == 3  # steps 0, 3 and 6 plan
    assert np.allclose(outputs[1], plan[:, 1])
    runner.reset()
    runner(image, state)
    assert len(calls) == 4


def test_random_shift_moves_whole_images_by_at_most_the_pad():
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.integers(0, 256, (64, 16, 16, 3), dtype=np.uint8))
    shifted = random_shift(images, 1, torch.Generator().manual_seed(0))
    assert shifted.dtype == torch.uint8 and shifted.shape == images.shape
    moves = set()
    for original, moved in zip(images.numpy(), shifted.numpy()):
        # The interior must equal the original translated by one (dy, dx) in -1..1.
        found = [
            (dy, dx)
            for dy in (-1, 0, 1)
            for dx in (-1, 0, 1)
            if np.array_equal(moved[2:-2, 2:-2], original[2 + dy : 14 + dy, 2 + dx : 14 + dx])
        ]
        assert found, "a shifted image is not a translation of its original"
        moves.add(found[0])
    assert len(moves) >= 5  # the offsets vary over the batch
    assert torch.equal(random_shift(images, 0, torch.Generator()), images)


def test_temporal_ensembling_averages_what_live_chunks_say_about_now():
    network = ChunkPolicy(chunk=3)
    plans = iter(
        [
            np.full((1, 3, 6), value, np.float32) + np.arange(3)[None, :, None]
            for value in (0, 10, 20, 30)
        ]
    )
    runner = ChunkRunner(network, n_action_steps=3, ensemble=0.5)
    runner._predict = lambda image, state: next(plans)
    image, state = np.zeros((1, 16, 16, 3), np.uint8), np.zeros((1, 12), np.float32)
    assert np.allclose(runner(image, state), 0)  # one chunk: its first step
    # Step 2: the first chunk's second step (1) and the new chunk's first (10).
    weights = np.exp(-0.5 * np.arange(2))
    assert np.allclose(runner(image, state), (weights @ [1, 10]) / weights.sum())
    runner(image, state)
    # Step 4: the first chunk has run out; the live three say 12, 21 and 30.
    weights = np.exp(-0.5 * np.arange(3))
    assert np.allclose(runner(image, state), (weights @ [12, 21, 30]) / weights.sum())
