"""Exact processor sharing: a simulated server that re-times every call it serves at each arrival
and departure (``sy.Capacity(sharing="exact")``).

Why a second server: :class:`~sykit._world.capacity.Server` plans a call once, when it arrives,
and keeps its rate from its service start; under load that makes the tail too short (a long call
that starts on a quiet server keeps its full rate while the server fills behind it). Here the
rate of every call in service is ``slowdown`` at the number in service *now*, and a call's end
moves whenever that number changes. The engines wake a call at an :class:`Alarm` the server moves.

A call (a :class:`Job`) is a list of segments: fixed delays (the drawn time to first token, a
stall), which take the same time whatever the load, and work (reading the prompt, generating the
answer), which advances at the shared rate. Its first token comes when its first segment of
generation starts; its tokens come evenly along that work. Between two changes (an arrival, a
cancellation, an end, a give-up) the number in service is constant, so every rate is too: each
call's end is known until the next change, which re-times them all.

The rules (docs/capacity.md, "Exact sharing"):

* FIFO: a call starts service when it arrives if a slot is free and no call waits, else when it
  reaches the head of the queue and a slot frees (a departure, a cancellation, a call that gave
  up). A queued call gives up at ``queue_timeout_s`` after its arrival or at its client deadline.
* A call in service holds its slot until its answer ends, breaks, or reaches the client deadline.
* A cancelled call leaves at once: its slot goes to the head of the queue, and the calls in
  service speed up. A call that arrives at the instant of a cancellation is admitted or rejected
  as if the cancelled call were still there (as the other sharing rule does), so the order in
  which an engine runs two things of one instant never changes a result.
* A call's alarm is the authority on its end: the server ends a call at the instant its alarm
  was set to, whichever of two things at one instant an engine runs first.
* A streamed call waits for each token on the same alarm (set to the token's instant, or to the
  call's end if sooner); the server keeps its progress at every change, so a token read late
  still carries the instant it came.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any

from sykit._base.alarm import Alarm
from sykit._world.capacity import rejection

__all__ = ["DEADLINE", "DONE", "GAVE_UP", "Job", "SharedServer"]

#: Segment kinds: a fixed delay, prompt reading, generation (tokens come along it).
FIXED, WORK, DECODE = 0, 1, 2
#: How a job ended: its answer came (or broke as planned), the client's deadline, or it gave up
#: waiting in the queue.
DONE, DEADLINE, GAVE_UP = 1, 2, 3
#: A segment that would end within this many seconds of an instant has ended by it: the sums of
#: float steps leave residues that small.
_SAME_INSTANT = 1e-9


class Job(Alarm):
    """One call at a shared server: its segments, its progress, and how it ends. It is the
    alarm the waiting call sleeps on, set to its end as timed at the server's last change."""

    __slots__ = (
        "arrival",
        "attempt",
        "cursor",
        "deadline",
        "end",
        "end_at",
        "end_kind",
        "ended",
        "finish",
        "first_decode",
        "first_token",
        "give_up",
        "history",
        "kinds",
        "left",
        "planned",
        "produced",
        "seg",
        "sizes",
        "stall_after",
        "start",
        "target",
        "unit",
    )

    def __init__(
        self,
        attempt: Any,
        arrival: float,
        deadline: float,
        give_up: float,
        segments: list[tuple[int, float]],
        unit: float,
        planned: int,
        stall_after: int,
        finish: Callable[[Job], Any],
    ) -> None:
        super().__init__(math.inf)
        self.attempt = attempt
        self.arrival = arrival
        self.deadline = deadline
        self.give_up = give_up  # when it leaves the queue if still waiting
        kept = [(kind, size) for kind, size in segments if size > 0]
        self.kinds = [kind for kind, _ in kept]
        self.sizes = [size for _, size in kept]
        # the segment at which the first token comes (len: at the job's very end)
        self.first_decode = next(
            (i for i, kind in enumerate(self.kinds) if kind == DECODE), len(kept)
        )
        self.unit = unit  # work per token (full-rate seconds)
        self.planned = planned
        self.stall_after = stall_after  # tokens before a stall (0: none)
        self.finish = finish  # makes the reply once the job has ended
        self.seg = 0
        self.left = self.sizes[0] if kept else 0.0
        self.start = math.inf
        self.first_token = math.inf
        self.end = math.inf
        self.end_at = math.inf  # when it ends if nothing changes (its alarm may ring earlier)
        self.end_kind = 0
        self.ended = False
        self.produced = 0
        self.target = -1  # the token a stream waits for (-1: the end)
        # a streamed call's progress, (instant, segment, decode work done), at each change and
        # segment boundary: when each token came (None: not streamed)
        self.history: list[tuple[float, int, float]] | None = None
        self.cursor = 0  # where in it the last token read was found

    def reply(self) -> Any:
        """The reply of the job, which has ended."""
        return self.finish(self)

    def tokens(self, seg: int, left: float) -> int:
        """Output tokens produced at progress (``seg``, ``left`` of it to go): one at the first
        token, then one per :attr:`unit` of generation; none more during a stall."""
        if seg < self.first_decode:
            return 0
        # in a fixed delay after the first token: the stall, the only one there
        paused = seg < len(self.kinds) and self.kinds[seg] == FIXED
        produced = 1 + int(_decoded(self, seg, left) / self.unit + 1e-9)
        if paused and produced > self.stall_after:
            produced = self.stall_after
        return min(self.planned, produced)


