"""alignscore: text-generation metrics that align contextual token embeddings.

A metric is a path through five stages: encoder -> aggregator -> token filter -> weighting ->
aligner. ``alignscore.score(cands, refs, **options)`` scores in one call with the options of
``alignscore score``; every way in compiles to one :class:`RunSpec` (:func:`run_spec` from
options), which :func:`build` makes into a :class:`Scorer`: an encoder, a :class:`Composition`
(the parts after the encoder), a :class:`Runtime` and a cache. The engine (:func:`score_many`)
scores any number of compositions over one encoding. BERTScore is the default composition.
No model is loaded at import. The formulas each part follows: docs/what-it-computes.md (the
documentation site's "What it computes" page).
"""

from ._version import __version__
from .aggregators import AGGREGATORS, Aggregator, PowerMeans, Routing, SingleLayer
from .aligners import ALIGNERS, WMD, Aligner, Greedy, PairBatch, Sinkhorn, TransportAligner
from .baseline import Baseline, rescale
from .api import PRESET_FUNCTIONS, baryscore, bertscore, moverscore_v1, moverscore_v2, score
from .composition import Composition, CompositionSpec, read_spec, to_spec, write_spec
from .encoders import ENCODERS, CachedEncoder, Encoder, HFEncoder
from .engine import Pairs, PairScores, score_many
from .errors import AlignScoreError, ConfigError, InputError, ModelLoadError
from .filters import FILTERS, MoverScoreV2Strings, RemoveSubwordsPunct, StopWords, TokenFilter, TokenRoles
from .options import run_spec
from .presets import PRESETS
from .rescale import compute_baseline
from .runtime import Runtime
from .scorer import Scorer, Scores
from .signature import Signature
from .spec import CacheSpec, RunSpec, build, build_all
from .encoders.spec import EncoderSpec
from .weighting import WEIGHTINGS, Corpus, Idf, Norm, Uniform, Weighting, idf_l, idf_s

__all__ = [
    "AGGREGATORS", "ALIGNERS", "ENCODERS", "FILTERS", "PRESETS", "PRESET_FUNCTIONS", "WEIGHTINGS",
    "Aggregator", "AlignScoreError", "Aligner", "Baseline", "CacheSpec", "CachedEncoder", "Composition",
    "CompositionSpec", "ConfigError", "Corpus", "Encoder", "EncoderSpec", "Greedy", "HFEncoder", "Idf", "InputError",
    "ModelLoadError", "MoverScoreV2Strings", "Norm", "PairBatch", "PairScores", "Pairs", "PowerMeans", "RemoveSubwordsPunct",
    "Routing", "RunSpec", "Runtime", "Scorer", "Scores", "Signature", "SingleLayer", "Sinkhorn", "StopWords",
    "TokenFilter", "TokenRoles", "TransportAligner", "Uniform", "WMD", "Weighting", "baryscore", "bertscore",
    "build", "build_all", "compute_baseline", "idf_l", "idf_s", "moverscore_v1", "moverscore_v2", "read_spec",
    "rescale", "run_spec", "score", "score_many", "to_spec", "write_spec", "__version__",
]
