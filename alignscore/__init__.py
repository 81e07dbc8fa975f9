"""alignscore: text-generation metrics that align contextual token embeddings.

A metric is a path through five stages: encoder -> aggregator -> token filter -> weighting ->
aligner. ``alignscore.score(cands, refs, **options)`` scores in one call with the options of
``alignscore score``; every way in compiles to one :class:`RunSpec` (:func:`run_spec` from
options, :func:`compile_run` from several sources), which :func:`build` makes into a
:class:`Scorer`: an encoder, a :class:`Composition` (the parts after the encoder), a
:class:`Runtime` and a cache. The engine (:func:`score_many`) scores any number of compositions
over one encoding; :func:`tune` searches a space of them on human judgments. BERTScore is the
default composition. No model is loaded at import. The formulas each part follows:
docs/what-it-computes.md (the documentation site's "What it computes" page).
"""

from ._version import __version__
from .aggregators import AGGREGATORS, Aggregator, LayerMix, LayerStack, PowerMeans, Routing, SingleLayer
from .aligners import ALIGNERS, WMD, Aligner, BaryScore, Greedy, PairBatch, Sinkhorn, TransportAligner
from .api import PRESET_FUNCTIONS, baryscore, bertscore, moverscore_v1, moverscore_v2, score
from .rescale import Baseline, rescale
from .cache import CacheSpec
from .combination import Combination, CombinedScorer, combine
from .composition import Composition
from .config import PRESETS, RunSpec, build, build_all, compile_run, run_spec
from .encoders import CachedEncoder, Encoder, HFEncoder, StaticEncoder
from .encoders.spec import EncoderSpec
from .engine import Pairs, PairScores, score_many
from .errors import AlignScoreError, ConfigError, InputError, ModelLoadError, NonFiniteError
from .fit import fit
from .tune import TuneResult, tune
from .filters import FILTERS, MoverScoreV2Strings, RemoveSubwordsPunct, StopWords, TokenFilter, TokenRoles
from .baseline import compute_baseline
from .runtime import Runtime
from .scorer import Scorer, Scores
from .signature import Signature
from .weighting import WEIGHTINGS, Corpus, IdfL, IdfS, Norm, Uniform, Weighting

__all__ = ["Combination", "CombinedScorer", "combine", 
    "AGGREGATORS", "ALIGNERS", "FILTERS", "PRESETS", "PRESET_FUNCTIONS", "WEIGHTINGS", "Aggregator",
    "AlignScoreError", "Aligner", "BaryScore", "Baseline", "CacheSpec", "CachedEncoder", "Composition",
    "ConfigError", "Corpus", "Encoder", "EncoderSpec", "Greedy", "HFEncoder", "IdfL", "IdfS", "InputError",
    "LayerMix", "LayerStack", "ModelLoadError", "MoverScoreV2Strings", "NonFiniteError", "Norm", "PairBatch",
    "PairScores", "Pairs", "PowerMeans", "RemoveSubwordsPunct", "Routing", "RunSpec", "Runtime", "Scorer", "Scores",
    "Signature", "SingleLayer", "Sinkhorn", "StaticEncoder", "StopWords", "TokenFilter", "TokenRoles",
    "TransportAligner", "TuneResult", "Uniform", "WMD", "Weighting", "baryscore", "bertscore", "build", "build_all",
    "compile_run", "compute_baseline", "fit", "moverscore_v1", "moverscore_v2", "rescale", "run_spec", "score",
    "score_many", "tune", "__version__",
]