class SharedServer:
    """One model's slots and queue under exact processor sharing, during one run.

    The state changes only at *change points*: an arrival (:meth:`admit`), a cancellation
    (:meth:`release`) and an alarm ringing (:meth:`ring`: an answer's end, a deadline, a queue
    give-up). Between two of them the number in service is constant, so each call in service
    ends, at the latest, at the instant its alarm is set to; at each change point the server
    moves its state on to that instant exactly, ends what ends there, starts what may start,
    and re-times the alarms of the calls in service if their number changed. The work is
    proportional to the calls in service, whatever the queue holds."""

    def __init__(self, capacity: Any) -> None:
        self.capacity = capacity
        self.slots = capacity.slots
        self.queue_limit = math.inf if capacity.queue_limit is None else capacity.queue_limit
        self.queue_timeout_s = (
            math.inf if capacity.queue_timeout_s is None else capacity.queue_timeout_s
        )
        self._factor = capacity.factor
        self.factors: list[float] = [1.0]  # index n: the factor with n in service (0: unused)
        self.now = 0.0  # the instant the state below is at
        self.serving: list[Job] = []
        self.queue: deque[Job] = deque()
        self.jobs: dict[Any, Job] = {}  # attempt → its job, until its reply is taken
        # cancellations at the instant ``_instant``: (left service, left the queue, promoted)
        self._instant = -math.inf
        self._gone = [0, 0, 0]
        self._retime = False  # the calls in service changed since their alarms were set

    # -- what the host and the driver ask ------------------------------------------------------
    def must_wait(self, now: float) -> bool | None:
        """Whether a call arriving at ``now`` would queue (None: the queue is full: rejected).
        Decided as if the calls cancelled at ``now`` were still there, and after what ends at
        ``now`` has made room, whether or not its alarm has rung yet."""
        self._advance(now)
        self._settle(now)
        serving, queued = len(self.serving), len(self.queue)
        if self._instant == now:
            left_service, left_queue, promoted = self._gone
            serving += left_service - promoted
            queued += left_queue + promoted
        if queued == 0 and serving < self.slots:
            return False
        return None if queued >= self.queue_limit else True

    def admit(self, job: Job, now: float) -> None:
        """``job`` arrives at ``now`` (after :meth:`must_wait` said it is not rejected)."""
        self._advance(now)
        self.jobs[job.attempt] = job
        job.end_kind = GAVE_UP  # until it starts
        job.move(job.give_up)
        self.queue.append(job)
        self._settle(now)

    def rejection(self, model: str) -> tuple[int, dict[str, Any]]:
        """The answer to a call that finds the queue full: a 503 (overloaded) or a 429."""
        return rejection(self.capacity, model)

    def release(self, attempt: Any, now: float) -> float:
        """``attempt`` was cancelled at ``now``: it leaves its slot or its place in the queue at
        once. Returns when it started service (inf: never; NaN: not a job of this server)."""
        job = self.jobs.pop(attempt, None)
        if job is None:
            return math.nan
        self._advance(now)
        if self._instant != now:
            self._instant = now
            self._gone = [0, 0, 0]
        if job in self.serving:
            self.serving.remove(job)
            job.produced = job.tokens(job.seg, job.left)
            attempt.received = job.produced  # billed per the policy for what it generated
            self._gone[0] += 1
            self._retime = True
        elif job in self.queue:
            self.queue.remove(job)
            job.start = math.inf  # never served
            self._gone[1] += 1
        else:
            return job.start  # it had ended at this very instant
        waiting = len(self.queue)
        self._settle(now)  # its slot goes to the head of the queue
        self._gone[2] += waiting - len(self.queue)
        return job.start

    def ring(self, job: Job, now: float) -> Any:
        """``job``'s alarm rang at ``now``: its reply, or None if it has not ended (it left the
        queue for a slot at this very instant: its alarm now rings at its end)."""
        self._advance(now)
        self._settle(now)
        if not job.ended:
            return None
        self.jobs.pop(job.attempt, None)
        if job.start < math.inf:  # billed from its service start on
            job.attempt.in_service_from = job.start
        return job.reply()

    def stream(self, job: Job) -> None:
        """``job`` is read token by token: keep its history from its service start."""
        job.history = [] if job.start == math.inf else [(job.start, 0, 0.0)]

    def token_due(self, job: Job, token: int, now: float) -> float | None:
        """When ``token`` of the streamed ``job`` comes: an instant not after ``now`` once it
        has come; a later one (its alarm set there, or at the job's end if that is sooner) while
        it is to come; None when the job ended without it."""
        self._advance(now)
        self._settle(now)
        came = token_time(job, token)
        if came is not None and came <= now + _SAME_INSTANT:
            return min(came, now)  # (a float step can put it a hair after now)
        if job.ended:
            return None
        job.target = token
        if job not in self.serving:  # queued: its alarm stays at its give-up
            return math.inf
        due = _token_at(job, token, now, self.factor(len(self.serving)))
        if due <= now + _SAME_INSTANT:
            return now
        job.move(min(due, job.end_at))
        return due

    # -- the state -----------------------------------------------------------------------------
    def factor(self, n: int) -> float:
        factors = self.factors
        while len(factors) <= n:
            factors.append(self._factor(len(factors)))
        return factors[n]

    def _advance(self, now: float) -> None:
        """Move the state on to ``now``: every call in service progresses at the rate of their
        number since the last change point; those timed to end by ``now`` end."""
        elapsed = now - self.now
        serving = self.serving
        if elapsed > 0.0:
            if serving:
                rate = self.factor(len(serving))
                for job in serving:
                    _progress(job, self.now, elapsed, rate)
            self.now = now
        if serving and any(job.end_at <= now for job in serving):
            staying = []
            for job in serving:
                if job.end_at > now:
                    staying.append(job)
                elif job.end_kind == DONE:
                    if job.first_token == math.inf:  # it ends at its first token
                        job.first_token = now
                    _ended(job, DONE, now, job.tokens(len(job.kinds), 0.0))
                else:  # the client's deadline, with the answer in flight
                    _ended(job, DEADLINE, now, job.tokens(job.seg, job.left))
            serving[:] = staying
            self._retime = True
        queue = self.queue
        if queue and any(job.deadline <= now for job in queue):
            for job in [job for job in queue if job.deadline <= now]:
                queue.remove(job)
                _ended(job, GAVE_UP, now, 0)

    def _settle(self, now: float) -> None:
        """At ``now``: free slots go to the head of the queue; those still waiting at their
        queue timeout give up (a slot at that very instant is in time); and the alarms of the
        calls in service move to their ends if their number changed."""
        serving, queue = self.serving, self.queue
        before = len(serving)
        started = False
        while queue and len(serving) < self.slots:
            job = queue.popleft()
            job.start = now
            job.attempt.in_service_from = now
            if job.first_decode == 0:
                job.first_token = now
            job.end_kind = DONE
            if job.history is not None:
                job.history.append((now, 0, 0.0))
            serving.append(job)
            started = True
        if queue and any(job.give_up <= now for job in queue):
            for job in [job for job in queue if job.give_up <= now]:
                queue.remove(job)
                _ended(job, GAVE_UP, now, 0)
        if started or len(serving) != before or self._retime:
            self._retime = False
            rate = self.factor(len(serving)) if serving else 1.0
            for job in serving:
                end = _end(job, now, rate)
                if job.deadline < end:
                    job.end_kind, end = DEADLINE, job.deadline
                else:
                    job.end_kind = DONE
                job.end_at = end
                if job.target >= 0:
                    end = min(end, _token_at(job, job.target, now, rate))
                job.move(end)


