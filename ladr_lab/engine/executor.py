"""What one run (or a `call` step's child run) executes with: the ladder, the store, the trace, the
shared budget, its models, its place in the recursion, its state and its fetch bounds."""
from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config.model import Ladder, Step
from ..errors import BudgetExhausted
from ..models import Completion, Model, Recording, get_model
from ..slate import SlateStore
from ..trace import Event, Trace
from .retrieve import Limits
from .state import RunState

__all__ = ["Executor", "Ledger"]


@dataclass
class Ledger:
    """What a run shares with its child runs: the budget counters and the spend so far."""

    max_llm_calls: int | None
    max_steps: int | None
    llm_calls: int = 0
    reserved: int = 0
    steps: int = 0
    cost: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reserve_call(self) -> None:
        """Claim one model call of executionBudget.maxLlmCalls, or raise BudgetExhausted."""
        with self.lock:
            if self.max_llm_calls is not None and self.reserved >= self.max_llm_calls:
                raise BudgetExhausted(f"executionBudget.maxLlmCalls ({self.max_llm_calls}) reached")
            self.reserved += 1

    def count_step(self, step_id: str) -> None:
        """Count one step execution against executionBudget.maxSteps, or raise BudgetExhausted."""
        with self.lock:
            if self.max_steps is not None and self.steps >= self.max_steps:
                raise BudgetExhausted(f'executionBudget.maxSteps ({self.max_steps}) reached before step "{step_id}"',
                                      step_id)
            self.steps += 1

    def record(self, comp: Completion) -> None:
        """Count a call that answered, with its tokens and cost."""
        with self.lock:
            self.llm_calls += 1
            self.cost += comp.cost or 0.0
            self.tokens_in += comp.tokens_in or 0
            self.tokens_out += comp.tokens_out or 0


class Executor:
    """The machinery of one run: a child run gets its own Executor sharing store, trace, ledger and models."""

    def __init__(self, ladder: Ladder, *, store: SlateStore, trace: Trace, ledger: Ledger, model: Model,
                 models: dict[str, Model], state: RunState, limits: Limits, depth: int = 0,
                 caller: tuple[str, ...] = (), knowledge: Mapping[str, Sequence[Any]] | None = None,
                 run_files: Any = None, cache: Any = None) -> None:
        self.ladder = ladder
        self.store = store
        self.trace = trace
        self.ledger = ledger
        self.model = model
        self.models = models
        self.state = state
        self.limits = limits
        self.depth = depth
        self.caller = caller
        self.knowledge = knowledge or {}     # step id -> knowledge sources bound at run time
        self.run_files = run_files           # the run's RunFilesWriter, when it writes run files
        self.cache = cache                   # the run's ResponseCache (models/cache.py), or None

    def emit(self, event: Event) -> Event:
        """Record an event, marked with this run's depth and callers when it is a child run."""
        if self.depth:
            event = dataclasses.replace(event, depth=self.depth, caller=self.caller)
        return self.trace.emit(event)

    def model_for(self, step: Step) -> Model:
        """The step's own model, or the run's; a `Recording` that answers every step (a replay of the run)
        answers it whatever model the step declares (calling that model would not be a replay)."""
        if step.model is None or (isinstance(self.model, Recording) and self.model.answers_every_step):
            return self.model
        if step.model not in self.models:
            self.models[step.model] = get_model(step.model, base_dir=self.ladder.base_dir, cache=self.cache)
        return self.models[step.model]

    def child(self, ladder: Ladder, text: str, label: str) -> Executor:
        """The executor of a `call` step's child run with input `text`, called from `label` ("step/node")."""
        return Executor(ladder, store=self.store, trace=self.trace, ledger=self.ledger, model=self.model,
                        models=self.models, state=RunState({"context": text}), limits=self.limits,
                        depth=self.depth + 1, caller=(*self.caller, label), knowledge=self.knowledge,
                        run_files=self.run_files, cache=self.cache)

    def with_state(self, state: RunState) -> Executor:
        """The same executor over another state (a group's branch)."""
        return Executor(self.ladder, store=self.store, trace=self.trace, ledger=self.ledger, model=self.model,
                        models=self.models, state=state, limits=self.limits, depth=self.depth, caller=self.caller,
                        knowledge=self.knowledge, run_files=self.run_files, cache=self.cache)
