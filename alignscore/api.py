"""The front door: ``alignscore.score(cands, refs, **options)``, and a function per preset.

Both take the options of ``alignscore score`` by name (a flag's name with underscores:
``model``, ``layer``, ``aligner``, ``n_gram``, ``weighting``, ``idf``, ``batch_size``, ``cache``,
...; :func:`alignscore.config.options` lists them all) and compile them to one
:class:`~alignscore.config.RunSpec`, exactly as the command line does, so the same options give the
same scores and the same signature every way in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .rescale import Baseline
from .combination import combination_in
from .config import build, run_compiled
from .config.schema import options as option_table
from .encoders.base import Encoder
from .errors import ConfigError
from .lm import lm_named
from .scorer import Scorer
from .scores import Scores


def score(cands: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]] | None = None, *,
          sources: Sequence[str] | None = None, **options: Any) -> Scores:
    """Score each candidate against its reference(s), as ``alignscore score`` does with the same
    options; bert_score's ``score`` habit in one call. Or against its source (reference-free).

    Parameters
    ----------
    cands : the candidate texts.
    refs : one reference per candidate, or a list of references per candidate.
    sources : instead of ``refs``, the text each candidate translates (another language, a
        multilingual ``model``; ``remap=FILE`` maps its vectors, see ``alignscore remap``;
        ``lm=MODEL`` adds ``lm_weight`` times a causal LM's fluency score of each candidate).
    **options : the options of ``alignscore score`` by name (``model="all-MiniLM-L6-v2"``,
        ``layer=4``, ``idf=True``, ``aligner="wmd"``, ``n_gram=2``, ``preset="moverscore-v2"``,
        ``config="best.toml"``, ...). Default: BERTScore with roberta-large, layer 17.

    Returns
    -------
    :class:`~alignscore.scores.Scores`: per-candidate scores by metric name (``scores["f1"]``,
    ``scores.f1``), the best reference of each candidate and the :attr:`signature`.

    Raises
    ------
    ConfigError
        Before any model is looked up: a bad value, a setting its part does not take, parts that
        do not fit, a string where a switch is meant (``idf="no"``); then, last, a model path
        that names nothing. Each names the option as written here (``score(): reg=: ...``).

    Every call builds its scorer (loads the model); to score several batches with one model,
    build it once: ``scorer = alignscore.build(alignscore.run_spec(options))``.

    Examples
    --------
    Every value is checked before the model is looked up:

    >>> score(["a"], ["b"], model="/no/such/model", aligner="sinkhorn", reg=-1)
    Traceback (most recent call last):
    ...
    alignscore.errors.ConfigError: score(): reg=: expected a number > 0, not -1.0
    >>> score(["a"], ["b"], idf="no")
    Traceback (most recent call last):
    ...
    alignscore.errors.ConfigError: score(): idf=: True or False, not 'no'
    """
    if (combination := combination_in(options, where="score()")) is not None:  # config names a [[parts]] file
        return combination.build(sources is not None).score(cands, refs, sources=sources)
    spec, provenance = run_compiled(options, where="score()")
    scorer = build(spec, provenance=provenance)
    with lm_named(provenance, "score()"):
        return scorer.score(cands, refs, sources=sources)


def _preset(name: str, encoder: Encoder | None, options: dict[str, Any], idf: bool | None = None) -> Scorer:
    """The preset's scorer with ``options``; ``idf=False`` (the MoverScore presets' own argument)
    is ``weighting="none"``, and giving both is a conflict."""
    function = name.replace("-", "_")
    table = option_table()
    # an encoder object is its model and its device: no encoder option, nor the device, beside it
    named = [k for k in options if k in table and (table[k].group == "encoder" and options[k] is not None
                                                   or k == "device" and options[k])]
    if encoder is not None and named:
        raise ConfigError(f"{function}(): encoder= and {named[0]}= both set the encoder; give one")
    if idf is False:
        options = dict(options, idf=False)
    spec, provenance = run_compiled(dict(options, preset=name), where=f"{function}()")
    return build(spec, encoder=encoder, provenance=provenance)


def bertscore(model: str | None = None, layer: int | None = None, idf: bool = False,
              baseline: str | Path | Baseline | None = None, device: str | None = None,
              encoder: Encoder | None = None, **options: Any) -> Scorer:
    """BERTScore (Zhang et al., 2020): one layer, greedy matching of cosine similarities.

    Parameters
    ----------
    model : a hub id or local directory (``None``: roberta-large).
    layer : the layer (``None``: the model's tuned layer).
    idf : weigh tokens by idf from the references (idf-S).
    baseline : rescale with this :class:`Baseline` or bert_score-format file.
    device : as ``--device``.
    encoder : an encoder object instead of ``model`` and ``device``.
    **options : any option of ``alignscore score`` by name.

    Returns
    -------
    Scorer
        Checked against the model's configuration and tokenizer; its weights load on first use.

    Examples
    --------
    >>> bertscore(model="all-MiniLM-L6-v2", layer=4).composition.aggregator
    SingleLayer(layer=4)
    """
    return _preset("bertscore", encoder, dict(options, model=model, layer=layer, idf=idf or None, baseline=baseline,
                                              device=device))


def moverscore_v2(model: str | None = None, idf: bool = True, n_gram: int | str | None = None,
                  stop_words: Sequence[str] = (), device: str | None = None, encoder: Encoder | None = None,
                  **options: Any) -> Scorer:
    """MoverScore as the ``moverscore`` 1.0.3 package's ``moverscore_v2.word_mover_score``
    computes it (to float tolerance; see tests/parity/test_moverscore_v2_parity.py):

    - the last layer's token vectors, unit-normalised; [CLS] and [SEP] take part (``keep``);
    - tokens whose string is one ASCII punctuation character or contains "##" get no mass
      (``ms2-punct``, its exact string test), nor do ``stop_words`` (exact token strings);
    - ``idf=True``: reference tokens weighed by the idf of the references, candidate tokens by
      the idf of the candidates (idf-S with SEP; [CLS]/[SEP] then get idf 0); ``idf=False``:
      mass 1 for every token (``defaultdict(lambda: 1.)``);
    - exact transport with Euclidean cost, ``score = 1 - WMD``; several references averaged.

    Its default model is distilbert-base-uncased. One difference: where every token of a text
    is filtered out, moverscore_v2 returns 1 (zero transport cost) and this preset 0, as every
    aligner here does for a text with nothing to align.

    Parameters
    ----------
    n_gram : WMD on n-grams (``"sentence"``: SMD).
    stop_words : token strings that get no mass.
    model, idf, device, encoder, **options : as above and :func:`bertscore`'s.

    Returns
    -------
    Scorer
        Checked as :func:`bertscore`'s is.

    Examples
    --------
    >>> moverscore_v2(model="all-MiniLM-L6-v2", stop_words=["the"]).composition.roles.filters
    (MoverScoreV2Strings(), StopWords(stopwords=('the',), stopwords_unit='token'))
    """
    if stop_words:
        options.update(stopwords=list(stop_words), stopwords_unit="token")
    return _preset("moverscore-v2", encoder, dict(options, model=model, n_gram=n_gram, device=device), idf)


def moverscore_v1(model: str | None = None, idf: bool = True, n_gram: int | str | None = None,
                  device: str | None = None, encoder: Encoder | None = None, **options: Any) -> Scorer:
    """MoverScore as the paper computes it (``moverscore.py`` of the ``moverscore`` package):

    - power means over the last five layers: each layer's token vectors L2-normalised, then
      ``[min; mean; max]`` across the five layers, concatenated (``PowerMeans``), re-normalised;
    - [RM]: punctuation and every non-first subword get no mass (``rm``, word starts from the
      tokenizer, so it holds for any tokenizer); [CLS]/[SEP] take part (``keep``; under idf
      their mass is 0);
    - ``idf=True``: reference idf from the references, candidate idf from the candidates;
    - exact transport with squared Euclidean cost, ``score = 1 - WMD``; ``n_gram`` for WMD-n.

    The paper used a BERT-base fine-tuned on MNLI; pass such a model as ``model``. Several
    references per candidate are averaged, as in MoverScore's examples (``multi_ref="max"``
    to override), in both MoverScore presets.

    Parameters
    ----------
    model, idf, n_gram, device, encoder, **options : as above and :func:`moverscore_v2`'s.

    Returns
    -------
    Scorer
        Its aggregator :class:`PowerMeans`, its aligner :class:`WMD`.

    Examples
    --------
    >>> moverscore_v1(model="all-MiniLM-L6-v2", idf=False).composition.weighting.signature()
    'none'
    """
    return _preset("moverscore-v1", encoder, dict(options, model=model, n_gram=n_gram, device=device), idf)


def baryscore(model: str | None = None, idf: bool = True, reg: float | None = None, device: str | None = None,
              encoder: Encoder | None = None, **options: Any) -> Scorer:
    """BaryScore (Colombo et al., 2021) with the defaults of the authors' ``BaryScoreMetric``:
    bert-base-uncased, the last five layers kept side by side (``stack``), every token taking
    part ([CLS]/[SEP] too: ``keep``), idf masses (``idf=True``; reference idf from the
    references, candidate idf from the candidates), the barycenter of the layers per text and
    the entropic (``reg``, default 0.01) transport cost between the two barycenters, reported as
    ``1 - d``. See :class:`~alignscore.aligners.barycenter.BaryScore` for what differs from their code.

    Parameters
    ----------
    reg : the entropic regularisation (``None``: 0.01).
    idf : as above.
    model, device, encoder, **options : as :func:`bertscore`'s.

    Returns
    -------
    Scorer
        Its aligner :class:`~alignscore.aligners.barycenter.BaryScore`.

    Examples
    --------
    >>> baryscore(model="all-MiniLM-L6-v2", reg=0.1).composition.aligner.reg
    0.1
    """
    return _preset("baryscore", encoder, dict(options, model=model, reg=reg, device=device), idf)


#: the function of each preset, by the preset's name
PRESET_FUNCTIONS = {f.__name__.replace("_", "-"): f for f in (bertscore, moverscore_v2, moverscore_v1, baryscore)}

__all__ = ["PRESET_FUNCTIONS", "baryscore", "bertscore", "moverscore_v1", "moverscore_v2", "score"]
