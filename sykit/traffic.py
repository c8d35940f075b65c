"""When requests arrive: open-loop arrival processes, recorded traces, and the offered load a run
saw next to its latency.

    res = sy.run(algo, requests, host=host, arrivals=sy.traffic.Poisson(20))   # 20 requests/s
    trace = sy.traffic.Trace.from_frame(df, time="ts", input_tokens="in", output_tokens="out")
    trace = sy.datasets.azure_trace("code").window(0, 60)      # a shipped recording, first minute
    res = sy.run(algo, trace.requests(models=host.profiles), arrivals=trace, host=host)
    sy.traffic.offered_load(res, bin_s=5.0)     # arrivals per second and latency, binned by arrival
    sy.traffic.plot_load(res, bin_s=10.0)       # the same in two panels

``sy.run``'s ``arrivals=`` takes a :class:`Poisson`, a :class:`Trace` (anything with
``arrivals_for(n)``), or a list of arrival times in seconds; docs/traces.md shows a trace's bursts
against Poisson traffic. ``sy.datasets.Trace`` is the same class as ``sy.traffic.Trace``.
"""

from sykit._viz.load import offered_load, plot_load
from sykit._world.config import Poisson
from sykit.datasets._traces import Trace

__all__ = ["Poisson", "Trace", "offered_load", "plot_load"]

# Reprs, pickles and tracebacks say sykit.traffic.Poisson.
for _obj in (Poisson, Trace, offered_load, plot_load):
    _obj.__module__ = __name__
del _obj
