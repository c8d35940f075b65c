"""The published quality of RouteLLM's routers, which the simulated router score's presets reproduce.

Source: Ong et al. (2024), "RouteLLM: Learning to Route LLMs with Preference Data", arXiv 2406.18665,
Tables 1–3: APGR (average performance gap recovered) of routers between GPT-4 (gpt-4-1106-preview)
and Mixtral 8x7B on MT-Bench, MMLU and GSM8K, for the four router designs trained on Chatbot Arena
preference data alone (``*_arena``) and on Arena data with the paper's augmentation
(``*_augmented``). The ``random`` row is the paper's random router. docs/router-score.md says which
figures could be checked against a second source.
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["BENCHMARKS", "DEFAULT_PRESET", "PRESETS", "RANDOM_APGR", "SOURCE"]

SOURCE = (
    'Ong et al. (2024), "RouteLLM: Learning to Route LLMs with Preference Data", '
    "arXiv 2406.18665, Tables 1-3"
)

BENCHMARKS = ("mt_bench", "mmlu", "gsm8k")
"""The benchmarks of the published tables, spelled as the ``benchmark`` column of the shipped
``routellm`` dataset."""


def _row(mt_bench: float, mmlu: float, gsm8k: float) -> MappingProxyType[str, float]:
    return MappingProxyType({"mt_bench": mt_bench, "mmlu": mmlu, "gsm8k": gsm8k})


PRESETS: MappingProxyType[str, MappingProxyType[str, float]] = MappingProxyType(
    {
        # trained on Chatbot Arena preference data only
        "bert_arena": _row(0.391, 0.502, 0.438),
        "causal_llm_arena": _row(0.573, 0.499, 0.461),
        "mf_arena": _row(0.580, 0.524, 0.475),
        "sw_ranking_arena": _row(0.610, 0.473, 0.475),
        # trained on Arena data plus the paper's augmented data
        "bert_augmented": _row(0.751, 0.572, 0.531),
        "causal_llm_augmented": _row(0.679, 0.600, 0.622),
        "mf_augmented": _row(0.802, 0.597, 0.565),
        "sw_ranking_augmented": _row(0.759, 0.603, 0.568),
    }
)
"""Published APGR per router preset and benchmark."""

RANDOM_APGR = _row(0.500, 0.500, 0.497)
"""The paper's random router, for comparison (0.5 in expectation)."""

DEFAULT_PRESET = "mf_augmented"
"""RouteLLM's recommended router (matrix factorisation, augmented data)."""
