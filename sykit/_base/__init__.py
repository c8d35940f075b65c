"""The ground floor: the words, checks and draws every other package speaks.

Owns the error tree (:mod:`.errors`) and the default wording of providers' error bodies
(:mod:`.error_bodies`), argument checks (:mod:`.checks`), the algorithm type (:mod:`.types`), keyed
random draws (:mod:`.rng`), the records' vocabulary of statuses, phases, kinds and causes
(:mod:`.vocab`), request-id rules (:mod:`.request_ids`), Retry-After in every spelling
(:mod:`.retry_after`), where the shipped tables live (:mod:`.files`), a wake-up that may move
(:mod:`.alarm`) and whether a user's function takes the arguments it will be called with
(:mod:`.callables`).

May import: nothing of sykit.
"""
