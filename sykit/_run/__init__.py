"""The way of one request, from ``sy.run`` to its attempt rows, top to bottom.

Read in this order:

1. :mod:`.api`: ``run`` / ``arun``, the door; :mod:`.inputs` checks and normalises what users pass.
2. :mod:`.plan`: the checked plan of runs and their execution; :mod:`.progress` its bar.
3. :mod:`.engines`: the engine contract and every engine (kernel, asyncio loop, bulk evaluator,
   fixed-chain fast path); which one runs is decided there alone.
4. :mod:`.lifecycle`: one strategy over its requests: the life of each request, from its arrival to
   its outcome and the answer-phase call.
5. :mod:`.driver`: what an algorithm talks to; :mod:`.race` and :mod:`.stream` the racing helpers
   and streamed calls built on it.
6. :mod:`.state`: what a run shares and what a request in flight holds; each call goes from here
   to the candidate loop on the run's engine.
7. :mod:`.candidates`: the candidate loop behind every call: retries, fallbacks, cooldowns;
   :mod:`.own_fallbacks` records an algorithm's own switch to another model after a failed call as
   the loop records its fallbacks.
8. :mod:`.attempts`: a host reply turned into an attempt row, and the attempt priced.
9. :mod:`.records`: what the records hold (the frames' columns, the codes, the raw columns);
   :mod:`.attempt_log` and :mod:`.request_log` the attempt and request rows, as column arrays;
   :mod:`.sealed_logs` the run's logs, which take in the ground truth only when read;
   :mod:`.frames` the frames built from them; :mod:`.spill` writes them to Parquet while a large
   run goes.

Beside the way: :mod:`.static` (``sy.strategies.static`` routers, which the bulk engine evaluates
without events) and :mod:`.strategy_kit` (what the reference strategies share).

May import: :mod:`sykit._base`, :mod:`sykit._world`, :mod:`sykit._hosts`, :mod:`sykit._results`,
:mod:`sykit.datasets`.
"""