def _progress(job: Job, now: float, elapsed: float, rate: float) -> None:
    """``job`` runs ``elapsed`` seconds from ``now`` at ``rate`` (fixed delays at 1): its
    segments are consumed in order, and its first token is noted when it comes (a streamed
    call's history too)."""
    kinds, sizes = job.kinds, job.sizes
    seg, left = job.seg, job.left
    history = job.history
    spent = 0.0
    while seg < len(kinds):
        speed = 1.0 if kinds[seg] == FIXED else rate
        need = left / speed
        if need > elapsed - spent + _SAME_INSTANT:
            left -= (elapsed - spent) * speed
            break
        spent += need
        seg += 1
        left = sizes[seg] if seg < len(kinds) else 0.0
        if seg == job.first_decode:
            job.first_token = now + spent
        if history is not None:
            history.append((now + spent, seg, _decoded(job, seg, left)))
    job.seg = seg
    job.left = left if left > 0.0 else 0.0
    if history is not None and spent < elapsed:
        history.append((now + elapsed, seg, _decoded(job, seg, job.left)))


def _decoded(job: Job, seg: int, left: float) -> float:
    """Generation work done at progress (``seg``, ``left`` of it to go)."""
    kinds, sizes = job.kinds, job.sizes
    done = sum(sizes[i] for i in range(min(seg, len(kinds))) if kinds[i] == DECODE)
    if seg < len(kinds) and kinds[seg] == DECODE:
        done += sizes[seg] - left
    return done


