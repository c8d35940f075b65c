"""Shipped datasets, the Dataset type, from_frame and synthetic traffic."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import sykit as sy
import sykit.datasets
import sykit.profiles
from sykit._base.files import read_table
from sykit._world.models import IMAGE_TOKENS, truth_of

datasets = sykit.datasets


@pytest.fixture(scope="module")
def routellm() -> sy.datasets.Dataset:
    return datasets.load("routellm")


@pytest.fixture(scope="module")
def mmlu_pro() -> sy.datasets.Dataset:
    return datasets.load("mmlu_pro")


def by_id(ds, request_id):
    return next(r for r in ds if r.id == request_id)


# -- loading -----------------------------------------------------------------------------------


def test_names_and_unknown_name():
    assert datasets.names() == ("mmlu_pro", "routellm")
    with pytest.raises(ValueError, match=r"unknown dataset 'routelm'.*'mmlu_pro', 'routellm'"):
        datasets.load("routelm")
    with pytest.raises(TypeError, match="dataset name must be a string"):
        datasets.load(3)


def test_load_is_cached_and_requests_are_built_once(routellm):
    assert datasets.load("routellm") is routellm
    assert next(iter(routellm)) is next(iter(routellm))
    assert routellm.sample(5, seed=3)[0] is by_id(routellm, routellm.sample(5, seed=3)[0].id)


def test_routellm_shape(routellm):
    assert len(routellm) == 3759
    assert routellm.models == ("gpt-4-1106-preview", "mixtral-8x7b-instruct-v0.1")
    frame = routellm.frame
    assert list(frame.columns[:7]) == [
        "id",
        "prompt",
        "input_tokens",
        "benchmark",
        "category",
        "turn",
        "contaminated",
    ]
    assert frame["benchmark"].value_counts().to_dict() == {
        "mmlu": 2280,
        "gsm8k": 1319,
        "mt_bench": 160,
    }
    assert frame["id"].is_unique
    assert int(frame["contaminated"].sum()) == 28
    assert routellm.metadata_columns == ("benchmark", "category", "turn", "contaminated")
    # Output tokens are known for GSM8K only.
    known = frame["output_tokens:gpt-4-1106-preview"].notna()
    assert set(frame.loc[known, "benchmark"]) == {"gsm8k"} and known.sum() == 1319


def test_routellm_ground_truth_of_known_rows(routellm):
    gsm = by_id(routellm, "gsm8k/0")
    assert gsm.prompt.startswith("Janet’s ducks lay 16 eggs per day.")
    assert gsm.input_tokens == 64
    assert dict(gsm.metadata) == {
        "benchmark": "gsm8k",
        "category": "grade_school_math",
        "turn": 1,
        "contaminated": True,
    }
    truth = truth_of(gsm)
    assert dict(truth.quality) == {"gpt-4-1106-preview": 1.0, "mixtral-8x7b-instruct-v0.1": 1.0}
    assert dict(truth.output_tokens) == {
        "gpt-4-1106-preview": 82,
        "mixtral-8x7b-instruct-v0.1": 82,
    }
    mmlu = by_id(routellm, "mmlu/abstract_algebra/3")
    assert mmlu.input_tokens == 76 and mmlu.prompt.endswith("Answer:")
    assert dict(truth_of(mmlu).quality) == {
        "gpt-4-1106-preview": 0.0,
        "mixtral-8x7b-instruct-v0.1": 0.0,
    }
    assert dict(truth_of(mmlu).output_tokens) == {}  # unknown: the host draws from the profile
    turn2 = by_id(routellm, "mt_bench/82/turn2")
    assert turn2.metadata["turn"] == 2
    assert dict(truth_of(turn2).quality) == {
        "gpt-4-1106-preview": 1.0,
        "mixtral-8x7b-instruct-v0.1": 0.9,  # an MT-Bench grade of 9, divided by 10
    }


def test_routellm_quality_is_the_upstream_score(routellm):
    raw = read_table("routellm/routellm_eval.csv")
    quality = routellm.quality
    assert list(quality.columns) == list(routellm.models)
    assert quality.loc[raw["prompt_id"], "gpt-4-1106-preview"].tolist() == pytest.approx(
        raw["score_gpt_4_1106"].tolist()
    )
    assert quality.loc[raw["prompt_id"], "mixtral-8x7b-instruct-v0.1"].tolist() == pytest.approx(
        raw["score_mixtral_8x7b"].tolist()
    )


def test_mmlu_pro_shape_and_summary_match_the_upstream_model_table(mmlu_pro):
    assert len(mmlu_pro) == 2998 and len(mmlu_pro.models) == 29
    assert mmlu_pro.frame["category"].nunique() == 14
    models = read_table("mmlu_pro/mmlu_pro_models.csv")
    names = {upstream: ours for ours, upstream in datasets._shipped.MMLU_PRO_MODELS.items()}
    assert set(names) == set(models["model"])
    assert sorted(names.values()) == sorted(mmlu_pro.models)
    summary = mmlu_pro.summary()
    for row in models.itertuples():
        ours = summary.loc[names[row.model]]
        assert ours["requests"] == row.questions_in_sample
        assert ours["mean_quality"] == pytest.approx(row.accuracy_in_sample, abs=5e-5)
        assert ours["mean_output_tokens"] == pytest.approx(row.mean_out_tokens_in_sample, abs=0.05)


def test_mmlu_pro_known_row(mmlu_pro):
    request = by_id(mmlu_pro, "mmlu_pro/70")
    assert request.prompt.startswith("Typical advertising regulatory bodies suggest")
    assert "\nA. Safe practices, Fear, Jealousy, Trivial\n" in request.prompt
    assert request.prompt.endswith("\nAnswer:")
    assert request.input_tokens == 152
    assert dict(request.metadata) == {
        "category": "business",
        "src": "ori_mmlu-business_ethics",
        "n_options": 9,
    }
    truth = truth_of(request)
    assert truth.quality["c4ai-command-r-v01"] == 1.0
    assert truth.quality["jamba-1.5-large"] == 0.0
    assert truth.output_tokens["qwen1.5-7b-chat"] == 244
    assert truth.output_tokens["jamba-1.5-large"] == 6


def test_mmlu_pro_missing_cells_are_ungraded_in_ground_truth(mmlu_pro):
    missing = mmlu_pro.filter(lambda f: f["quality:deepseek-coder-v2"].isna())
    assert len(missing) == 400
    truth = truth_of(missing[0])
    assert math.isnan(truth.quality["deepseek-coder-v2"])  # covered by the dataset, not graded
    assert "deepseek-coder-v2" not in truth.output_tokens
    assert sum(not math.isnan(q) for q in truth.quality.values()) == 28


def test_mmlu_pro_stemez_text_is_not_shipped(mmlu_pro):
    stemez = mmlu_pro.filter(lambda f: f["src"].str.startswith("stemez-"))
    assert len(stemez) == 1037
    assert all(r.prompt.startswith("[MMLU-Pro question ") for r in stemez)
    assert all(r.input_tokens > 0 and truth_of(r).quality for r in stemez)


def test_requests_carry_only_descriptive_metadata(mmlu_pro):
    request = mmlu_pro[0]
    assert "answer" in mmlu_pro.frame.columns
    assert "answer" not in request.metadata
    assert all(isinstance(v, str | int | float | bool) for v in request.metadata.values())


# -- the Dataset -------------------------------------------------------------------------------


def test_filter(routellm, mmlu_pro):
    assert len(routellm.filter(benchmark="gsm8k")) == 1319
    clean = routellm.filter(contaminated=False)
    assert len(clean) == 3759 - 28 and not clean.frame["contaminated"].any()
    both = mmlu_pro.filter(category=["math", "physics"])
    assert set(both.frame["category"]) == {"math", "physics"} and len(both) == 338 + 323
    long = routellm.filter(lambda f: f["input_tokens"] > 300, benchmark="mmlu")
    assert len(long) > 0
    assert (long.frame["input_tokens"] > 300).all() and set(long.frame["benchmark"]) == {"mmlu"}
    assert len(routellm.filter(benchmark="nope")) == 0


def test_filter_errors(routellm):
    with pytest.raises(ValueError, match="filter: no column 'bench'"):
        routellm.filter(bench="gsm8k")
    with pytest.raises(ValueError, match="one boolean per request"):
        routellm.filter(lambda f: f["input_tokens"])
    with pytest.raises(TypeError, match="function of the frame"):
        routellm.filter("benchmark == 'gsm8k'")


def test_sample_is_deterministic_and_keeps_order(routellm):
    a = routellm.sample(50, seed=0)
    assert [r.id for r in a] == [r.id for r in routellm.sample(50, seed=0)]
    assert [r.id for r in a] != [r.id for r in routellm.sample(50, seed=1)]
    positions = [routellm.frame.index[routellm.frame["id"] == r.id][0] for r in a]
    assert positions == sorted(positions) and len(set(positions)) == 50
    with pytest.raises(ValueError, match="n=4000 is more than the 3759 requests"):
        routellm.sample(4000)
    with pytest.raises(TypeError, match="seed must be an int"):
        routellm.sample(5, seed="0")


def test_stratified_sample_keeps_each_share(routellm, mmlu_pro):
    counts = routellm.sample(376, seed=0, stratify="benchmark").frame["benchmark"].value_counts()
    # 376 × 2280/3759 = 228.06, × 1319/3759 = 131.93, × 160/3759 = 16.00
    assert counts.to_dict() == {"mmlu": 228, "gsm8k": 132, "mt_bench": 16}
    sample = mmlu_pro.sample(300, seed=7, stratify="category")
    shares = mmlu_pro.frame["category"].value_counts() * 300 / len(mmlu_pro)
    got = sample.frame["category"].value_counts()
    assert len(sample) == 300
    assert ((got - shares).abs() < 1).all()
    again = mmlu_pro.sample(300, seed=7, stratify="category")
    assert [r.id for r in sample] == [r.id for r in again]
    with pytest.raises(ValueError, match="stratify column 'topic'"):
        mmlu_pro.sample(10, stratify="topic")


def test_indexing_head_and_slices(routellm):
    assert routellm[0].id == "mmlu/abstract_algebra/3"
    assert routellm[-1].id == routellm.frame["id"].iloc[-1]
    assert [r.id for r in routellm.head(3)] == routellm.frame["id"].head(3).tolist()
    assert len(routellm[10:20]) == 10
    with pytest.raises(IndexError, match="out of range"):
        routellm[5000]


def test_frame_is_a_copy_and_truth_tables(routellm):
    frame = routellm.frame
    frame.loc[0, "quality:gpt-4-1106-preview"] = 0.5
    assert routellm.frame.loc[0, "quality:gpt-4-1106-preview"] == 0.0
    assert routellm.output_tokens.loc["gsm8k/0", "mixtral-8x7b-instruct-v0.1"] == 82
    assert pd.isna(routellm.output_tokens.loc["mmlu/abstract_algebra/3", "gpt-4-1106-preview"])


def test_rename_models(routellm):
    renamed = routellm.rename_models({"gpt-4-1106-preview": "strong"})
    assert renamed.models == ("strong", "mixtral-8x7b-instruct-v0.1")
    assert truth_of(renamed[0]).quality["strong"] == 0.0
    assert "quality:strong" in renamed.frame.columns
    with pytest.raises(ValueError, match="'gpt-4' not among the dataset's models"):
        routellm.rename_models({"gpt-4": "strong"})


def test_repr_and_html(routellm, mmlu_pro):
    assert repr(routellm).startswith("<Dataset 'routellm': 3759 requests; models: gpt-4-1106")
    assert repr(mmlu_pro).endswith("gemini-1.5-flash-002, … (29)>")
    page = routellm._repr_html_()
    assert "Apache-2.0" in page and "mean_quality" in page and "<table" in page


def test_algorithms_never_see_ground_truth(routellm):
    seen = []

    async def spy(request, driver):
        seen.append(truth_of(request))
        return sy.route_to("gpt-4-1106-preview", request)

    host = sy.SimHost(sy.profiles.from_catalog(routellm.models))
    sy.run(spy, routellm.head(5), host=host)
    assert seen == [None] * 5


def test_end_to_end_quality_is_the_datasets_quality(routellm):
    strong = "gpt-4-1106-preview"
    sample = routellm.sample(50, seed=0)
    host = sy.SimHost(sy.profiles.from_catalog(routellm.models))
    result = sy.run(sy.strategies.single(strong), sample, host=host)
    rows = result.requests.set_index("request_id")
    assert (rows["status"] == "ok").all()
    expected = sample.quality[strong]
    assert rows.loc[expected.index, "quality"].tolist() == pytest.approx(expected.tolist())
    assert {"benchmark", "category", "turn", "contaminated"} <= set(result.requests.columns)
    # GSM8K answers are as long as the dataset says, the others drawn from the profile.
    gsm = [r.id for r in sample if r.metadata["benchmark"] == "gsm8k"]
    attempts = result.attempts.set_index("request_id")
    ok = attempts[attempts["status"] == "ok"]
    for request_id in gsm:
        expected_out = sample.output_tokens.loc[request_id, strong]
        assert ok.loc[request_id, "output_tokens"] == expected_out


# -- from_frame --------------------------------------------------------------------------------


@pytest.fixture
def table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "qid": ["a", "b", "c"],
            "question": ["What is 2 + 2?", "Name a prime.", "Summarise this."],
            "topic": ["math", "math", "writing"],
            "small_ok": [1, 0, 0.5],
            "large_ok": [1.0, 1.0, None],
            "small_len": [12, 30, None],
            "n_tokens": [9, 6, 4000],
        }
    )


def test_from_frame(table):
    ds = datasets.from_frame(
        table,
        prompt="question",
        quality={"small": "small_ok", "large": "large_ok"},
        output_tokens={"small": "small_len"},
        input_tokens="n_tokens",
        id="qid",
        name="mine",
    )
    assert ds.name == "mine" and ds.models == ("small", "large") and len(ds) == 3
    # Only named columns reach the algorithm; the rest are kept for the results, hidden.
    assert ds.metadata_columns == () and ds.analysis_columns == ("topic",)
    first, _, last = list(ds)
    assert first.id == "a" and first.input_tokens == 9 and dict(first.metadata) == {}
    assert dict(truth_of(first).columns) == {"topic": "math"}
    assert dict(truth_of(first).quality) == {"small": 1.0, "large": 1.0}
    assert dict(truth_of(first).output_tokens) == {"small": 12}
    assert truth_of(last).quality["small"] == 0.5 and math.isnan(truth_of(last).quality["large"])
    assert dict(truth_of(last).output_tokens) == {}
    named = datasets.from_frame(
        table, prompt="question", quality={"small": "small_ok"}, metadata=["topic"]
    )
    assert named.metadata_columns == ("topic",) and dict(named[0].metadata) == {"topic": "math"}


def test_from_frame_defaults(table):
    ds = datasets.from_frame(table[["question", "topic"]], prompt="question")
    assert ds.models == () and [r.id for r in ds] == [0, 1, 2]
    truth = truth_of(ds[0])
    assert dict(truth.quality) == {} and dict(truth.columns) == {"topic": "math"}
    assert dict(ds[0].metadata) == {}
    assert ds[0].input_tokens == sy.Request("What is 2 + 2?").input_tokens
    assert ds.summary().empty


def test_from_frame_images(table):
    table = table.assign(image=["https://x/1.png", None, ["https://x/2.png", "https://x/3.png"]])
    ds = datasets.from_frame(table[["question", "image"]], prompt="question", images="image")
    assert [len(r.images) for r in ds] == [1, 0, 2]


def test_from_frame_errors(table):
    with pytest.raises(TypeError, match="needs a pandas DataFrame, got list"):
        datasets.from_frame([{"q": "x"}], prompt="q")
    with pytest.raises(ValueError, match="prompt column 'prompt' is not in the frame"):
        datasets.from_frame(table, prompt="prompt")
    with pytest.raises(ValueError, match=r"quality\['large'\] column 'large_correct'"):
        datasets.from_frame(table, prompt="question", quality={"large": "large_correct"})
    with pytest.raises(
        ValueError, match="model 'small' has an output_tokens column but no quality"
    ):
        datasets.from_frame(table, prompt="question", output_tokens={"small": "small_len"})
    with pytest.raises(
        ValueError, match=r"quality column 'topic' \(model 'small'\) must be numeric"
    ):
        datasets.from_frame(table, prompt="question", quality={"small": "topic"})
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\], got 9.0"):
        datasets.from_frame(table, prompt="question", quality={"small": "n_tokens"})
    with pytest.raises(ValueError, match="id column 'topic' repeats the id 'math'"):
        datasets.from_frame(table, prompt="question", id="topic")
    with pytest.raises(ValueError, match="prompt column 'large_ok' must hold text"):
        datasets.from_frame(table.fillna(0), prompt="large_ok")
    with pytest.raises(ValueError, match="prompt column 'small_len' is empty in 1 row"):
        datasets.from_frame(table, prompt="small_len")
    with pytest.raises(ValueError, match="input_tokens column 'small_ok' must hold whole numbers"):
        datasets.from_frame(table, prompt="question", input_tokens="small_ok")
    with pytest.raises(ValueError, match="metadata column 'nope' is not in the frame"):
        datasets.from_frame(table, prompt="question", metadata=["nope"])


# -- synthetic traffic -------------------------------------------------------------------------


def test_synthetic_is_deterministic_per_seed():
    a = datasets.synthetic(300, seed=4, image_share=0.1, long_context_share=0.05, sessions=20)
    b = datasets.synthetic(300, seed=4, image_share=0.1, long_context_share=0.05, sessions=20)
    c = datasets.synthetic(300, seed=5, image_share=0.1, long_context_share=0.05, sessions=20)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert a.frame["input_tokens"].tolist() != c.frame["input_tokens"].tolist()
    assert a.models == () and all(truth_of(r) is None for r in a)


def test_synthetic_shares_are_exact():
    ds = datasets.synthetic(1000, seed=0, image_share=0.2, long_context_share=0.05)
    frame = ds.frame
    sizes = frame["size"].value_counts().to_dict()
    assert sizes["long_context"] == 50
    # The default mix 60/30/10 applies before long-context requests take their share.
    assert sizes["short"] + sizes["medium"] + sizes["long"] == 950
    assert abs(sizes["short"] - 570) <= 40 and abs(sizes["long"] - 95) <= 20
    with_images = [r for r in ds if r.images]
    assert len(with_images) == 200 == int(frame["has_image"].sum())
    assert all(
        r.images[0].startswith("https://") and r.input_tokens > IMAGE_TOKENS for r in with_images
    )
    long = frame[frame["long_context"]]
    assert (
        long["input_tokens"].median()
        > 10_000
        > frame[~frame["long_context"]]["input_tokens"].median()
    )


def test_synthetic_custom_sizes():
    ds = datasets.synthetic(200, seed=1, sizes={"tiny": (1.0, sy.dists.Constant(7))})
    assert set(ds.frame["input_tokens"]) == {7} and set(ds.frame["size"]) == {"tiny"}
    ds = datasets.synthetic(100, sizes={"short": 1, "long": 1})
    assert ds.frame["size"].value_counts().to_dict() == {"short": 50, "long": 50}


def test_synthetic_sessions():
    ds = datasets.synthetic(400, seed=2, sessions=30, sizes={"short": 1.0})
    frame = ds.frame
    assert frame["session_id"].nunique() == 30
    for _, turns in frame.groupby("session_id", sort=False):
        assert turns["turn"].tolist() == list(range(1, len(turns) + 1))
        # Later turns carry the conversation so far, so their inputs grow.
        assert turns["input_tokens"].is_monotonic_increasing
    assert {"session_id", "turn"} <= set(ds[0].metadata)


def test_synthetic_errors():
    with pytest.raises(ValueError, match="unknown size class 'huge'"):
        datasets.synthetic(10, sizes={"huge": 1.0})
    with pytest.raises(ValueError, match="image_share must be a number from 0 to 1"):
        datasets.synthetic(10, image_share=1.5)
    with pytest.raises(ValueError, match="sessions must be an int from 1 to n"):
        datasets.synthetic(10, sessions=11)
    with pytest.raises(ValueError, match="n must be an int ≥ 1"):
        datasets.synthetic(0)


def test_synthetic_traffic_runs_on_catalogue_profiles():
    traffic = datasets.synthetic(60, seed=0, image_share=0.5)
    host = sy.SimHost(
        {k: p.replace(quality=0.7) for k, p in sy.profiles.from_catalog(["gpt-4o"]).items()}
    )
    result = sy.run(sy.strategies.single("gpt-4o"), traffic, host=host)
    assert (result.requests["status"] == "ok").all()
    assert not math.isnan(result.requests["quality"].mean())
    assert result.requests["has_image"].sum() == 30


def test_from_frame_estimates_input_tokens_into_the_frame_and_keeps_prompts_as_str():
    import numpy as np

    frame = pd.DataFrame(
        {"q": np.array(["How do I export my data to CSV?", "hi"]), "a": [1.0, 0.0]}
    )
    data = sy.datasets.from_frame(frame, prompt="q", quality={"m": "a"})
    requests = list(data)
    assert data.frame["input_tokens"].tolist() == [r.input_tokens for r in requests] == [12, 5]
    assert all(type(r.prompt) is str for r in requests)
    assert len(data.filter(lambda f: f["input_tokens"] > 5)) == 1


def test_columns_named_like_the_roles_take_them_when_not_mapped():
    frame = pd.DataFrame(
        {
            "prompt": ["a", "b"],
            "input_tokens": [100, 200],
            "id": ["q3", "q4"],
            "images": [None, "https://example.com/cat.png"],
        }
    )
    ds = sy.datasets.from_frame(frame, prompt="prompt")
    assert ds.frame["id"].tolist() == ["q3", "q4"]
    assert ds.frame["input_tokens"].tolist() == [100, 200]
    assert [ds[i].images for i in range(2)] == [(), ("https://example.com/cat.png",)]
    # a keyword still names another column (the same-named one then has to be renamed to stay)
    other = sy.datasets.from_frame(
        frame.rename(columns={"input_tokens": "counted"}).assign(n=[7, 8]),
        prompt="prompt",
        input_tokens="n",
    )
    assert other.frame["input_tokens"].tolist() == [7, 8]
    assert other.frame["counted"].tolist() == [100, 200]
