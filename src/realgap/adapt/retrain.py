"""Whether ``realgap adapt`` retrains, and the distill run that does: the old policy
and the teacher judged in the arm's twin first, then a warm start in that twin at
the arm's speed, ended by the budget or the twin's plateau."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from realgap.adapt.config import QUICK_BUDGET_S, AdaptConfig
from realgap.adapt.decide import retrain_decision
from realgap.adapt.teacher import teacher_check
from realgap.eval.matched import evaluate
from realgap.runs import RunFolder
from realgap.speed import DeploySpeed
from realgap.train import distill

RETRAIN_TEACHER_STEPS = 100_000
"""PPO steps to fine-tune a reused teacher when the arm's physics differ."""
PLATEAU_EVALS = 3
"""A retraining stops after this many evaluations in the arm's twin without a new best."""
RETRAIN_ROUNDS = 1_000
"""DAgger rounds to allow when retraining: the budget, not the task's from-scratch round
count, ends it (PickCube's 16 rounds take about 2 of the default 10 minutes)."""


def retraining_needed(
    config: AdaptConfig,
    task: str,
    layout,
    trials: int,
    seen,
    speed,
    run,
    before: dict,
    scripted_teacher: bool = True,
) -> dict:
    """Whether the arm's differences need a retraining (:func:`retrain_decision`): the
    old policy in the arm's twin (with the bridge's calibration) and in the nominal
    twin, both at the arm's speed, and ``before``, its result on the arm. Before a
    retraining, the scripted expert (the teacher) runs in both twins: where it scores
    below the old policy in the arm's twin, the retraining would distill a worse
    teacher, so there is none (:func:`~realgap.adapt.teacher.teacher_check`; an
    unmeasured cube friction counts at its best for the teacher, since the retraining
    draws it). A PPO teacher is not judged so."""
    if config.quick:
        return {"retrain": True, "note": "quick run: retraining regardless"}
    common = dict(seed=config.seed, earlier="overwrite", speed=speed)
    nominal = evaluate(config.policy, "sim", layout, trials, out=run.file("old_nominal"), **common)
    twin = evaluate(
        config.policy, "sim", layout, trials, out=run.file("old_twin"), calibration=seen, **common
    )
    decision = retrain_decision(
        nominal["overall"]["success_rate"],
        twin["overall"]["success_rate"],
        before["success_rate"],
    )
    if decision["retrain"] and scripted_teacher:
        expert = teacher_check(task, seen, speed, seed=config.seed)
        decision["expert"] = expert
        decision["note"] += (
            f"; the teacher (the scripted expert) scores {expert['arm_twin']:.0%} in the "
            f"arm's twin ({expert['nominal']:.0%} in the nominal one)"
        )
        if expert["friction_note"]:
            decision["note"] += "; " + expert["friction_note"]
        if expert["best"] < decision["arm_twin"]:
            decision["retrain"] = False
            decision["note"] += (
                ", less than the policy there: not retraining (it would learn from a worse teacher)"
            )
    return decision


def retrain_args(
    config: AdaptConfig,
    task: str,
    run: RunFolder,
    physics: list[str],
    speed: DeploySpeed | None = None,
):
    """The distill ``Args`` that retrain ``task`` in the arm's twin: the task's own
    defaults, warm-started, the teacher reused or fine-tuned, ended by the budget; at
    ``speed`` (the arm's: its episodes and evaluations), when given."""
    teacher = _teacher_of(Path(config.policy))
    overrides = {
        "out": str(run.file("train")),
        "seed": config.seed,
        "twin": str(run.file("training_calibration.json")),
        "init_student": str(config.policy),
        "time_budget_s": QUICK_BUDGET_S if config.quick else config.budget_s,
    }
    if speed is not None:
        hz, fraction = speed.control_hz, speed.action_fraction
        widths = run.file("speed.toml")
        widths.parent.mkdir(parents=True, exist_ok=True)
        widths.write_text(
            "# The arm's deploy speed: the retraining's episodes run at it.\n[randomization]\n"
            f"control_hz = [{hz!r}, {hz!r}]\naction_fraction = [{fraction!r}, {fraction!r}]\n"
            "speed_p = 1.0\n"
        )
        overrides.update(randomization=str(widths), eval_speed=(hz, fraction))
    if teacher is not None:
        overrides["init_teacher"] = str(teacher)
        overrides["teacher_steps"] = RETRAIN_TEACHER_STEPS if physics else 0
    args = distill.args_for_task(task, **overrides)
    args = replace(
        args,
        dagger_rounds=max(args.dagger_rounds, RETRAIN_ROUNDS),
        plateau_evals=PLATEAU_EVALS,
        final_evaluation=False,  # step 5 evaluates it in the arm's twin, on the layout
    )
    if args.teacher != "ppo":
        # A scripted teacher reads the true state: nothing to reuse or fine-tune.
        args = replace(args, init_teacher=None)
    if config.quick:
        quick = dict(distill.QUICK)
        if teacher is not None:
            quick["teacher_steps"] = min(quick["teacher_steps"], args.teacher_steps)
        args = replace(args, **quick)
    return args


def teacher_plan(args) -> str:
    """What the retraining does with its teacher, in words for the console."""
    if args.teacher != "ppo":
        return "the scripted expert (privileged, nothing to retrain)"
    if args.init_teacher is None:
        return "trained from scratch (no teacher.pt next to the policy)"
    verb = "fine-tuned" if args.teacher_steps else "reused as is"
    return f"{args.init_teacher} {verb}"


def _teacher_of(policy: Path) -> Path | None:
    """The run's ``teacher.pt`` next to a policy folder, if it has one."""
    for candidate in (policy.parent / "teacher.pt", policy / "teacher.pt"):
        if candidate.is_file():
            return candidate
    return None
