"""Adaptive video over a LEO path: a DASH-style ladder, RobustMPC with a pluggable throughput
predictor, a trace-driven player (fast) and an HTTP server/client pair over kernel TCP (real).
"""
