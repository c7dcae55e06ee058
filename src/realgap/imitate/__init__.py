"""Imitation learning: demonstrations, a chunked-action BC policy, sim+real co-training."""
