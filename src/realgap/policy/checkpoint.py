"""Portable checkpoints: CPU tensors, a contract beside the weights, checked at load.

Layout of a policy folder::

    policy.pt        state_dict of the VisualPolicy, every tensor on the CPU
    contract.json    the PolicyContract it was trained with
    policy.onnx      (after ``realgap export``) the same network for onnxruntime

Tensors are moved to the CPU before saving *and* mapped to the CPU on load,
so a checkpoint written on a GPU machine loads on a CPU-only laptop.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from realgap.policy.contract import PolicyContract
from realgap.policy.networks import VisualPolicy

WEIGHTS = "policy.pt"
CONTRACT = "contract.json"


def save_policy(folder: str | Path, policy: VisualPolicy, contract: PolicyContract) -> Path:
    """Write weights (on CPU) and contract; returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cpu_state = {name: tensor.detach().cpu() for name, tensor in policy.state_dict().items()}
    torch.save({"state_dict": cpu_state, "image_size": policy.image_size}, folder / WEIGHTS)
    (folder / CONTRACT).write_text(json.dumps(contract.to_dict(), indent=2))
    return folder


def load_contract(folder: str | Path) -> PolicyContract:
    path = Path(folder) / CONTRACT
    if not path.exists():
        raise FileNotFoundError(f"{folder}: no {CONTRACT}; is this a realgap policy folder?")
    return PolicyContract.from_dict(json.loads(path.read_text()))


def load_policy(
    folder: str | Path, expect: PolicyContract | None = None, ignore: tuple[str, ...] = ()
) -> tuple[VisualPolicy, PolicyContract]:
    """Load a policy on the CPU; with ``expect``, refuse a mismatched contract."""
    folder = Path(folder)
    contract = load_contract(folder)
    if expect is not None:
        contract.check(expect, ignore=ignore)
    weights = folder / WEIGHTS
    if not weights.exists():
        raise FileNotFoundError(f"{folder}: no {WEIGHTS}")
    payload = torch.load(weights, map_location="cpu", weights_only=True)
    policy = VisualPolicy(image_size=int(payload["image_size"]))
    policy.load_state_dict(payload["state_dict"])
    policy.eval()
    return policy, contract
