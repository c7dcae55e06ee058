"""The task argument's help text, shared by the commands that take a task."""

TASK_HELP = (
    "task name: Reach, ReachCan, PickCube, PickCan, PlaceCube, PlaceCan, StackCube, "
    "StackCan (the reference's ReachCube, LiftCube and LiftCan work too)"
)
"""Written out so ``realgap --help`` needs no mujoco; a test checks it against the registry."""
