"""Policies a laptop can run: networks, the observation/action contract, checkpoints, ONNX."""
