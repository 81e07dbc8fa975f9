"""alignscore: text-generation metrics that align contextual token embeddings.

A metric is a path through five stages (see DESIGN): encoder -> aggregator -> token filter ->
weighting -> aligner. ``Scorer`` composes them; ``bertscore()`` is the default composition.
No model is loaded at import.
"""

__version__ = "0.1.0"

from .aggregators import AGGREGATORS, PowerMeans, SingleLayer  # noqa: E402
from .aligners import ALIGNERS, Greedy  # noqa: E402
from .encoders import ENCODERS, HFEncoder  # noqa: E402
from .errors import AlignScoreError, ConfigError, InputError, ModelLoadError  # noqa: E402
from .filters import FILTERS  # noqa: E402
from .presets import PRESETS, bertscore  # noqa: E402
from .rescale import Baseline, compute_baseline  # noqa: E402
from .scorer import Scorer, Scores  # noqa: E402
from .weighting import WEIGHTINGS, Idf, Uniform, idf_l, idf_s  # noqa: E402

__all__ = [
    "AGGREGATORS", "ALIGNERS", "ENCODERS", "FILTERS", "PRESETS", "WEIGHTINGS",
    "AlignScoreError", "Baseline", "ConfigError", "Greedy", "HFEncoder", "Idf", "InputError",
    "ModelLoadError", "PowerMeans", "Scorer", "Scores", "SingleLayer", "Uniform", "bertscore",
    "compute_baseline", "idf_l", "idf_s", "__version__",
]
