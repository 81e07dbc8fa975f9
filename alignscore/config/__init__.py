"""The configuration of a run: the option table every way in shares
(:mod:`~alignscore.config.schema`), the sources a run is read from
(:mod:`~alignscore.config.sources`), the one compiler from sources to a :class:`RunSpec`
(:mod:`~alignscore.config.compile`), run files (:mod:`~alignscore.config.files`), presets, and
:func:`build`. The engine and the parts never import this package."""

from .build import build, build_all, check_model, encoder_of
from .compile import compile_run, run_spec
from .presets import PRESETS, Preset
from .schema import Option, options
from .sources import Source, file_source, make_source, preset_source, relabel, sources_of
from .spec import RunSpec

__all__ = ["PRESETS", "Option", "Preset", "RunSpec", "Source", "build", "build_all", "check_model",
           "compile_run", "encoder_of", "file_source", "make_source", "options", "preset_source", "relabel",
           "run_spec", "sources_of"]
