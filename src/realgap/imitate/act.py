"""LeRobot's ACT as a realgap imitation policy (``realgap imitate --policy act``).

The transformer and CVAE are LeRobot's own (``ACTPolicy``), with their processor
pipelines for normalization; realgap supplies the data (its in-memory frames and
its sim/real :class:`~realgap.imitate.train.MixSampler`, since LeRobot cannot mix
two datasets at a ratio) and the policy folder: LeRobot's ``save_pretrained``
files plus realgap's ``contract.json``, so the bridge deploys it like any policy.

Sized for a CPU by default (:data:`CPU_SIZE`: 12.3M parameters, 11.2M of them the
ResNet-18 backbone, instead of ~52M);
``pretrained_backbone_weights`` is always None, because the default downloads
ImageNet weights and a 16x16 image gains little from them. Needs the ``real``
extra (LeRobot, Python >= 3.12); all LeRobot names come from
:mod:`realgap.lerobot_api`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from realgap.imitate.dataset import ACTION, IMAGE, STATE, feature_stats
from realgap.lerobot_api import import_act
from realgap.policy.contract import PolicyContract

CPU_SIZE = {
    "dim_model": 128,
    "n_heads": 4,
    "dim_feedforward": 512,
    "n_encoder_layers": 2,
    "n_decoder_layers": 1,
    "n_vae_encoder_layers": 2,
}
"""ACT's transformer shrunk to train in minutes on a laptop CPU."""


def act_statistics(images: np.ndarray, states: np.ndarray, actions: np.ndarray) -> dict:
    """LeRobot-format statistics of the frames ACT will see (images as float 0..1)."""
    pixels = images.reshape(-1, 3).astype(np.float32) / 255.0
    stats = {
        IMAGE: feature_stats(pixels, image=True, count=len(images)),
        STATE: feature_stats(states),
        ACTION: feature_stats(actions),
    }
    return {
        f: {k: torch.tensor(v, dtype=torch.float32) for k, v in s.items()} for f, s in stats.items()
    }


def as_lerobot_batch(image_uint8_nhwc: torch.Tensor, state: torch.Tensor) -> dict:
    """realgap's observation -> LeRobot's keys (images CHW float in 0..1)."""
    return {
        IMAGE: image_uint8_nhwc.permute(0, 3, 1, 2).float() / 255.0,
        STATE: state.float(),
    }


class ACTLearner:
    """LeRobot's ACT plus its processors, trained on realgap batches."""

    def __init__(self, policy, preprocessor, postprocessor):
        self.policy, self.preprocessor, self.postprocessor = policy, preprocessor, postprocessor

    @classmethod
    def fresh(
        cls,
        image_size: int,
        chunk: int,
        n_action_steps: int,
        ensemble: float | None,
        stats: dict,
        **size,
    ):
        api = import_act()
        features = api.FeatureType
        config = api.ACTConfig(
            input_features={
                IMAGE: api.PolicyFeature(features.VISUAL, (3, image_size, image_size)),
                STATE: api.PolicyFeature(features.STATE, (12,)),
            },
            output_features={ACTION: api.PolicyFeature(features.ACTION, (6,))},
            chunk_size=chunk,
            # LeRobot's temporal ensembling plans every step and requires this to be 1.
            n_action_steps=1 if ensemble is not None else n_action_steps,
            temporal_ensemble_coeff=ensemble,
            pretrained_backbone_weights=None,
            device="cpu",
            push_to_hub=False,
            **{**CPU_SIZE, **size},
        )
        pre, post = api.make_pre_post_processors(config, dataset_stats=stats)
        return cls(api.ACTPolicy(config), pre, post)

    @classmethod
    def load(cls, folder: str | Path):
        """Load a saved ACT policy folder onto the CPU."""
        api = import_act()
        policy = api.ACTPolicy.from_pretrained(str(folder))
        policy.config.device = "cpu"
        pre, post = api.make_pre_post_processors(
            policy.config,
            pretrained_path=str(folder),
            preprocessor_overrides={"device_processor": {"device": "cpu"}},
        )
        return cls(policy.to("cpu"), pre, post)

    def parameters(self):
        return self.policy.get_optim_params()

    def train(self, mode: bool = True):
        self.policy.train(mode)
        return self

    def loss(self, image, state, target, pad) -> torch.Tensor:
        """ACT's L1 (+ KL) loss on a chunk of absolute targets; ``pad`` masks the
        steps past an episode's end, as LeRobot's ``action_is_pad``."""
        batch = {**as_lerobot_batch(image, state), ACTION: target, "action_is_pad": pad}
        loss, _ = self.policy.forward(self.preprocessor(batch))
        return loss

    def save(self, folder: str | Path, contract: PolicyContract) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.policy.save_pretrained(folder)
        self.preprocessor.save_pretrained(folder)
        self.postprocessor.save_pretrained(folder)
        (folder / "contract.json").write_text(json.dumps(contract.to_dict(), indent=2))
        return folder


class ACTRunner:
    """``(image, state) -> joint targets`` for one observation or a batch; ACT's own
    action queue plays ``n_action_steps`` of each chunk. ``reset()`` empties it."""

    def __init__(self, learner: ACTLearner):
        self.learner = learner.train(False)
        self.batch_size = None

    def reset(self) -> None:
        self.learner.policy.reset()
        self.batch_size = None

    def __call__(self, image, state) -> np.ndarray:
        image, state = np.asarray(image, dtype=np.uint8), np.asarray(state, dtype=np.float32)
        if image.ndim == 3:
            return self(image[None], state[None])[0]
        if len(image) != self.batch_size:  # ACT's queue holds actions for the old batch
            self.reset()
            self.batch_size = len(image)
        batch = as_lerobot_batch(torch.from_numpy(image), torch.from_numpy(state))
        with torch.no_grad():
            action = self.learner.policy.select_action(self.learner.preprocessor(batch))
            return self.learner.postprocessor(action).numpy()


def load_act_policy(folder: str | Path) -> ACTRunner:
    return ACTRunner(ACTLearner.load(folder))
