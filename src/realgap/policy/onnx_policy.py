"""ONNX export, and an inference path that needs only onnxruntime + numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from realgap.policy.contract import ContractMismatch
from realgap.policy.folder import WEIGHTS, check_weights, load_contract, weights_digest

ONNX_FILE = "policy.onnx"
MEMORY_IN, MEMORY_OUT = "memory", "next_memory"
"""A recurrent policy's extra input and output: what it carries between decisions."""
DIGEST_KEY = "realgap.weights_sha256"
"""ONNX metadata: the digest of the policy.pt the model was exported from."""


class StaleExport(ContractMismatch):
    """policy.onnx does not come from the folder's current weights."""

    def __init__(self, problem: str):
        super().__init__(f"{problem}: run `realgap export` on the policy folder again")


def export_onnx(folder: str | Path) -> Path:
    """Export ``folder``'s policy to ``folder/policy.onnx`` (opset 17)."""
    import onnx
    import torch

    from realgap.policy.checkpoint import load_policy  # torch: only when exporting
    from realgap.policy.networks import is_recurrent

    folder = Path(folder)
    policy, contract = load_policy(folder)
    size = policy.image_size
    inputs = [torch.zeros(1, size, size, 3, dtype=torch.uint8), torch.zeros(1, 12)]
    input_names, output_names = ["image", "state"], ["action"]
    if is_recurrent(policy):  # the memory goes in and comes out
        inputs.append(policy.initial_memory(1))
        input_names.append(MEMORY_IN)
        output_names.append(MEMORY_OUT)
    path = folder / ONNX_FILE
    torch.onnx.export(
        policy,
        tuple(inputs),
        str(path),
        input_names=input_names,
        output_names=output_names,
        dynamic_axes={name: {0: "batch"} for name in input_names + output_names},
        opset_version=17,
        dynamo=False,
    )
    # Tie the export to the weights it came from: a later policy.pt makes it stale.
    model = onnx.load(str(path))
    entry = model.metadata_props.add()
    entry.key, entry.value = DIGEST_KEY, weights_digest(check_weights(folder, contract))
    onnx.save(model, str(path))
    return path


class OnnxPolicy:
    """Runs an exported policy with onnxruntime: ``policy(image, state) -> action``."""

    def __init__(self, folder: str | Path, threads: int = 1):
        import onnxruntime

        folder = Path(folder)
        path = folder / ONNX_FILE
        if not path.exists():
            raise FileNotFoundError(f"{path} not found; run `realgap export {folder}` first")
        contract = load_contract(folder)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            self.session = onnxruntime.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:  # onnxruntime raises its own types for a bad file
            raise ContractMismatch(f"{path}: not a readable ONNX model ({error})") from None
        exported_from = self.session.get_modelmeta().custom_metadata_map.get(DIGEST_KEY)
        if exported_from is None:
            raise StaleExport(f"{path} does not say which weights it came from")
        if contract.weights_sha256 and exported_from != contract.weights_sha256:
            raise StaleExport(f"{path} was exported from other weights than this policy's")
        weights = folder / WEIGHTS
        if weights.exists() and weights_digest(weights) != exported_from:
            raise StaleExport(f"{path} was exported from other weights than {weights}")
        size = contract.image_size
        declared = self.session.get_inputs()[0].shape[1:3]
        if list(declared) != [size, size]:
            raise ContractMismatch(f"{path}: takes {declared} images, contract says {size}")
        self.contract = contract.to_dict()
        inputs = {item.name: item for item in self.session.get_inputs()}
        self.memory_size = inputs[MEMORY_IN].shape[1] if MEMORY_IN in inputs else 0
        self.memory: np.ndarray | None = None

    def reset(self) -> None:
        """Forget the episode so far (a recurrent policy's memory; else nothing)."""
        self.memory = None

    def __call__(self, image: np.ndarray, state: np.ndarray) -> np.ndarray:
        image = np.ascontiguousarray(image, dtype=np.uint8)
        state = np.ascontiguousarray(state, dtype=np.float32)
        if image.ndim == 3:
            return self(image[None], state[None])[0]
        if not self.memory_size:
            return self.session.run(["action"], {"image": image, "state": state})[0]
        if self.memory is None or len(self.memory) != len(image):
            self.memory = np.zeros((len(image), self.memory_size), dtype=np.float32)
        feeds = {"image": image, "state": state, MEMORY_IN: self.memory}
        action, self.memory = self.session.run(["action", MEMORY_OUT], feeds)
        return action


def measure_latency(folder: str | Path, decisions: int = 2000) -> dict:
    """Per-decision latency of ``folder``'s ONNX policy on one CPU thread (exported
    first if needed), and its parameter count."""
    import time

    import onnx

    folder = Path(folder)
    if not (folder / ONNX_FILE).exists():
        export_onnx(folder)
    policy = OnnxPolicy(folder)
    size = policy.contract["image_size"]
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
    state = rng.standard_normal(12).astype(np.float32)
    for _ in range(50):  # warm-up
        policy(image, state)
    times = []
    for _ in range(decisions):
        started = time.perf_counter()
        policy(image, state)
        times.append(time.perf_counter() - started)
    times_ms = np.array(times) * 1e3
    model = onnx.load(str(folder / ONNX_FILE))
    parameters = int(sum(np.prod(t.dims) for t in model.graph.initializer))
    return {
        "policy": str(folder),
        "parameters": parameters,
        "mean_ms": round(float(times_ms.mean()), 4),
        "p99_ms": round(float(np.percentile(times_ms, 99)), 4),
        "runtime": "onnxruntime",
    }
