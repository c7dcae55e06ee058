"""The distill recipe's student phase: DAgger, round by round, with checkpoints.

Read top to bottom: each round the student drives (the teacher in round 0, and in the
``expert_driven`` envs), the teacher labels every visited state, the round's samples
join the aggregated buffer, the student is regressed on it (single steps, or whole
episodes for a recurrent student) and, every few rounds, evaluated -- a copy of it,
beside the rounds that follow (:mod:`realgap.train.evaluations`); the best evaluated
student is kept. At the end of a round a checkpoint is written when due (and when a
stop was requested): the envs' full state, the weights, the optimizer, every random
state and the round's samples as a chunk (:mod:`realgap.train.checkpoint`), so a
resumed run continues bit for bit.

``args`` is the distill recipe's ``Args``.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from rich.progress import Progress
from torch import nn

from realgap.policy.checkpoint import load_policy
from realgap.policy.networks import MemoryRunner, StateTeacher, build_policy, is_recurrent
from realgap.sim.batched_env import BatchedEnv
from realgap.sim.randomization import DomainRandomization
from realgap.sim.scripted import ScriptedController
from realgap.sim.tasks import make_task
from realgap.sim.twin import ControlParams, TwinParams
from realgap.speed import DeploySpeed
from realgap.train.checkpoint import Checkpointer, StopSignals
from realgap.train.common import (
    BestSnapshot,
    beyond_noise,
    evaluate,
    policy_actor,
    training_worlds,
)
from realgap.train.evaluations import Evaluated, EvaluationsBeside
from realgap.train.student_fit import WeightAverage, fit_samples, fit_sequences

BUFFERS = ("images", "states", "labels", "firsts", "memories")


def teacher_obs(obs: dict) -> torch.Tensor:
    """What the privileged teacher sees: the joint numbers and the privileged state."""
    return torch.from_numpy(np.concatenate([obs["state"], obs["privileged"]], axis=1))


def evaluation_world(args, twin) -> DomainRandomization:
    """Where the student is evaluated: exactly the twin, at ``eval_speed`` if given."""
    task_config = make_task(args.task).config
    world = DomainRandomization.none(
        twin or TwinParams(control=ControlParams(task_config.control_hz))
    )
    return world if args.eval_speed is None else world.at_speed(DeploySpeed(*args.eval_speed))


@dataclass
class Buffer:
    """The aggregated DAgger samples, one entry per env step (arrays of all envs), and
    the checkpoint chunks that hold them."""

    keep: int
    data: dict[str, list] = field(default_factory=lambda: {name: [] for name in BUFFERS})
    chunks: list[str] = field(default_factory=list)
    chunk_steps: list[int] = field(default_factory=list)
    unsaved: int = 0
    """Steps gathered since the last checkpoint's chunk."""

    def add(self, **entries) -> None:
        for name, value in entries.items():
            self.data[name].append(value)
        if "images" in entries:
            self.unsaved += 1

    def trim(self) -> None:
        for name in BUFFERS:
            self.data[name] = self.data[name][-self.keep :]
        # Chunks whose steps all fell out of the window are no longer needed.
        while self.chunks and sum(self.chunk_steps[1:]) >= self.keep:
            self.chunks.pop(0)
            self.chunk_steps.pop(0)

    def last_round(self, steps: int) -> dict[str, np.ndarray]:
        return {name: np.stack(values[-steps:]) for name, values in self.data.items() if values}