def _may_carry(job: Job, seg: int, token: int) -> bool:
    """Whether segment ``seg`` of ``job`` produces ``token``: one of generation, and, for a token
    after a stall, one after the stall."""
    if job.kinds[seg] != DECODE:
        return False
    return not (job.stall_after and token >= job.stall_after and seg <= job.first_decode)


def _token_at(job: Job, token: int, now: float, rate: float) -> float:
    """When ``token`` comes if the rate stays ``rate`` (inf: it never does)."""
    kinds, sizes = job.kinds, job.sizes
    if token >= job.planned:
        return math.inf
    goal = token * job.unit
    seg = job.seg
    done = _decoded(job, seg, job.left)
    t = now
    for i in range(seg, len(kinds)):
        size = job.left if i == seg else sizes[i]
        if kinds[i] == FIXED:
            t += size
            continue
        if _may_carry(job, i, token) and done + size >= goal - _SAME_INSTANT:
            return t + max(0.0, goal - done) / rate
        t += size / rate
        done += size
    # a broken answer's last token comes at its very end
    if seg <= len(kinds) and token < job.tokens(len(kinds), 0.0):
        return t
    return math.inf


def token_time(job: Job, token: int) -> float | None:
    """When ``token`` of a streamed job came, read from its history (None: not yet)."""
    history = job.history
    if not history or token >= job.planned:
        return None
    goal = token * job.unit
    kinds = job.kinds
    # a stream reads its tokens in order: the search goes on from the last token's interval
    for at in range(job.cursor, len(history) - 1):
        (t0, seg, d0), (t1, _, d1) = history[at], history[at + 1]
        if (
            seg < len(kinds)
            and _may_carry(job, seg, token)
            and d0 - _SAME_INSTANT <= goal <= d1 + _SAME_INSTANT
        ):
            job.cursor = at
            return t0 if d1 <= d0 else t0 + (goal - d0) * (t1 - t0) / (d1 - d0)
    last_t, last_seg, _ = history[-1]
    if last_seg >= len(job.kinds) and token < job.tokens(len(job.kinds), 0.0):
        return last_t  # a broken answer's last token, at its end
    return None


def _end(job: Job, now: float, rate: float) -> float:
    """When ``job`` ends if the rate stays ``rate`` (fixed delays take their own time)."""
    kinds, sizes = job.kinds, job.sizes
    seg = job.seg
    if seg >= len(kinds):
        return now
    end = now + (job.left if kinds[seg] == FIXED else job.left / rate)
    for i in range(seg + 1, len(kinds)):
        end += sizes[i] if kinds[i] == FIXED else sizes[i] / rate
    return end


def _ended(job: Job, kind: int, now: float, produced: int) -> None:
    job.ended = True
    job.end = now
    job.end_kind = kind
    job.produced = produced
