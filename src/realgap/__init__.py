"""realgap: train SO-101 policies in simulation, run them on the arm, measure the reality gap."""

from realgap.runtime import configure_rendering

__version__ = "0.1.0"

# MuJoCo picks its GL backend when it is first imported, by any realgap module:
# choose offscreen EGL before that can happen.
configure_rendering()