class DaggerLoop:
    """The student phase of one distill run (see the module docstring)."""

    def __init__(self, args, teacher: StateTeacher | None, checkpointer: Checkpointer):
        self.args, self.checkpointer = args, checkpointer
        randomization, twin = training_worlds(args)
        self.twin = twin
        self.env = BatchedEnv(
            args.task,
            args.student_envs,
            randomization=randomization,
            twin=twin,
            render=True,
            privileged=True,
            seed=args.seed + 2,
        )
        if teacher is None:
            expert = ScriptedController(self.env)
            self.label_for = lambda obs: expert.act()  # reads the env's true state
        else:
            self.label_for = lambda obs: teacher.act_deterministic(teacher_obs(obs)).numpy()
        if args.init_student:
            self.student, _ = load_policy(args.init_student)
            self.student.train()
        else:
            self.student = build_policy(args.architecture, self.env.config.image_size)
        self.optimizer = torch.optim.Adam(self.student.parameters(), lr=args.student_lr)
        decay = args.student_average
        self.average = WeightAverage(self.student, decay) if decay else None
        # What is evaluated, kept and returned: the weight average when there is one.
        self.shipped = self.average.module if self.average else self.student
        # Like PPO's, the student's success wobbles between rounds (PickCube: 94% at
        # round 12, 69% at 16): keep the best evaluated student.
        self.best = BestSnapshot(self.shipped)
        self.recurrent = is_recurrent(self.student)
        self.runner = MemoryRunner(self.student) if self.recurrent else None
        self.buffer = Buffer(keep=args.buffer_size // args.student_envs)
        self.obs, _ = self.env.reset(seed=args.seed + 2)
        self.driven = np.arange(args.student_envs) < round(args.expert_driven * args.student_envs)
        # Its env is built in the thread that evaluates; the caller builds its own for
        # the final evaluation and the contract (:meth:`evaluation_env`).
        self.evaluations = EvaluationsBeside(self.evaluation_env, self.score)
        self.round = 0
        self.stale = 0  # evaluations since the last one beyond the noise of its mark
        self.mark = -1.0  # the score of that evaluation
        self.last_success: float | None = None

    def evaluation_env(self) -> BatchedEnv:
        """An env of the world the student is evaluated in (:func:`evaluation_world`)."""
        args = self.args
        world = evaluation_world(args, self.twin)
        return BatchedEnv(args.task, 32, randomization=world, render=True, seed=args.seed + 3)

    def score(self, env: BatchedEnv, student: nn.Module) -> float:
        """The student's success rate in ``env`` (the same episodes every evaluation)."""
        args, act = self.args, policy_actor(student, env)
        check = self.evaluations.check  # a failing run stops it at its next step
        return evaluate(env, act, args.eval_episodes, args.seed + 9, lambda _: check())

    # -- one round ---------------------------------------------------------------------
    def collect(self) -> None:
        """``dagger_steps`` steps of every env: the student (or teacher) drives, the
        teacher labels."""
        args, env, student = self.args, self.env, self.student
        for _ in range(args.dagger_steps):
            first = env.steps == 0  # these envs' episodes begin now
            with torch.no_grad():
                label = self.label_for(self.obs)
                image = torch.from_numpy(self.obs["image"])
                state = torch.from_numpy(self.obs["state"])
                student.state_norm.update(state)
                if self.recurrent:
                    self.runner.reset(first)
                    carried = self.runner.memory  # what the student carries into this step
                    if carried is None:
                        carried = student.initial_memory(args.student_envs)
                    self.buffer.add(memories=carried.numpy().copy())
                    own = self.runner(self.obs["image"], self.obs["state"])
                else:
                    own = student(image, state).numpy()
            self.buffer.add(
                images=self.obs["image"], states=self.obs["state"], labels=label, firsts=first
            )
            # Round 0 follows the teacher; after that the student drives (but in the
            # ``expert_driven`` envs) and the teacher only labels, so the data covers
            # the student's own mistakes.
            action = label if self.round == 0 else np.where(self.driven[:, None], label, own)
            self.obs, *_ = env.step(action)

    def fit(self):
        args, data = self.args, self.buffer.data
        if self.recurrent:  # on whole episodes, so the memory learns what later steps need
            episode = self.env.config.episode_steps
            series = (data["images"], data["states"], data["labels"], data["firsts"])
            return fit_sequences(
                self.student,
                self.optimizer,
                *series,
                episode,
                args,
                self.average,
                data["memories"],
            )
        series = (data["images"], data["states"], data["labels"])
        return fit_samples(self.student, self.optimizer, *series, args, self.average)

    def run(
        self,
        log,
        deadline: float = float("inf"),
        stop: StopSignals | None = None,
        started: float | None = None,
        rows_written=lambda: 0,
    ) -> nn.Module | None:
        """Run the rounds left; returns the student to ship, or None when a stop was
        requested (after a checkpoint). ``rows_written()`` counts the metrics rows so
        far (a checkpoint records it); ``started`` is the run's start (perf_counter)."""
        started = time.perf_counter() if started is None else started
        finished = False
        try:
            shipped = self._rounds(log, deadline, stop or StopSignals(), started, rows_written)
            finished = True
            return shipped
        finally:
            # On an error or a second Ctrl-C, an evaluation in flight stops at its next
            # step rather than holding the exit for its half minute.
            self.evaluations.close(cancel=not finished)
            self.env.close()

    def _rounds(self, log, deadline, stop, started, rows_written) -> nn.Module | None:
        args = self.args
        with Progress(disable=not args.progress, transient=True) as progress:
            bar = progress.add_task(
                "student (DAgger)", total=args.dagger_rounds, completed=self.round
            )
            while self.round < args.dagger_rounds:
                self.collect()
                self.buffer.trim()
                loss, total = self.fit()
                self.round += 1
                log(
                    {
                        "phase": "student",
                        "update": self.round,
                        "samples": total,
                        "loss": float(loss.detach()),
                    }
                )
                progress.update(bar, advance=1)
                out_of_time = time.perf_counter() > deadline
                last = out_of_time or self.round == args.dagger_rounds
                if last or self.round % args.student_eval_every == 0:
                    # The evaluation started at the last due round is used now, here,
                    # whether it ran beside the rounds since or not (module docstring
                    # of realgap.train.evaluations).
                    ended = self.use(self.evaluations.settle(), log)
                    if ended is not None and not last:
                        log({"phase": ended, "update": self.round})
                        break
                    self.evaluations.start(self.shipped, self.round)
                    if last:  # nothing left to train beside it: the last one is used now
                        self.use(self.evaluations.settle(), log)
                    progress.update(bar, description=self.described())
                if out_of_time:
                    log({"phase": "student_budget_spent", "update": self.round})
                    break
                if stop.requested or self.checkpointer.due():
                    self.save_checkpoint(started, rows_written())
                if stop.requested:
                    # The caller writes the best policy so far and stops: a score not yet
                    # used counts there (the checkpoint keeps it unused, for the resume).
                    pending = self.evaluations.settle()
                    if pending is not None:
                        self.best.offer(pending.score, pending.student)
                    return None
        self.best.restore(self.shipped)
        log({"phase": "student_best", "success_rate": self.best.score})
        return self.shipped

    def use(self, evaluated: Evaluated | None, log) -> str | None:
        """Count a finished evaluation: its row, the best kept, the plateau. Returns why
        the retraining should end now (a metrics phase), or None."""
        if evaluated is None:
            return None
        args, success = self.args, evaluated.score
        log({"phase": "student", "update": evaluated.update, "success_rate": success})
        self.best.offer(success, evaluated.student)  # the best is kept, noise or not
        if beyond_noise(success, self.mark, args.eval_episodes):
            self.mark, self.stale = success, 0
        else:
            self.stale += 1
        self.last_success = success
        if args.plateau_evals and self.stale >= args.plateau_evals:
            return "student_plateau"
        if args.stop_at_success is not None and success >= args.stop_at_success:
            return "student_target_reached"
        return None

    def described(self) -> str:
        if self.last_success is None:
            return "student (DAgger)"
        return f"student (DAgger) success {self.last_success:.2f}"

    # -- checkpoints ---------------------------------------------------------------------
    def save_checkpoint(self, started: float, metrics_rows: int) -> None:
        """The loop's whole state after round ``self.round``, and the samples gathered
        since the last checkpoint as one chunk."""
        # A finished evaluation not used yet is kept for the round that uses it.
        pending = self.evaluations.settle()
        self.evaluations.keep(pending)
        steps = min(self.buffer.unsaved, len(self.buffer.data["images"]))
        if steps:
            name = self.checkpointer.save_chunk(
                f"round_{self.round:05d}", self.buffer.last_round(steps)
            )
            self.buffer.chunks.append(name)
            self.buffer.chunk_steps.append(steps)
            self.buffer.unsaved = 0
            self.buffer.trim()
        state = {
            "phase": "student",
            "round": self.round,
            "elapsed_s": time.perf_counter() - started,
            "metrics_rows": metrics_rows,
            "env": self.env.get_state(),
            "obs": self.obs,
            "student": self.student.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "average": None if self.average is None else self.average.module.state_dict(),
            "best": (self.best.score, self.best.state),
            "stale": self.stale,
            "mark": self.mark,
            "pending": None
            if pending is None
            else (pending.update, pending.score, pending.student.state_dict()),
            "memory": None if self.runner is None else self.runner.memory,
            "torch_rng": torch.get_rng_state(),
            "chunks": list(self.buffer.chunks),
            "chunk_steps": list(self.buffer.chunk_steps),
        }
        if self.checkpointer.save(state):
            self.checkpointer.prune(set(self.buffer.chunks))

    def restore(self, state: dict) -> None:
        """Continue from a checkpoint's state (the same arguments, checked by the caller)."""
        self.round = state["round"]
        self.env.set_state(state["env"])
        self.obs = state["obs"]
        self.student.load_state_dict(state["student"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.average is not None:
            self.average.module.load_state_dict(state["average"])
        self.best.score, self.best.state = state["best"]
        self.stale = state.get("stale", 0)
        self.mark = state.get("mark", self.best.score)  # older checkpoints: the best
        if state.get("pending") is not None:
            update, score, weights = state["pending"]
            student = copy.deepcopy(self.shipped)
            student.load_state_dict(weights)
            self.evaluations.keep(Evaluated(update, score, student))
        if self.runner is not None:
            self.runner.memory = state["memory"]
        # Every round's samples, in order, then the window the buffer keeps.
        self.buffer.chunks = list(state["chunks"])
        self.buffer.chunk_steps = list(state["chunk_steps"])
        for name in self.buffer.chunks:
            arrays = self.checkpointer.chunk(name)
            for key in BUFFERS:
                if key in arrays:
                    self.buffer.data[key].extend(list(arrays[key]))
        self.buffer.trim()
        torch.set_rng_state(state["torch_rng"])
