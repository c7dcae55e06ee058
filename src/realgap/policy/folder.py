"""A policy folder without torch: its file names, its contract and the weights digest.

The ONNX runtime path (:mod:`realgap.policy.onnx_policy`) needs only these, so
running an exported policy never imports torch.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from realgap.policy.contract import ContractMismatch, PolicyContract
from realgap.sim.twin import read_json_object

WEIGHTS = "policy.pt"
CONTRACT = "contract.json"


def weights_digest(path: str | Path) -> str:
    """sha256 of a weights file: what a contract and an ONNX export are tied to."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_contract(folder: str | Path) -> PolicyContract:
    """The contract in a policy folder; a missing, unreadable or invalid one is refused
    with the file named."""
    path = Path(folder) / CONTRACT
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {CONTRACT}; is this a realgap policy folder?")
    data = read_json_object(path, ContractMismatch, "policy contract")
    try:
        return PolicyContract.from_dict(data)
    except ContractMismatch as error:
        raise ContractMismatch(f"{path}: {error}") from None


def check_weights(folder: Path, contract: PolicyContract) -> Path:
    """``policy.pt`` exists and is the file ``contract`` was saved with."""
    weights = folder / WEIGHTS
    if not weights.is_file():
        raise FileNotFoundError(f"{folder}: no {WEIGHTS}")
    if contract.weights_sha256 and weights_digest(weights) != contract.weights_sha256:
        raise ContractMismatch(
            f"{weights} is not the file its contract.json was saved with (weights changed "
            "after training, or the contract was copied from another policy)"
        )
    return weights
