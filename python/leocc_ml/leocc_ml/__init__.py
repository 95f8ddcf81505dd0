"""LEO latency and throughput predictors and an adaptive-video harness for leocc.

Modules: ``traces`` (series from leocc traces), ``detector`` (host-side reconfiguration
events), ``features`` (what a host really has), ``metrics`` (T3P Table 1), ``models`` (last
value, harmonic mean, GBDT, numpy LSTM), ``evaluate`` (train/test over generated seeds) and
``video`` (DASH-style server, RobustMPC client, trace-driven player).
"""

import os as _os

# scikit-learn's trees predict through OpenMP; on a small shared machine, spinning up a thread
# team per single-row prediction (the video client's case) made a session 10x slower than one
# thread. Users who want more threads set OMP_NUM_THREADS themselves.
_os.environ.setdefault("OMP_NUM_THREADS", "1")
