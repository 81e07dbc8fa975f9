"""alignscore: text-generation metrics that align contextual token embeddings.

A metric is a path through five stages (see DESIGN): encoder -> aggregator -> token filter ->
weighting -> aligner. A :class:`Composition` holds the parts after the encoder; the engine
(:func:`score_many`) scores any number of compositions over one encoding; :class:`Scorer` is an
encoder, one composition and a :class:`Runtime`. ``bertscore()`` is the default composition.
No model is loaded at import.
"""

from ._version import __version__
from .aggregators import AGGREGATORS, Aggregator, PowerMeans, Routing, SingleLayer
from .aligners import ALIGNERS, WMD, Aligner, Greedy, PairBatch, Sinkhorn, TransportAligner
from .baseline import Baseline, rescale
from .composition import Composition, build, read_spec, to_spec, write_spec
from .encoders import ENCODERS, CachedEncoder, Encoder, HFEncoder
from .engine import Pairs, PairScores, score_many
from .errors import AlignScoreError, ConfigError, InputError, ModelLoadError
from .filters import FILTERS, MoverScoreV2Strings, RemoveSubwordsPunct, StopWords, TokenFilter, TokenRoles
from .presets import PRESETS, bertscore, moverscore_v1, moverscore_v2
from .rescale import compute_baseline
from .runtime import Runtime
from .scorer import Scorer, Scores
from .weighting import WEIGHTINGS, Corpus, Idf, Uniform, Weighting, idf_l, idf_s

__all__ = [
    "AGGREGATORS", "ALIGNERS", "ENCODERS", "FILTERS", "PRESETS", "WEIGHTINGS",
    "Aggregator", "AlignScoreError", "Aligner", "Baseline", "CachedEncoder", "Composition", "ConfigError",
    "Corpus", "Encoder", "Greedy", "HFEncoder", "Idf", "InputError", "ModelLoadError", "MoverScoreV2Strings",
    "PairBatch", "PairScores", "Pairs", "PowerMeans", "RemoveSubwordsPunct", "Routing", "Runtime", "Scorer",
    "Scores", "SingleLayer", "Sinkhorn", "StopWords", "TokenFilter", "TokenRoles", "TransportAligner",
    "Uniform", "WMD", "Weighting", "bertscore", "build", "compute_baseline", "idf_l", "idf_s",
    "moverscore_v1", "moverscore_v2", "read_spec", "rescale", "score_many", "to_spec", "write_spec",
    "__version__",
]
