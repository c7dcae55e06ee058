"""realgap: train SO-101 policies in simulation, run them on the real arm, measure the gap."""

__version__ = "0.1.0"
