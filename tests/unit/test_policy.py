"""Checkpoints load anywhere, contracts are enforced, ONNX agrees with torch."""

import json

import numpy as np
import pytest
import torch

from realgap.policy.checkpoint import WEIGHTS, load_policy, save_policy
from realgap.policy.contract import ContractMismatch, PolicyContract
from realgap.policy.folder import weights_digest
from realgap.policy.networks import DeskInvariantPolicy, VisualPolicy, parameter_count
from realgap.policy.onnx_policy import OnnxPolicy, export_onnx

CONTRACT = PolicyContract(
    task="Reach", image_size=16, control_hz=10.0, action_scale=(0.1, 0.1, 0.1, 0.1, 0.1, 0.2)
)


def inputs(n=3, size=16):
    rng = np.random.default_rng(0)
    return (
        rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8),
        rng.standard_normal((n, 12)).astype(np.float32),
    )


def test_parameter_count_is_about_300k():
    assert 250_000 < parameter_count(VisualPolicy()) < 350_000


STUDENTS = {"student": VisualPolicy, "desk_invariant": DeskInvariantPolicy}
"""The visual students' architectures by the name the contract records."""


@pytest.mark.parametrize("architecture", sorted(STUDENTS))
def test_round_trip_restores_outputs_and_contract(tmp_path, architecture):
    policy = STUDENTS[architecture]()
    policy.state_norm.update(torch.randn(64, 12) * 3)
    save_policy(tmp_path, policy, CONTRACT)
    loaded, contract = load_policy(tmp_path, expect=CONTRACT)
    image, state = map(torch.from_numpy, inputs())
    # The same weights on the same inputs: the same numbers, bit for bit.
    assert torch.equal(policy(image, state), loaded(image, state))
    assert contract == CONTRACT
    assert contract.architecture == architecture and type(loaded) is STUDENTS[architecture]


@pytest.fixture
def fake_cuda_tags():
    """Make torch.save tag CPU storages as 'cuda:0', as a GPU-saved checkpoint is."""
    state = {"on": False}

    def tagger(obj):
        return "cuda:0" if state["on"] and obj.device.type == "cpu" else None

    torch.serialization.register_package(0, tagger, lambda obj, location: None)
    yield state
    state["on"] = False


def test_gpu_saved_checkpoint_loads_on_cpu(tmp_path, fake_cuda_tags):
    policy = VisualPolicy()
    save_policy(tmp_path, policy, CONTRACT)
    payload = torch.load(tmp_path / WEIGHTS, map_location="cpu", weights_only=True)
    fake_cuda_tags["on"] = True
    torch.save(payload, tmp_path / WEIGHTS)  # the file now says its tensors live on cuda:0
    fake_cuda_tags["on"] = False
    # ...and its contract names that file, as save_policy on the GPU machine wrote it.
    contract = json.loads((tmp_path / "contract.json").read_text())
    contract["weights_sha256"] = weights_digest(tmp_path / WEIGHTS)
    (tmp_path / "contract.json").write_text(json.dumps(contract))
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            torch.load(tmp_path / WEIGHTS, weights_only=True)
    loaded, _ = load_policy(tmp_path)
    assert all(p.device.type == "cpu" for p in loaded.parameters())
    image, state = map(torch.from_numpy, inputs())
    assert torch.allclose(policy(image, state), loaded(image, state))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("image_size", 32),
        ("action_scale", (0.1,) * 6),
        ("control_hz", 15.0),
        ("joint_names", ("a", "b", "c", "d", "e", "f")),
        ("camera_fovy", 60.0),
    ],
)
def test_contract_mismatch_is_refused_naming_the_field(tmp_path, field, value):
    save_policy(tmp_path, VisualPolicy(), CONTRACT)
    world = PolicyContract(**{**CONTRACT.to_dict(), field: value})
    with pytest.raises(ContractMismatch, match=field):
        load_policy(tmp_path, expect=world)


def test_missing_policy_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"contract\.json"):
        load_policy(tmp_path)


@pytest.mark.parametrize("architecture", sorted(STUDENTS))
def test_onnx_matches_torch(tmp_path, architecture):
    policy = STUDENTS[architecture]()
    policy.state_norm.update(torch.randn(64, 12))
    save_policy(tmp_path, policy, CONTRACT)
    export_onnx(tmp_path)
    onnx_policy = OnnxPolicy(tmp_path)
    image, state = inputs(5)
    expected = policy(torch.from_numpy(image), torch.from_numpy(state)).detach().numpy()
    assert np.abs(onnx_policy(image, state) - expected).max() < 1e-5
    assert onnx_policy(image[0], state[0]).shape == (6,)


def test_a_desk_invariant_policy_sees_a_desk_of_any_colour_alike():
    # A desk of another colour and brightness: every channel offset by its own amount.
    rng = np.random.default_rng(1)
    image = rng.integers(60, 120, (4, 16, 16, 3)).astype(np.float32)
    other = image + np.array([-40.0, 10.0, 120.0])
    assert other.min() >= 0 and other.max() <= 255
    as_tensor = lambda x: torch.from_numpy(x.astype(np.uint8))  # noqa: E731
    invariant, plain = DeskInvariantPolicy(), VisualPolicy()
    with torch.no_grad():
        same = invariant.encoder(as_tensor(image)), invariant.encoder(as_tensor(other))
        differ = plain.encoder(as_tensor(image)), plain.encoder(as_tensor(other))
    assert torch.allclose(*same, atol=1e-4)
    assert not torch.allclose(*differ, atol=1e-2)
    assert parameter_count(invariant) == parameter_count(plain)


def test_the_contract_records_where_training_episodes_started(tmp_path):
    from realgap.errors import ConfigError
    from realgap.sim import robot
    from realgap.sim.batched_env import BatchedEnv
    from realgap.sim.tasks import make_task

    env = BatchedEnv("ReachCan", 1, render=False)
    contract = PolicyContract.for_env(env)
    env.close()
    assert contract.start_pose == pytest.approx(tuple(robot.KEYFRAMES["survey"]))
    folder = save_policy(tmp_path / "p", VisualPolicy(), contract)
    assert load_policy(folder)[1].episode_start == pytest.approx(contract.start_pose)
    # Saved before the record: every task started at ``start`` then.
    data = json.loads((folder / "contract.json").read_text())
    del data["start_pose"]
    assert PolicyContract.from_dict(data).episode_start == pytest.approx(robot.KEYFRAMES["start"])
    with pytest.raises(ContractMismatch, match=r"start_pose.*shoulder_lift"):
        PolicyContract("Reach", 16, 10.0, (0.1,) * 6, start_pose=(0.0, 9.0, 0.0, 0.0, 0.0, 0.0))
    with pytest.raises(ConfigError, match="start_pose: need 6"):
        make_task("Reach", make_task("Reach").config_type(start_pose=(0.0, 0.0)))
    assert make_task("PickCube").config.start_pose == tuple(robot.KEYFRAMES["start"])
