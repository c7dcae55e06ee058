"""Process-wide runtime settings shared by every command."""

from __future__ import annotations

import os


def available_cores() -> int:
    """Cores this process may run on (its affinity where the OS says, as in a container
    or under ``taskset``; else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1


def configure_rendering() -> None:
    """Render offscreen with EGL unless the user chose a backend already.

    Must run before ``mujoco`` is imported: MuJoCo reads MUJOCO_GL at import.
    """
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])


def configure_torch_threads() -> None:
    """Use one intra-op thread per core for the small tensors realgap trains.

    Torch's default thread pool costs more in synchronisation than it gains on
    these tiny batched MLPs; ``REALGAP_TORCH_THREADS`` overrides.
    """
    import torch

    torch.set_num_threads(int(os.environ.get("REALGAP_TORCH_THREADS", "1")))
