"""The datasets that ship with sykit, and the model names their ground truth uses.

Model names are lower-case versions of the names the upstream tables use, so they read like API
model ids and match the names :func:`sykit.profiles.from_catalog` knows: put them in a ``SimHost``
as they are, or rename them with :meth:`Dataset.rename_models`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.files import read_table
from sykit.datasets._dataset import Dataset
from sykit.datasets._frame import from_frame

__all__ = ["MMLU_PRO_MODELS", "ROUTELLM_MODELS", "load", "names"]

#: RouteLLM's two models: sykit name → column suffix in ``routellm_eval.csv``.
ROUTELLM_MODELS = {
    "gpt-4-1106-preview": "gpt_4_1106",
    "mixtral-8x7b-instruct-v0.1": "mixtral_8x7b",
}

#: MMLU-Pro's 29 models: sykit name → the model name in the upstream result files.
MMLU_PRO_MODELS = {
    "c4ai-command-r-v01": "c4ai-command-r-v01",
    "deepseek-coder-v2": "DeepSeek-Coder-V2",
    "gemini-1.5-flash-002": "gemini-1.5-flash-002",
    "gemini-1.5-pro-002": "gemini-1.5-pro-002",
    "gemma-7b": "gemma-7b",
    "jamba-1.5-large": "jamba-1.5-large",
    "llama-2-7b": "Llama-2-7b-hf",
    "llama-2-13b": "Llama-2-13b-hf",
    "llama-2-70b": "Llama-2-70b-hf",
    "mathstral-7b": "mathstral-7B",
    "meta-llama-3-8b": "Meta-Llama-3-8B",
    "meta-llama-3-70b": "Meta-Llama-3-70B",
    "meta-llama-3.1-8b": "Meta-Llama-3_1-8B",
    "meta-llama-3.1-8b-instruct": "Meta-Llama-3_1-8B-Instruct",
    "meta-llama-3.1-70b": "Meta-Llama-3_1-70B",
    "meta-llama-3.1-70b-instruct": "Meta-Llama-3_1-70B-Instruct",
    "mistral-7b-instruct-v0.1": "Mistral-7B-Instruct-v0.1",
    "mistral-7b-instruct-v0.2": "Mistral-7B-Instruct-v0.2",
    "mistral-7b-v0.1": "Mistral-7B-v0.1",
    "mistral-7b-v0.2": "Mistral-7B-v0.2-hf",
    "mixtral-8x7b-instruct-v0.1": "Mixtral-8x7B-Instruct-v0.1",
    "mixtral-8x7b-v0.1": "Mixtral-8x7B-v0.1",
    "phi-3-mini-4k-instruct": "Phi-3-mini-4k-instruct",
    "qwen1.5-7b-chat": "Qwen1.5-7B-Chat",
    "qwen1.5-72b-chat": "Qwen1.5-72B-Chat",
    "qwen1.5-110b": "Qwen1.5-110B",
    "yi-6b": "Yi-6B",
    "yi-6b-chat": "Yi-6b-Chat",
    "yi-34b": "Yi-34B",
}

_LETTERS = "ABCDEFGHIJKLMNOP"


def _routellm() -> Dataset:
    raw = read_table("routellm/routellm_eval.csv")
    frame = raw.assign(
        contaminated=raw["contaminated"].astype(bool), question=_routellm_questions(raw)
    )
    ds = from_frame(
        frame,
        prompt="prompt",
        id="prompt_id",
        input_tokens="prompt_tokens",
        quality={m: f"score_{k}" for m, k in ROUTELLM_MODELS.items()},
        output_tokens={m: f"out_tokens_{k}" for m, k in ROUTELLM_MODELS.items()},
        metadata=["benchmark", "category", "turn", "contaminated"],
        name="routellm",
    )
    return _with_info(
        ds,
        group_column="question",
        description=(
            "RouteLLM's evaluation table: GPT-4 (gpt-4-1106-preview) and Mixtral "
            "(mixtral-8x7b-instruct-v0.1) on 2,280 MMLU questions (40 per domain), the 1,319 GSM8K "
            "test problems and the 80 MT-Bench questions × 2 turns. Quality is correctness (MMLU, "
            "GSM8K) or the GPT-4 grade / 10 (MT-Bench); output tokens are known for GSM8K only. "
            "RouteLLM itself leaves out rows with contaminated=True."
        ),
        source="github.com/lm-sys/RouteLLM @ 0b64fdafe049e596a3f5657c219329f24af24198",
        license="Apache-2.0 (RouteLLM); MMLU and GSM8K MIT; MT-Bench questions Apache-2.0",
    )


def _routellm_questions(raw: pd.DataFrame) -> list[str]:
    """The question each row asks: MT-Bench's two turns share one (``mt_bench/81/turn2`` →
    ``mt_bench/81``), so that splits keep them together; any other row is its own question."""
    return [
        re.sub(r"/turn\d+$", "", str(i)) if benchmark == "mt_bench" else str(i)
        for i, benchmark in zip(raw["prompt_id"].tolist(), raw["benchmark"].tolist(), strict=True)
    ]


def _mmlu_pro_prompt(question: object, options: object, src: str, qid: int) -> str:
    if not isinstance(question, str) or not question:
        # Questions from the stemez website are not shipped (see datasets/PROVENANCE.md).
        return f"[MMLU-Pro question {qid} from {src}: text not shipped]"
    lines = [question]
    lines += [f"{_LETTERS[i]}. {option}" for i, option in enumerate(json.loads(str(options)))]
    lines.append("Answer:")
    return "\n".join(lines)


def _mmlu_pro() -> Dataset:
    raw = read_table("mmlu_pro/mmlu_pro_routing.csv")
    qids = raw["question_id"].tolist()
    prompts = [
        _mmlu_pro_prompt(q, o, s, i)
        for q, o, s, i in zip(
            raw["question"].tolist(),
            raw["options"].tolist(),
            raw["src"].tolist(),
            qids,
            strict=True,
        )
    ]
    frame = pd.DataFrame(
        {
            "id": [f"mmlu_pro/{i}" for i in qids],
            "prompt": prompts,
            "input_tokens": raw["prompt_tokens"].to_numpy(),
            "category": raw["category"].to_numpy(),
            "src": raw["src"].to_numpy(),
            "n_options": raw["n_options"].to_numpy(),
            "question_id": raw["question_id"].to_numpy(),
            "answer": raw["answer"].to_numpy(),
        }
    )
    truth = {}
    for name, upstream in MMLU_PRO_MODELS.items():
        truth[f"correct:{name}"] = raw[f"correct__{upstream}"].to_numpy()
        truth[f"out:{name}"] = raw[f"out_tokens__{upstream}"].to_numpy()
    frame = pd.concat([frame, pd.DataFrame(truth)], axis=1)
    ds = from_frame(
        frame,
        prompt="prompt",
        id="id",
        input_tokens="input_tokens",
        quality={m: f"correct:{m}" for m in MMLU_PRO_MODELS},
        output_tokens={m: f"out:{m}" for m in MMLU_PRO_MODELS},
        metadata=["category", "src", "n_options"],
        name="mmlu_pro",
    )
    return _with_info(
        ds,
        description=(
            "MMLU-Pro 5-shot chain-of-thought results of 29 models on 2,998 questions (a sample "
            "stratified by its 14 categories). Quality is 1.0 for a correct answer, 0.0 otherwise; "
            "output tokens are the answer's length, cut at the first '\\nQuestion:'. "
            "deepseek-coder-v2 lacks 400 questions. Question text from the stemez website "
            "(src stemez-*) is not shipped; those prompts are placeholders."
        ),
        source="github.com/TIGER-AI-Lab/MMLU-Pro @ f418b116db00b065c2aea046518d8fcf74d39872",
        license="Apache-2.0 (MMLU-Pro repository, evaluation outputs); MMLU-Pro data set MIT",
    )


def _with_info(ds: Dataset, *, group_column: str | None = None, **info: str) -> Dataset:
    return Dataset(
        ds._frame,
        name=ds.name,
        models=ds.models,
        metadata=ds.metadata_columns,
        info=info,
        group_column=group_column,
    )


_BUILDERS: dict[str, Callable[[], Dataset]] = {"mmlu_pro": _mmlu_pro, "routellm": _routellm}
_LOADED: dict[str, Dataset] = {}


def names() -> tuple[str, ...]:
    """The names :func:`load` accepts."""
    return tuple(sorted(_BUILDERS))


def load(name: str) -> Dataset:
    """A shipped dataset by name (see :func:`names`): ``"routellm"`` or ``"mmlu_pro"``. Case,
    surrounding spaces and ``-`` for ``_`` do not matter (``"MMLU-Pro"`` is ``"mmlu_pro"``).

    Parsed once per process; later calls return the same (immutable) dataset at once.
    """
    if not isinstance(name, str):
        raise ArgumentTypeError(f"dataset name must be a string, got {type(name).__name__}")
    key = _key(name)
    dataset = _LOADED.get(key)
    if dataset is None:
        builder = _BUILDERS.get(key)
        if builder is None:
            raise ArgumentError(
                f"unknown dataset {name!r}; shipped datasets: {', '.join(map(repr, names()))}"
            )
        dataset = _LOADED[key] = builder()
    return dataset


def _key(name: str) -> str:
    """The shipped name a user's spelling means: names are typed by hand, in any case."""
    return name.strip().lower().replace("-", "_")
