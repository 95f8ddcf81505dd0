"""Predictors with one interface: ``fit(dataset, quantity)`` then ``predict(dataset)``.

``quantity`` is ``"thr"`` (Mbit/s) or ``"rtt"`` (ms); ``predict`` returns one column per
horizon of ``features.HORIZONS_S``.
"""

from .baselines import HarmonicMean, LastValue
from .gbdt import Gbdt
from .lstm import LstmPredictor

#: Every model the evaluation reports, in table order.
ALL = {"last": LastValue, "harmonic5": HarmonicMean, "gbdt": Gbdt, "lstm": LstmPredictor}
