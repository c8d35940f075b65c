"""What is simulated: the data an algorithm sees and the world the simulated host plays.

Owns requests, responses, decisions and outcomes (:mod:`.models`); model profiles, latency, the
judge, host policy and arrivals (:mod:`.config`); what can go wrong at a model (:mod:`.faults`);
what those value objects share (:mod:`.values`); distributions (:mod:`.dists`); capacity under
load (:mod:`.capacity`; exact processor sharing, :mod:`.sharing`); prompt caching
(:mod:`.prompt_cache`); what an attempt costs (:mod:`.billing`); the price and latency catalogue (:mod:`.catalog`, :mod:`.cache_prices`); the one
classifier from HTTP status and body to an error kind (:mod:`.classify`); hidden ground truth
(:mod:`.truth`); and agent sessions as inputs to a run (:mod:`.sessions`).

May import: :mod:`sykit._base`.
"""
