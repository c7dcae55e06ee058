"""The policy-loader registry: a policy folder -> ``policy(image, state) -> action``.

Every policy folder holds a ``contract.json``; its kind (``visual`` for the RL and
distill recipes, ``chunk`` and ``act`` for imitation) picks the loader. Loaders
are registered with :func:`register_policy_loader`, or by other packages under
the ``realgap.policy_loaders`` entry point (how ``realgap.imitate`` adds its
kinds), so the deployment code never imports the code that trained a policy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import torch

from realgap.policy.checkpoint import load_contract, load_policy
from realgap.policy.contract import ContractMismatch, PolicyContract
from realgap.policy.folder import WEIGHTS
from realgap.policy.networks import MemoryRunner, is_recurrent
from realgap.policy.onnx_policy import ONNX_FILE, OnnxPolicy, StaleExport

ENTRY_POINT_GROUP = "realgap.policy_loaders"
log = logging.getLogger(__name__)

Runtime = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``policy(image, state) -> action`` for one observation or a batch; stateful
policies (action chunking) also have ``reset()``, called at every episode start."""

_LOADERS: dict[str, Callable[[Path], Runtime]] = {}


def register_policy_loader(kind: str):
    """Decorator: ``loader(folder) -> Runtime`` serves policies of ``kind``."""

    def register(loader: Callable[[Path], Runtime]):
        _LOADERS[kind] = loader
        return loader

    return register


def policy_kind(contract: PolicyContract) -> str:
    """``visual``, or the imitation policy's kind (``chunk``, ``act``) from its contract."""
    extra = contract.extra
    if "kind" in extra:
        return str(extra["kind"])
    if extra.get("recipe") == "imitate":
        return str(extra.get("policy", "chunk"))
    return "visual"


def _loader(kind: str) -> Callable[[Path], Runtime] | None:
    if kind not in _LOADERS:
        for entry in entry_points(group=ENTRY_POINT_GROUP, name=kind):
            _LOADERS[kind] = entry.load()
    return _LOADERS.get(kind)


def load_runtime_policy(folder: str | Path) -> tuple[Runtime, PolicyContract]:
    """The runnable policy in ``folder`` and its contract."""
    folder = Path(folder)
    contract = load_contract(folder)
    kind = policy_kind(contract)
    loader = _loader(kind)
    if loader is None:
        known = sorted({*_LOADERS, *(e.name for e in entry_points(group=ENTRY_POINT_GROUP))})
        raise ContractMismatch(
            f"{folder}: no loader for policy kind {kind!r} (known: {known}); is realgap "
            "installed (`pip install -e .` registers the imitation loaders)?"
        )
    return loader(folder), contract


@register_policy_loader("visual")
def load_visual_policy(folder: Path) -> Runtime:
    """The ONNX export (onnxruntime + numpy only) when it comes from the folder's
    weights, else the torch weights. An export of other weights is refused; one that
    does not say where it came from (before realgap stored digests) is passed over."""
    if (folder / ONNX_FILE).exists():
        try:
            return OnnxPolicy(folder)
        except StaleExport as stale:
            if (folder / WEIGHTS).exists() and "does not say" in str(stale):
                log.warning("%s; using policy.pt", stale)
            else:
                raise
    network, _ = load_policy(folder)
    if is_recurrent(network):
        return MemoryRunner(network)

    def act(image, state):
        image, state = np.asarray(image, dtype=np.uint8), np.asarray(state, dtype=np.float32)
        if image.ndim == 3:
            return act(image[None], state[None])[0]
        with torch.no_grad():
            return network(torch.from_numpy(image), torch.from_numpy(state)).numpy()

    return act
