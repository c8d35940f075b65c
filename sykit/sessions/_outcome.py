"""Whether an agent task succeeds, given which model served each of its turns.

Per-task benchmark results (:mod:`sykit.sessions._swebench`) say, for a strong and a weak run,
whether each task was resolved: its quadrant. A routed session mixes the two models turn by turn,
and no benchmark measured that. :class:`TaskOutcomes` fills the gap with as few assumptions as keep
both measured ends exact: a task's difficulty sits at ``critical_turns`` turns of its session,
drawn per task and seed, and

- SAFE (both runs resolved it) succeeds whenever the session finished,
- HARD (neither did) never succeeds,
- RESCUE (only the strong run) succeeds iff every critical turn was served by a strong model,
- LOSS (only the weak run) succeeds iff every critical turn was served by a weak model,

and a session that ended early (a failed turn, so fewer turns served than planned) fails. Serving
every turn with the strong model gives back the strong run's result for every task, every turn
with the weak model the weak run's. Under independent per-turn routing with strong share ``p``,
a task with ``k`` critical turns succeeds with probability :func:`expected_success`: 1, ``p**k``,
``(1-p)**k``, 0.

Where a benchmark ran each task several times, a task has a success probability per model
instead of one result (:func:`~sykit.sessions.pair_tasks` with ``trial=``). Its quadrant is then
drawn per seed: two keyed uniforms per (seed, task), ``uniforms(seed, "session-task-draw",
task_id)[0]`` for the strong model and ``[1]`` for the weak one, and a model resolves the task
iff its uniform is below its probability. The two models' trials are independent given the
task's pass rates (which already carry its difficulty), so a task is SAFE with chance s·w,
RESCUE s(1 − w), LOSS (1 − s)w and HARD (1 − s)(1 − w) (:func:`quadrant_probabilities`). The
draws depend on the seed and the task only, so every strategy run with the same seed faces the
same quadrant. ``coupling="comonotone"`` uses the strong uniform for both models instead: the
upper bound on their agreement (SAFE min(s, w), RESCUE max(s − w, 0), ...).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from numbers import Integral
from types import MappingProxyType
from typing import TYPE_CHECKING

from sykit._base.checks import check_int, check_probability
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.rng import uniforms

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "QUADRANTS",
    "TIERS",
    "TaskOutcomes",
    "expected_success",
    "expected_success_rate",
    "quadrant_of",
    "quadrant_probabilities",
]

#: Which of a strong/weak pair resolved a task: both, only strong, only weak, neither.
QUADRANTS = ("SAFE", "RESCUE", "LOSS", "HARD")

#: What a served model counts as when a task's outcome is decided.
TIERS = ("strong", "weak")

#: How the strong and weak draws of a task with success probabilities relate: independent given
#: the two pass rates, or both from one uniform (comonotone: as much agreement as they allow).
_COUPLINGS = ("independent", "comonotone")


def quadrant_of(strong_resolved: bool, weak_resolved: bool) -> str:
    """The quadrant of a task from the two runs' results, so every caller names them alike."""
    if strong_resolved:
        return "SAFE" if weak_resolved else "RESCUE"
    return "LOSS" if weak_resolved else "HARD"


