"""LEO latency and throughput predictors and an adaptive-video harness for leocc.

Modules: ``traces`` (series from leocc traces), ``detector`` (host-side reconfiguration
events), ``features`` (what a host really has), ``metrics`` (T3P Table 1), ``models`` (last
value, harmonic mean, GBDT, numpy LSTM), ``evaluate`` (train/test over generated seeds) and
``video`` (DASH-style server, RobustMPC client, trace-driven player).
"""
