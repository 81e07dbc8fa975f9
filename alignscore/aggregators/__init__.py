"""Aggregators: per-layer hidden states -> one vector per token."""

from ..registry import Registry
from .base import Aggregator
from .pmeans import PowerMeans, power_mean
from .single import SingleLayer

AGGREGATORS: Registry[Aggregator] = Registry("aggregator")
AGGREGATORS.register("single")(SingleLayer)
AGGREGATORS.register("pmeans")(PowerMeans)

__all__ = ["AGGREGATORS", "Aggregator", "PowerMeans", "SingleLayer", "power_mean"]
