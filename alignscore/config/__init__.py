"""The configuration of a run: the option table every way in shares
(:mod:`~alignscore.config.schema`), the sources a run is read from
(:mod:`~alignscore.config.sources`), the one compiler from sources to a :class:`RunSpec`
(:mod:`~alignscore.config.compile`), presets, :func:`build`, and :func:`plan_runs` for many
runs over one encoding. The engine and the parts never import this package."""

from .build import build, check_model
from .compile import Compiled, compile_labelled, compile_run, run_compiled, run_spec
from .plan import RunPlan, RunSources, build_all, plan_runs
from .presets import PRESETS, Preset
from .schema import Option, options
from .sources import Naming, Provenance, Source, file_source, make_source, preset_source, sources_of
from .spec import RunSpec

__all__ = ["PRESETS", "Compiled", "Naming", "Option", "Preset", "Provenance", "RunPlan", "RunSources", "RunSpec",
           "Source", "build", "build_all", "check_model", "compile_labelled", "compile_run", "file_source",
           "make_source", "options", "plan_runs", "preset_source", "run_compiled", "run_spec", "sources_of"]
