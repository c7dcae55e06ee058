"""Portable checkpoints: CPU tensors, a contract beside the weights, checked at load.

Layout of a policy folder::

    policy.pt        state_dict of the visual network, every tensor on the CPU
    contract.json    the PolicyContract it was trained with (and the network's
                     architecture, which the loader builds)
    policy.onnx      (after ``realgap export``) the same network for onnxruntime

Tensors are moved to the CPU before saving *and* mapped to the CPU on load,
so a checkpoint written on a GPU machine loads on a CPU-only laptop.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import torch
from torch import nn

from realgap.policy.contract import ContractMismatch, PolicyContract
from realgap.policy.folder import (
    CONTRACT,
    WEIGHTS,
    check_weights,
    load_contract,
    weights_digest,
)
from realgap.policy.networks import ARCHITECTURES, build_policy


def architecture_of(policy: nn.Module) -> str:
    """The registered name of a visual network's architecture."""
    for name, network_type in ARCHITECTURES.items():
        if type(policy) is network_type:
            return name
    raise TypeError(f"{type(policy).__name__} is not a registered policy architecture")


def save_policy(folder: str | Path, policy: nn.Module, contract: PolicyContract) -> Path:
    """Write weights (on CPU) and the contract, tied to them by their digest; the
    contract records the network's architecture."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cpu_state = {name: tensor.detach().cpu() for name, tensor in policy.state_dict().items()}
    torch.save({"state_dict": cpu_state, "image_size": policy.image_size}, folder / WEIGHTS)
    contract = replace(
        contract,
        architecture=architecture_of(policy),
        weights_sha256=weights_digest(folder / WEIGHTS),
    )
    (folder / CONTRACT).write_text(json.dumps(contract.to_dict(), indent=2))
    return folder


def load_policy(
    folder: str | Path, expect: PolicyContract | None = None, ignore: tuple[str, ...] = ()
) -> tuple[nn.Module, PolicyContract]:
    """Load a policy on the CPU; with ``expect``, refuse a mismatched contract. Corrupt,
    truncated or non-finite weights, and weights of another image size than the
    contract's, are refused with the file named."""
    folder = Path(folder)
    contract = load_contract(folder)
    if expect is not None:
        contract.check(expect, ignore=ignore)
    weights = check_weights(folder, contract)
    try:
        payload = torch.load(weights, map_location="cpu", weights_only=True)
        state, size = payload["state_dict"], int(payload["image_size"])
    except Exception as error:  # torch raises many types for a bad file
        raise ContractMismatch(f"{weights}: not a readable realgap checkpoint ({error})") from None
    if size != contract.image_size:
        raise ContractMismatch(
            f"{weights}: weights take {size}x{size} images, contract.json says "
            f"{contract.image_size}x{contract.image_size}"
        )
    try:
        policy = build_policy(contract.architecture, size)
    except ValueError as error:
        raise ContractMismatch(f"{folder / CONTRACT}: {error}") from None
    try:
        policy.load_state_dict(state)
    except (RuntimeError, TypeError, AttributeError) as error:
        raise ContractMismatch(f"{weights}: weights do not fit the network ({error})") from None
    bad = [name for name, tensor in state.items() if not torch.isfinite(tensor).all()]
    if bad:
        raise ContractMismatch(f"{weights}: NaN or inf in {bad[:3]}; the policy is unusable")
    policy.eval()
    return policy, contract
