"""The SO-101 digital twin: model, tasks, randomization, batched envs, wrist camera."""

from realgap.runtime import configure_rendering

# MuJoCo picks its GL backend at import: choose offscreen EGL before anything imports it.
configure_rendering()
