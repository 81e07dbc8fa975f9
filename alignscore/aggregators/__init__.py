"""Aggregators: per-layer hidden states -> one vector per token."""

from ..registry import Registry
from .base import Aggregator
from .pmeans import PowerMeans, power_mean
from .routing import Routing, route
from .single import SingleLayer

AGGREGATORS: Registry[Aggregator] = Registry("aggregator")
AGGREGATORS.register("single")(SingleLayer)
AGGREGATORS.register("pmeans")(PowerMeans)
AGGREGATORS.register("routing")(Routing)

__all__ = ["AGGREGATORS", "Aggregator", "PowerMeans", "Routing", "SingleLayer", "power_mean", "route"]
