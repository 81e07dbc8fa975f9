"""Aggregators: per-layer hidden states -> one vector per token."""

from ..registry import Registry
from .base import Aggregator
from .pmeans import PowerMeans, power_mean
from .routing import Routing, route
from .single import SingleLayer
from .stack import LayerStack

AGGREGATORS: Registry[Aggregator] = Registry("aggregator")
AGGREGATORS.register("single")(SingleLayer)
AGGREGATORS.register("pmeans")(PowerMeans)
AGGREGATORS.register("routing")(Routing)
AGGREGATORS.register("stack")(LayerStack)

__all__ = ["AGGREGATORS", "Aggregator", "LayerStack", "PowerMeans", "Routing", "SingleLayer", "power_mean", "route"]