@dataclass(frozen=True, init=False)
class TaskOutcomes:
    """Decides each task's success from the models that served its turns.

    ``tiers`` maps every model a run may serve to ``"strong"`` or ``"weak"`` (the run it stands
    in for), so a model the mapping does not name is an error rather than a guess.
    ``critical_turns`` (k ≥ 1, default 1) is how many turns of a session carry the task's
    difficulty; a session with fewer planned turns has all of them critical. With k = 1 the
    expected success under a strong share p is linear in p between the two measured runs, the
    interpolation that adds no shape of its own; a larger k makes mixing costlier (both RESCUE
    and LOSS tasks need k turns on the right side).

    ``probabilities`` (task id → (strong_p, weak_p)) makes the outcome of repeated trials a
    chance rather than a fact: each task's quadrant is drawn per seed (:meth:`task_quadrant`),
    the quadrant given to :meth:`success` being only a label. :meth:`for_tasks` builds the
    whole model from a pair table.

    ``coupling`` says how a task's strong and weak draws relate (it matters only with
    ``probabilities``). ``"independent"`` (the default): each model's trial is its own draw
    given the task's two pass rates, right when the trials were run separately, as benchmark
    trials are; the pass rates already carry the task's difficulty. ``"comonotone"``: one
    uniform decides both, as if a task's trials for both models shared one difficulty draw, so
    the models agree as much as their pass rates allow: an upper bound on agreement, and so a
    lower bound on RESCUE and LOSS (:func:`quadrant_probabilities` gives both).
    """

    tiers: Mapping[str, str]
    critical_turns: int
    probabilities: Mapping[str, tuple[float, float]] | None
    coupling: str

    def __init__(
        self,
        tiers: Mapping[str, str],
        *,
        critical_turns: int = 1,
        probabilities: Mapping[str, tuple[float, float]] | None = None,
        coupling: str = "independent",
    ) -> None:
        if not isinstance(tiers, Mapping):
            raise ArgumentTypeError(
                f"tiers must be a mapping of model name to 'strong' or 'weak', got "
                f"{type(tiers).__name__}"
            )
        if not tiers:
            raise ArgumentError("tiers is empty; name every model a run may serve")
        for model, tier in tiers.items():
            if not isinstance(model, str):
                raise ArgumentTypeError(
                    f"tiers keys must be model names (str), got {type(model).__name__} {model!r}"
                )
            if tier not in TIERS:
                raise ArgumentError(
                    f"tiers[{model!r}] is {tier!r}; it must be one of {', '.join(map(repr, TIERS))}"
                )
        critical_turns = _check_count("critical_turns", critical_turns)
        object.__setattr__(self, "tiers", MappingProxyType(dict(tiers)))
        object.__setattr__(self, "critical_turns", critical_turns)
        object.__setattr__(self, "probabilities", _check_probabilities(probabilities))
        object.__setattr__(self, "coupling", _check_coupling(coupling))

    @classmethod
    def for_tasks(
        cls,
        tasks: pd.DataFrame,
        tiers: Mapping[str, str] | None = None,
        *,
        critical_turns: int = 1,
        coupling: str = "independent",
    ) -> TaskOutcomes:
        """The outcome model of a pair table (:func:`~sykit.sessions.pair_tasks`,
        :func:`~sykit.sessions.openhands_index`, :func:`~sykit.sessions.swebench_pro`).

        ``tiers`` defaults to the table's two model names (``attrs["strong"]`` and
        ``attrs["weak"]``): run a host whose models bear those names, or map your host's names.
        A table with ``strong_p`` and ``weak_p`` columns (per-task results from trials) gives
        each task's probabilities, so its quadrant is drawn per seed (the two models
        independently, or as ``coupling`` says); without them each task's ``quadrant`` column
        decides."""
        columns = getattr(tasks, "columns", None)
        if columns is None or "instance_id" not in columns:
            raise ArgumentTypeError(
                "tasks must be a pair table with an instance_id column, such as "
                f"sy.sessions.pair_tasks(...), got {type(tasks).__name__}"
            )
        if tiers is None:
            attrs = getattr(tasks, "attrs", {})
            strong, weak = attrs.get("strong"), attrs.get("weak")
            if not isinstance(strong, str) or not isinstance(weak, str):
                raise ArgumentError(
                    "tasks does not name its two models (attrs 'strong' and 'weak' are gone, "
                    "as after some frame operations); pass tiers={model: 'strong' or 'weak'}"
                )
            tiers = {strong: "strong", weak: "weak"}
        probabilities = None
        if "strong_p" in columns or "weak_p" in columns:
            if not {"strong_p", "weak_p"} <= set(columns):
                raise ArgumentError("tasks has only one of strong_p and weak_p; it needs both")
            probabilities = {
                str(task): (float(ps), float(pw))
                for task, ps, pw in zip(
                    tasks["instance_id"], tasks["strong_p"], tasks["weak_p"], strict=True
                )
            }
        return cls(
            tiers, critical_turns=critical_turns, probabilities=probabilities, coupling=coupling
        )

    def task_quadrant(self, task_id: str | int, quadrant: str, seed: int) -> str:
        """The quadrant that decides ``task_id`` in the run with ``seed``: ``quadrant`` as
        given, or, when this model holds the task's success probabilities, the one drawn from
        them (``quadrant`` is then only the table's label and is not used). With ``u =
        uniforms(seed, "session-task-draw", task_id)``, the strong model resolves the task iff
        ``u[0] < strong_p`` and the weak one iff ``u[1] < weak_p`` (``u[0] < weak_p`` when
        ``coupling="comonotone"``)."""
        _check_task(task_id)
        seed = _check_seed(seed)
        if quadrant not in QUADRANTS:
            raise ArgumentError(
                f"task {task_id!r}: unknown quadrant {quadrant!r}; it must be one of "
                f"{', '.join(QUADRANTS)}"
            )
        if self.probabilities is None:
            return quadrant
        chances = self.probabilities.get(str(task_id))
        if chances is None:
            raise ArgumentError(
                f"task {task_id!r} has no success probabilities in this TaskOutcomes; build it "
                "with TaskOutcomes.for_tasks(tasks) from the table the sessions came from"
            )
        u = uniforms(seed, "session-task-draw", task_id)
        weak_u = u[0] if self.coupling == "comonotone" else u[1]
        return quadrant_of(u[0] < chances[0], weak_u < chances[1])

    def critical(self, task_id: str | int, planned_turns: int, seed: int) -> tuple[int, ...]:
        """The turns (0-based, ascending) that carry ``task_id``'s difficulty in a session of
        ``planned_turns`` turns: the k turns with the smallest keyed uniforms, so every strategy
        run with the same seed faces the same critical turns, and another seed moves them."""
        _check_task(task_id)
        planned_turns = _check_count("planned_turns", planned_turns)
        seed = _check_seed(seed)
        draws = [
            uniforms(seed, "session-critical-turn", task_id, turn)[0]
            for turn in range(planned_turns)
        ]
        ranked = sorted(range(planned_turns), key=draws.__getitem__)
        return tuple(sorted(ranked[: self.critical_turns]))

    def success(
        self,
        task_id: str | int,
        quadrant: str,
        served_models: Iterable[str],
        planned_turns: int,
        seed: int,
    ) -> bool:
        """Whether the task succeeded: ``served_models[t]`` is the model that answered turn t, in
        order; fewer served than ``planned_turns`` means the session ended early, which fails."""
        quadrant = self.task_quadrant(task_id, quadrant, seed)
        tiers = self._tiers_of(task_id, served_models)
        planned_turns = _check_count("planned_turns", planned_turns)
        if planned_turns < len(tiers):
            raise ArgumentError(
                f"task {task_id!r}: {len(tiers)} turns were served but planned_turns is "
                f"{planned_turns}; a session cannot serve more turns than it has"
            )
        if len(tiers) < planned_turns or quadrant == "HARD":
            return False
        if quadrant == "SAFE":
            return True
        wanted = "strong" if quadrant == "RESCUE" else "weak"
        return all(tiers[t] == wanted for t in self.critical(task_id, planned_turns, seed))

    def _tiers_of(self, task_id: str | int, served_models: Iterable[str]) -> list[str]:
        if isinstance(served_models, str | bytes | Mapping) or not isinstance(
            served_models, Iterable
        ):
            raise ArgumentTypeError(
                f"task {task_id!r}: served_models must be a list of model names, one per served "
                f"turn, got {type(served_models).__name__}"
            )
        served_models = list(served_models)
        if not served_models:
            raise ArgumentError(
                f"task {task_id!r}: served_models is empty; a session that served no turn has "
                "nothing to decide (its first turn failed: count it as a failure)"
            )
        tiers = []
        for turn, model in enumerate(served_models):
            tier = self.tiers.get(model) if isinstance(model, str) else None
            if tier is None:
                raise ArgumentError(
                    f"task {task_id!r} turn {turn}: model {model!r} is not in tiers; known: "
                    f"{', '.join(map(repr, self.tiers))}"
                )
            tiers.append(tier)
        return tiers


