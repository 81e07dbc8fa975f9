"""Aggregators: per-layer hidden states -> one vector per token."""

from ..registry import Registry
from .base import Aggregator
from .mix import LayerMix, mix_layers
from .pmeans import PowerMeans, power_mean
from .routing import Routing, route
from .single import SingleLayer
from .stack import LayerStack

AGGREGATORS: Registry[Aggregator] = Registry("aggregator")
AGGREGATORS.register("single")(SingleLayer)
AGGREGATORS.register("pmeans")(PowerMeans)
AGGREGATORS.register("routing")(Routing)
AGGREGATORS.register("stack")(LayerStack)
AGGREGATORS.register("mix")(LayerMix)

__all__ = ["AGGREGATORS", "Aggregator", "LayerMix", "LayerStack", "PowerMeans", "Routing", "SingleLayer", "power_mean", "mix_layers", "route"]
