"""The recurrent student: its memory is learnt from labels that need it, zeroed where
an episode begins (in training, in sim evaluation, on the arm) and carried through
ONNX."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from realgap.policy.checkpoint import load_policy, save_policy
from realgap.policy.contract import PolicyContract
from realgap.policy.loaders import load_runtime_policy
from realgap.policy.networks import MemoryRunner, RecurrentVisualPolicy, VisualPolicy
from realgap.policy.onnx_policy import OnnxPolicy, export_onnx
from realgap.train import distill
from realgap.train.common import policy_actor
from realgap.train.student_fit import fit_samples, fit_sequences

CONTRACT = PolicyContract(
    task="StackCube", image_size=16, control_hz=10.0, action_scale=(0.1,) * 5 + (0.2,)
)


def observations(steps, batch, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (steps, batch, 16, 16, 3), dtype=np.uint8)
    states = rng.standard_normal((steps, batch, 12)).astype(np.float32)
    return images, states


def trained_network(seed=0) -> RecurrentVisualPolicy:
    torch.manual_seed(seed)
    network = RecurrentVisualPolicy()
    network.state_norm.update(torch.randn(64, 12))
    return network.eval()


def test_unroll_is_the_step_by_step_policy_with_memory_zeroed_where_episodes_begin():
    network = trained_network()
    images, states = observations(6, 3)
    firsts = torch.zeros(6, 3, dtype=torch.bool)
    firsts[0] = True
    firsts[3, 1] = True  # env 1 starts a new episode at step 3
    with torch.no_grad():
        unrolled = network.unroll(torch.from_numpy(images), torch.from_numpy(states), firsts)
        memory, stepped = network.initial_memory(3), []
        for t in range(6):
            memory = memory * (~firsts[t]).float()[:, None]
            action, memory = network(
                torch.from_numpy(images[t]), torch.from_numpy(states[t]), memory
            )
            stepped.append(action)
        fresh, _ = network(
            torch.from_numpy(images[3, 1:2]),
            torch.from_numpy(states[3, 1:2]),
            network.initial_memory(1),
        )
    assert torch.allclose(unrolled, torch.stack(stepped), atol=1e-6)
    assert torch.allclose(unrolled[3, 1], fresh[0], atol=1e-6)
    assert not torch.allclose(
        unrolled[3, 0],
        network(
            torch.from_numpy(images[3, :1]),
            torch.from_numpy(states[3, :1]),
            network.initial_memory(1),
        )[0][0],
        atol=1e-4,
    )  # env 0 remembers its earlier steps


def test_sim_evaluation_zeroes_the_memory_of_envs_whose_episode_just_began():
    network = trained_network()
    images, states = observations(3, 2)
    env = SimpleNamespace(steps=np.array([0, 0]))
    act = policy_actor(network, env)
    act({"image": images[0], "state": states[0]})
    act({"image": images[1], "state": states[1]})
    env.steps = np.array([2, 0])  # env 1 was reset after its last step
    carried = act({"image": images[2], "state": states[2]})
    fresh = MemoryRunner(network)(images[2], states[2])
    assert np.allclose(carried[1], fresh[1], atol=1e-6)
    assert not np.allclose(carried[0], fresh[0], atol=1e-4)


def test_onnx_carries_the_memory_like_torch_and_reset_forgets_it(tmp_path):
    network = trained_network()
    save_policy(tmp_path, network, CONTRACT)
    export_onnx(tmp_path)
    exported, runner = OnnxPolicy(tmp_path), MemoryRunner(network)
    images, states = observations(5, 2)
    for t in range(5):
        assert np.abs(exported(images[t], states[t]) - runner(images[t], states[t])).max() < 1e-5
    carried = exported(images[0], states[0])
    exported.reset()
    fresh = exported(images[0], states[0])
    assert np.allclose(fresh, MemoryRunner(network)(images[0], states[0]), atol=1e-5)
    assert not np.allclose(carried, fresh, atol=1e-4)
    assert exported(images[0, 0], states[0, 0]).shape == (6,)  # one observation


def test_the_torch_loader_serves_a_stateful_runtime_and_the_contract_names_the_network(tmp_path):
    network = trained_network()
    save_policy(tmp_path, network, CONTRACT)
    runtime, contract = load_runtime_policy(tmp_path)
    assert contract.architecture == "recurrent"
    loaded, _ = load_policy(tmp_path)
    assert isinstance(loaded, RecurrentVisualPolicy)
    images, states = observations(2, 1)
    runtime(images[0, 0], states[0, 0])
    carried = runtime(images[1, 0], states[1, 0])
    runtime.reset()
    assert not np.allclose(carried, runtime(images[1, 0], states[1, 0]), atol=1e-4)


def memory_task(episodes=16, steps=8, seed=0):
    """Every step's label is the sign of the first frame's brightness; later frames are
    grey noise: only a policy that remembers can fit it."""
    rng = np.random.default_rng(seed)
    sign = rng.choice([-1.0, 1.0], episodes)
    images = rng.integers(100, 156, (steps, episodes, 16, 16, 3)).astype(np.uint8)
    images[0] = np.where(sign > 0, 255, 0)[:, None, None, None].astype(np.uint8)
    states = np.zeros((steps, episodes, 12), dtype=np.float32)
    labels = np.repeat((0.8 * sign)[None, :, None], 6, axis=2).repeat(steps, 0)
    firsts = np.zeros((steps, episodes), dtype=bool)
    firsts[0] = True
    return list(images), list(states), list(labels.astype(np.float32)), list(firsts)


@pytest.mark.learning
def test_sequence_regression_learns_what_only_memory_can_tell():
    images, states, labels, firsts = memory_task()
    args = distill.Args(student_updates=150, sequence_batch=8, student_lr=3e-3)
    torch.manual_seed(0)
    recurrent = RecurrentVisualPolicy()
    optimizer = torch.optim.Adam(recurrent.parameters(), lr=args.student_lr)
    fit_sequences(recurrent, optimizer, images, states, labels, firsts, 8, args)
    runner = MemoryRunner(recurrent.eval())
    remembered = np.stack([runner(images[t], states[t]) for t in range(8)])
    torch.manual_seed(0)
    memoryless = VisualPolicy()
    optimizer = torch.optim.Adam(memoryless.parameters(), lr=args.student_lr)
    fit_samples(memoryless, optimizer, images, states, labels, args)
    with torch.no_grad():
        guessed = memoryless(torch.from_numpy(images[-1]), torch.from_numpy(states[-1])).numpy()
    last_label = labels[-1]
    # The last step shows only noise: the recurrent student still knows the sign.
    assert np.mean(np.sign(remembered[-1, :, 0]) == np.sign(last_label[:, 0])) == 1.0
    assert np.abs(remembered[-1] - last_label).mean() < 0.3
    assert np.abs(guessed - last_label).mean() > 0.6


def test_a_tiny_recurrent_distill_run_ships_a_recurrent_policy(tmp_path):
    args = distill.args_for_task(
        "StackCube",
        out=str(tmp_path),
        progress=False,
        architecture="recurrent",
        **{**distill.QUICK, "dagger_rounds": 2, "student_updates": 2, "eval_episodes": 4},
    )
    summary = distill.main(args)
    runtime, contract = load_runtime_policy(summary["policy"])
    assert contract.architecture == "recurrent" and hasattr(runtime, "reset")