def expected_success(
    quadrant: str,
    strong_share: float,
    *,
    critical_turns: int = 1,
    planned_turns: int | None = None,
) -> float:
    """The probability that a finished session of a ``quadrant`` task succeeds when each turn
    goes to a strong model with probability ``strong_share``, independently of the others:
    SAFE 1, RESCUE p**k, LOSS (1-p)**k, HARD 0, with k = min(critical_turns, planned_turns)."""
    if quadrant not in QUADRANTS:
        raise ArgumentError(
            f"unknown quadrant {quadrant!r}; it must be one of {', '.join(QUADRANTS)}"
        )
    p = _check_share(strong_share)
    k = _check_count("critical_turns", critical_turns)
    if planned_turns is not None:
        k = min(k, _check_count("planned_turns", planned_turns))
    return {"SAFE": 1.0, "RESCUE": p**k, "LOSS": (1.0 - p) ** k, "HARD": 0.0}[quadrant]


def expected_success_rate(
    counts: Mapping[str, int], strong_share: float, *, critical_turns: int = 1
) -> float:
    """The expected share of tasks that succeed, from :func:`quadrant_counts`-style ``counts``
    (a missing quadrant counts 0), when every session finishes and plans at least
    ``critical_turns`` turns: (SAFE + RESCUE·p**k + LOSS·(1-p)**k) / tasks. Compare a run's
    success rate with it to check the routing did what its strong share says."""
    if not isinstance(counts, Mapping):
        raise ArgumentTypeError(
            f"counts must be a mapping of quadrant to count, got {type(counts).__name__}"
        )
    unknown = [q for q in counts if q not in QUADRANTS]
    if unknown:
        raise ArgumentError(
            f"counts has unknown quadrant {unknown[0]!r}; quadrants are {', '.join(QUADRANTS)}"
        )
    for quadrant, n in counts.items():
        check_int(
            n,
            f"counts[{quadrant!r}]",
            low=0,
            expected="a count (int ≥ 0)",
            type_error=ArgumentError,
        )
    total = sum(counts.values())
    if total == 0:
        raise ArgumentError("counts holds no task; the rate of nothing is undefined")
    expected = sum(
        n * expected_success(q, strong_share, critical_turns=critical_turns)
        for q, n in counts.items()
    )
    return expected / total


