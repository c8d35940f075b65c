"""What an attempt costs: one rule for every host, computed in one place.

A provider bills the tokens it processed. sykit applies one rule to every attempt, on a SimHost and
an HttpHost alike:

* served (or answered, even if the algorithm then discards it): the usage the provider reported;
* rejected before generating anything (a 4xx, a 5xx, a 429, a connection failure, a hang the
  provider never started on): nothing;
* ended without being served after the provider accepted it (cancelled, timed out at the client's
  deadline, broken mid-answer): per ``HostPolicy(bill_cancelled=...)`` — ``"generated"`` bills the
  input plus the output generated until that instant, ``"full"`` the input plus the whole answer
  the provider meant to produce, ``"none"`` nothing.

Hosts do not price anything. While an attempt runs, a host fills in its :class:`Generation` (what it
has accepted and produced so far); when the attempt ends, the driver decides the billed tokens (the
reported usage, or :func:`unserved_tokens`) and prices them at the model's ``ModelProfile`` prices,
in one method.
"""

from __future__ import annotations

import math

__all__ = ["Generation", "unserved_tokens"]


class Generation:
    """What the provider has done with one attempt so far, as far as billing goes.

    A simulated host knows its plan in advance (:meth:`plan`: when the first token comes, at what
    rate the rest follow, how many); a real host counts what it received (:meth:`receive`).
    ``accepted`` means the provider took the request and is working on an answer: from then on,
    an attempt that ends unserved is billed per the policy.
    """

    __slots__ = (
        "accepted",
        "first_token_at",
        "in_service_from",
        "planned",
        "received",
        "seen_ttft_s",
        "stall_after",
        "stall_s",
        "tokens_per_s",
    )

    def __init__(self) -> None:
        self.accepted = False
        self.first_token_at = math.inf
        # when a simulated server with a capacity starts serving it (before that it waits in
        # the server's queue, and a call given up while queued has cost the provider nothing)
        self.in_service_from = -math.inf
        self.tokens_per_s = 0.0
        self.planned = 0
        self.received: int | None = None  # counted by a real host; None when planned
        # when a real host saw the first token, in seconds from the attempt's start: recorded
        # even if the attempt then ends unserved (cancelled, timed out, cut)
        self.seen_ttft_s: float | None = None
        # a simulated stall: after ``stall_after`` tokens the answer pauses for ``stall_s``
        self.stall_after = 0
        self.stall_s = 0.0

    def plan(self, first_token_at: float, tokens_per_s: float, planned: int) -> None:
        """A simulated answer: ``planned`` tokens, the first at ``first_token_at``, then
        ``tokens_per_s`` of them a second."""
        self.accepted = True
        self.first_token_at = first_token_at
        self.tokens_per_s = tokens_per_s
        self.planned = planned

    def receive(self, tokens: int) -> None:
        """A real answer: ``tokens`` content tokens have arrived so far."""
        self.accepted = True
        self.received = tokens
        self.planned = max(self.planned, tokens)

    def tokens_at(self, now: float) -> int:
        """Output tokens produced by ``now``: one at the first token, then at the planned rate; for
        a real host, the tokens received."""
        if self.received is not None:
            return self.received
        if now < self.first_token_at:
            return 0
        planned = self.planned
        produced = _counted((now - self.first_token_at) * self.tokens_per_s, planned)
        if self.stall_s and produced > self.stall_after:
            # the tokens after the pause come ``stall_s`` later
            resumed = _counted(
                (now - self.first_token_at - self.stall_s) * self.tokens_per_s, planned
            )
            produced = resumed if resumed > self.stall_after else self.stall_after
        return min(planned, produced)

    def token_at(self, index: int) -> float:
        """When token ``index`` (0 for the first) of a planned answer comes."""
        due = self.first_token_at + index / self.tokens_per_s
        return due + self.stall_s if self.stall_s and index >= self.stall_after else due


def _counted(tokens_so_far: float, planned: int) -> int:
    """``1 + int(tokens_so_far)`` (the first token counts at once), bounded to ``0 …
    planned + 1``: past either end the count means the same to its caller, and a very fast
    model's product can be too large (either way) for an int."""
    tokens = tokens_so_far + 1e-9
    if tokens >= planned:
        return planned + 1
    return 1 + int(tokens) if tokens > -1.0 else 0


def unserved_tokens(
    policy: str, generation: Generation, input_tokens: int, now: float
) -> tuple[int, int]:
    """(input, output) tokens billed for an attempt that ended at ``now`` without being served
    (nothing while it still waited in a simulated server's queue)."""
    if policy == "none" or not generation.accepted or now < generation.in_service_from:
        return 0, 0
    if policy == "full":
        return input_tokens, generation.planned
    return input_tokens, generation.tokens_at(now)
