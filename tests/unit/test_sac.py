"""Pieces of the visual SAC recipe that can be checked exactly."""

import torch

from realgap.train.sac import Actor, Critic, export_policy, project


def test_c51_projection_keeps_mass_and_shifts_the_mean():
    support = torch.linspace(-20, 20, 101)
    probs = torch.softmax(torch.randn(4, 101), -1)
    reward = torch.tensor([0.0, 1.0, -3.0, 25.0])
    done = torch.tensor([0.0, 0.0, 1.0, 0.0])
    target = project(probs, reward, done, 0.9, support)
    assert torch.allclose(target.sum(-1), torch.ones(4), atol=1e-5)
    expected = reward + 0.9 * (1 - done) * (probs * support).sum(-1)
    mean = (target * support).sum(-1)
    assert torch.allclose(mean[:3], expected[:3], atol=1e-4)
    assert mean[3] <= 20.0 + 1e-5  # clipped at the support's edge
    assert torch.allclose(mean[2], torch.tensor(-3.0), atol=1e-4)  # terminal: reward only


def test_exported_policy_is_the_deterministic_actor():
    critic, actor = Critic(16, 101), Actor(48 + 12)
    critic.state_norm.update(torch.randn(32, 12))
    policy = export_policy(critic, actor, 16)
    image = torch.randint(0, 256, (3, 16, 16, 3), dtype=torch.uint8)
    state = torch.randn(3, 12)
    mean, _ = actor(critic.features(image, state))
    assert torch.allclose(policy(image, state), torch.tanh(mean), atol=1e-6)
