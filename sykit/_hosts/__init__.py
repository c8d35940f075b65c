"""Hosts turn one attempt into one raw reply; everything above (retries, fallback, records) is shared.

Owns the host contract (:mod:`.base`: one ``Attempt`` in, one ``Reply`` out), the simulated host
(:mod:`.sim`), the HTTP host (:mod:`.http`), the OpenAI wire format it speaks
(:mod:`._openai_wire`) and how it keeps keys out of messages (:mod:`._secrets`).

May import: :mod:`sykit._base`, :mod:`sykit._world`.
"""
