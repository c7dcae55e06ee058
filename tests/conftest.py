"""Shared test setup: offscreen rendering and single-threaded torch, as the CLI uses."""

from realgap.runtime import configure_rendering, configure_torch_threads

configure_rendering()
configure_torch_threads()
