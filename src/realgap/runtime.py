"""Process-wide runtime settings shared by every command."""

from __future__ import annotations

import os

from realgap.errors import ConfigError


def available_cores() -> int:
    """Cores this process may run on (its affinity where the OS says, as in a container
    or under ``taskset``; else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1


def headless_rendering() -> bool:
    """Whether any thread may render: a headless OpenGL (EGL or OSMesa). GLFW wants its
    contexts on the main thread (on macOS), so with it rendering stays there."""
    return os.environ.get("MUJOCO_GL", "").lower() in ("egl", "osmesa")


def concurrent_rendering() -> bool:
    """Whether a second thread may render beside this one: a second core, and a
    headless OpenGL (EGL or OSMesa; GLFW wants its contexts on the main thread on
    macOS)."""
    return available_cores() >= 2 and headless_rendering()


def configure_rendering() -> None:
    """Render offscreen with EGL unless the user chose a backend already.

    Must run before ``mujoco`` is imported: MuJoCo reads MUJOCO_GL at import.
    """
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])


def configure_torch_threads() -> None:
    """Run torch on one intra-op thread (``REALGAP_TORCH_THREADS`` overrides).

    Torch's default thread pool costs more in synchronisation than it gains on
    these tiny batched MLPs, and fights the renderer's and OpenCV's threads.
    """
    import torch  # here, not at the top: `import realgap` stays light

    text = os.environ.get("REALGAP_TORCH_THREADS", "1")
    if not text.strip().isdigit() or int(text) < 1:
        raise ConfigError(f"REALGAP_TORCH_THREADS must be a whole number >= 1, got {text!r}")
    torch.set_num_threads(int(text))