def quadrant_probabilities(
    strong_p: float, weak_p: float, *, coupling: str = "independent"
) -> dict[str, float]:
    """The chance of each quadrant for a task the strong model resolves with probability
    ``strong_p`` and the weak one with ``weak_p``, as :class:`TaskOutcomes` with the same
    ``coupling`` draws it.

    ``"independent"`` (the default; a draw per model): SAFE s·w, RESCUE s(1 − w), LOSS
    (1 − s)w, HARD (1 − s)(1 − w). Two models that resolve a task equally often still
    disagree on it in some seeds, as two trials of one model do.

    ``"comonotone"`` (one draw for both): SAFE min(s, w), RESCUE max(s − w, 0), LOSS
    max(w − s, 0), HARD 1 − max(s, w), the most agreement the two rates allow: a task the two
    resolve equally often is never RESCUE or LOSS."""
    s = check_probability(strong_p, "strong_p")
    w = check_probability(weak_p, "weak_p")
    if _check_coupling(coupling) == "comonotone":
        return {
            "SAFE": min(s, w),
            "RESCUE": max(s - w, 0.0),
            "LOSS": max(w - s, 0.0),
            "HARD": 1.0 - max(s, w),
        }
    return {
        "SAFE": s * w,
        "RESCUE": s * (1.0 - w),
        "LOSS": (1.0 - s) * w,
        "HARD": (1.0 - s) * (1.0 - w),
    }


def _check_probabilities(given: object) -> Mapping[str, tuple[float, float]] | None:
    """Per task id (as text), its (strong, weak) success probabilities, each in [0, 1]."""
    if given is None:
        return None
    if not isinstance(given, Mapping):
        raise ArgumentTypeError(
            f"probabilities must map task ids to (strong_p, weak_p), got {type(given).__name__}"
        )
    checked: dict[str, tuple[float, float]] = {}
    for task, pair in given.items():
        _check_task(task)
        if isinstance(pair, str | bytes) or not isinstance(pair, Iterable):
            raise ArgumentTypeError(
                f"probabilities[{task!r}] must be a pair (strong_p, weak_p), got {pair!r}"
            )
        values = tuple(pair)
        if len(values) != 2:
            raise ArgumentError(
                f"probabilities[{task!r}] must be a pair (strong_p, weak_p), got {len(values)} "
                "values"
            )
        checked[str(task)] = (
            check_probability(values[0], f"probabilities[{task!r}] strong_p"),
            check_probability(values[1], f"probabilities[{task!r}] weak_p"),
        )
    return MappingProxyType(checked)


def _check_coupling(coupling: object) -> str:
    if not isinstance(coupling, str) or coupling not in _COUPLINGS:
        raise ArgumentError(
            f"coupling must be one of {', '.join(map(repr, _COUPLINGS))}, got {coupling!r}"
        )
    return coupling


def _check_count(name: str, value: object) -> int:
    return check_int(value, name, low=1, expected="≥ 1")


def _check_seed(seed: object) -> int:
    return check_int(seed, "seed")


def _check_task(task_id: object) -> None:
    if isinstance(task_id, bool) or not isinstance(task_id, str | Integral):
        raise ArgumentTypeError(
            f"task_id must be a str or int, got {type(task_id).__name__} {task_id!r}"
        )


def _check_share(share: object) -> float:
    return check_probability(share, "strong_share")
