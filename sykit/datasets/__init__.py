"""Requests to route, with hidden per-model ground truth: shipped benchmarks, your own tables, and
synthetic traffic.

    ds = sy.datasets.load("routellm")            # or "mmlu_pro"; sy.datasets.names() lists them
    host = sy.SimHost(sy.profiles.from_catalog(ds.models))
    sy.run(sy.strategies.single("gpt-4-1106-preview"), ds.sample(200, seed=0), host=host)

    mine = sy.datasets.from_frame(df, prompt="question", quality={"small": "small_ok"})
    traffic = sy.datasets.synthetic(1000, seed=0, image_share=0.1, sessions=100)
    trace = sy.datasets.azure_trace("code")      # recorded arrival times and token pairs

A :class:`Dataset` iterates as :class:`sykit.Request` objects whose ground truth (a
:class:`GroundTruth`: quality and output tokens per model) only the simulated host sees;
``ds.frame`` shows the same rows as a DataFrame. A trace's recorded arrivals are a
``sy.traffic.Trace`` (also spelt ``sy.datasets.Trace``). See docs/datasets.md for what each dataset
holds and where it comes from.

May import: :mod:`sykit._base`, :mod:`sykit._world`.
"""

from sykit._world.models import GroundTruth
from sykit.datasets._dataset import Dataset
from sykit.datasets._frame import from_frame
from sykit.datasets._shipped import load, names
from sykit.datasets._synthetic import SIZES, synthetic
from sykit.datasets._traces import Trace, azure_trace

__all__ = [
    "SIZES",
    "Dataset",
    "GroundTruth",
    "Trace",
    "azure_trace",
    "from_frame",
    "load",
    "names",
    "synthetic",
]

# Reprs, pickles and tracebacks say sykit.datasets.Dataset (Trace's home is sykit.traffic).
for _obj in (Dataset, GroundTruth, azure_trace, from_frame, load, names, synthetic):
    _obj.__module__ = __name__
del _obj
