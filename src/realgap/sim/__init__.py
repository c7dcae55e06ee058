"""The SO-101 digital twin: model, tasks, randomization, batched envs, wrist camera.

(The offscreen GL backend is chosen in ``realgap/__init__.py``, before any module
can import MuJoCo.)"""
