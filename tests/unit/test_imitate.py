"""Imitation pieces: chunk targets, the mix sampler, the chunk runner."""

import numpy as np
import pytest
import torch

from realgap.imitate.dataset import Demos
from realgap.imitate.policy import ChunkPolicy, ChunkRunner
from realgap.imitate.train import MixSampler, chunk_targets


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
    chunks = chunk_targets(demos, 3)
    assert np.array_equal(chunks[0], actions[[0, 1, 2]])
    assert np.array_equal(chunks[1], actions[[1, 2, 2]])  # padded with the episode's last
    assert np.array_equal(chunks[3], actions[[3, 4, 4]])  # never crosses into another episode


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
