"""The target-side language-model term of XMoverScore (Zhao et al. 2020): how fluent a causal
language model finds a translation, mixed into the score with a weight.

The score of a text is the reference code's (``lm_perplexity`` in its ``score_utils_2.py``): the
text's ``n`` tokens (the LM's tokenizer, no special tokens added, at most the model's context
length: the first ones), the mean log-probability ``m`` of the ``n - 1`` tokens the model
predicts (each from the tokens before it; the first token is not predicted), and

    score = exp(m / n)  (= perplexity ** (-1 / n)),

in (0, 1], higher for more probable texts. A text of one token, or an empty one, scores 0 as in
the reference. A text that is not empty but of which the tokenizer makes no tokens, or only
unknown ones, cannot be judged by that LM: an error (a language model for another language).

That score is kept for parity (``lm_score = "reference"``), but it carries little signal: its
exponent ``m / n`` mixes a text's fluency with its length. ``lm_score = "mean-logprob"`` is ``m``
itself, the mean log-probability per predicted token (a text of fewer than two tokens has none:
its term is 0, it moves no score).

:class:`LMTerm` is the term as a run holds it (the composition's ``lm``, ``lm_weight``,
``lm_score``, ``lm_location`` and ``lm_scale``): which LM, which score, its fixed scale, its weight,
its name in the signature, and the mix ``score + lm_weight * (lm_score - lm_location) / lm_scale``
of each candidate's scores (XMoverScore's ``metric_combination`` with weights 1 and 0.1 where the
location is 0 and the scale 1). The location and scale are declared (or learned from training data
by ``alignscore fit``), never taken from the texts being scored, so that a candidate's score does
not depend on the others.
"""

from __future__ import annotations

import json
import math
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

from .encoders.fingerprint import directory_fingerprint
from .encoders.spec import local_model
from .errors import ConfigError, ModelLoadError
from .settings import SettingError, check_settings, setting
from .signature import DIGEST_HEX

#: XMoverScore's weight of the LM term (the reference's ``metric_combination(..., [1, 0.1])``)
PAPER_WEIGHT = 0.1
#: the LM's score of a text: the reference's ``exp(m / n)``, or the mean log-probability ``m``
LM_SCORES = ("reference", "mean-logprob")
#: the architectures' name endings of a causal language model
CAUSAL = ("ForCausalLM", "LMHeadModel", "CausalLM")


class UnreadableTexts(ConfigError):
    """Texts that the language model ``model``'s tokenizer cannot read: ``count`` of them, the
    first ``first`` (0-based, among the texts scored), of which it made no tokens (``empty``) or
    only unknown ones."""

    def __init__(self, model: str, count: int, first: int, empty: bool) -> None:
        super().__init__(f"the language model {model!r} cannot read {count} of the texts (text {first + 1}: "
                         f"{'no tokens' if empty else 'only unknown tokens'}): choose a language model of the "
                         "target language", ("lm",))
        self.model, self.count, self.first, self.empty = model, count, first, empty

    def shifted(self, offset: int) -> "UnreadableTexts":
        """The same error for texts that start ``offset`` texts later (a chunk of a stream)."""
        return UnreadableTexts(self.model, self.count, self.first + offset, self.empty)


def reference_score(logprob_sum: float, tokens: int) -> float:
    """The reference's LM score of a text of ``tokens`` tokens whose ``tokens - 1`` predicted
    tokens have the summed log-probability ``logprob_sum``: ``exp(mean / tokens)``; 0 for a text
    of fewer than two tokens.

    >>> round(reference_score(-4.0, 3), 6) == round(math.exp(-2.0 / 3), 6)
    True
    >>> reference_score(0.0, 1)
    0.0
    """
    if tokens < 2:
        return 0.0
    return math.exp(logprob_sum / (tokens - 1) / tokens)


def mean_logprob(logprob_sum: float, tokens: int) -> float | None:
    """The mean log-probability of the ``tokens - 1`` predicted tokens of a text whose summed
    log-probability is ``logprob_sum``; None for a text of fewer than two tokens (none predicted).

    >>> mean_logprob(-4.0, 3)
    -2.0
    >>> mean_logprob(0.0, 1) is None
    True
    """
    return logprob_sum / (tokens - 1) if tokens >= 2 else None


def check_causal(folder: Path, option: str = "lm") -> None:
    """Raise a SettingError naming ``option`` where the local ``folder`` (or file) is not a causal
    language model that transformers reads: a GGUF file (say how to convert it), or a folder whose
    ``config.json`` names only architectures that are not causal LMs (an encoder such as BERT).
    A folder without ``config.json`` is left to the loader.

    >>> check_causal(Path("model.gguf"))
    Traceback (most recent call last):
    alignscore.settings.SettingError: lm: model.gguf is a GGUF file: convert it to a Hugging Face folder first \
(transformers' from_pretrained(folder, gguf_file=NAME), then save_pretrained of a plain model with its state dict, as \
benchmarks/fetch_smollm2.py does)
    """
    if folder.suffix.lower() == ".gguf":
        raise SettingError(option, f"{folder.name} is a GGUF file: convert it to a Hugging Face folder first "
                                   "(transformers' from_pretrained(folder, gguf_file=NAME), then save_pretrained of a "
                                   "plain model with its state dict, as benchmarks/fetch_smollm2.py does)")
    config = folder / "config.json"
    if not folder.is_dir() or not config.is_file():
        return
    try:
        architectures = json.loads(config.read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return  # the loader says what is wrong with it
    if architectures and not any(str(a).endswith(CAUSAL) for a in architectures):
        raise SettingError(option, f"{folder} is not a causal language model (its architectures: "
                                   f"{', '.join(map(str, architectures))}): give one that predicts the next token "
                                   "(GPT-2, Llama, SmolLM2, ...)")


def next_token_logprobs(logits: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``[B]`` float64: the summed log-probability of tokens ``1..`` of each row of the
    right-padded batch ``ids [B, T]`` given the tokens before it, from the model's ``logits
    [B, T, V]`` (position ``t`` predicts token ``t + 1``); padding (``mask`` 0) left out.

    >>> logits = torch.zeros(1, 3, 4)  # uniform over 4 tokens
    >>> round(float(next_token_logprobs(logits, torch.tensor([[1, 2, 0]]), torch.tensor([[1, 1, 0]]))), 6)
    -1.386294
    """
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    taken = logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1).double()
    return (taken * mask[:, 1:].to(taken)).sum(1)


@dataclass(eq=False)
class CausalLM:
    """Any causal language model (``AutoModelForCausalLM`` and its ``AutoTokenizer``) by hub id or
    local directory, loaded when first used.

    Parameters
    ----------
    model : str
        Hub id or local directory.
    device_name : str or None
        ``"cpu"``, ``"cuda"``, ...; default: CUDA when available.
    batch_size : int
        Texts per forward pass (the scores change by float rounding at most).

    Examples
    --------
    >>> CausalLM("gpt2").signature()
    'lm:gpt2'
    """

    model: str
    device_name: str | None = None
    batch_size: int = 8
    _tok: Any = field(default=None, init=False, repr=False)
    _lm: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.model, os.PathLike):
            self.model = os.fspath(self.model)
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError(f"lm must name a causal language model (hub id or folder), not {self.model!r}",
                              ("lm",))
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ConfigError(f"batch_size must be an integer >= 1, not {self.batch_size!r}")

    def signature(self) -> str:
        """``lm:<name>``, for the score's signature."""
        return f"lm:{self.model}"

    @property
    def device(self) -> torch.device:
        return torch.device(self.device_name or ("cuda" if torch.cuda.is_available() else "cpu"))

    def load_tokenizer(self) -> Any:
        if self._tok is None:
            from transformers import AutoTokenizer

            try:
                self._tok = AutoTokenizer.from_pretrained(self.model)
            except Exception as exc:  # transformers raises OSError, ValueError, HTTP errors...
                raise ModelLoadError(f"cannot load the language model {self.model!r}: {_first_line(exc)}") from None
        return self._tok

    def load_model(self) -> Any:
        if self._lm is None:
            from transformers import AutoModelForCausalLM

            try:
                lm = AutoModelForCausalLM.from_pretrained(self.model)
            except Exception as exc:
                raise ModelLoadError(f"cannot load the language model {self.model!r}: {_first_line(exc)}") from None
            self._lm = lm.eval().to(self.device)
        return self._lm

    @property
    def context_length(self) -> int:
        """The most tokens the model reads at once (its position embeddings'; else the tokenizer's)."""
        config = self.load_model().config
        for key in ("n_positions", "max_position_embeddings", "n_ctx"):
            if isinstance(getattr(config, key, None), int):
                return int(getattr(config, key))
        limit = self.load_tokenizer().model_max_length
        return limit if limit < 100_000 else 1024

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The tokens of each stripped text, no special tokens added (not truncated).

        Raises
        ------
        ConfigError
            A non-empty text of which the tokenizer makes no tokens, or only unknown ones.
        """
        tok = self.load_tokenizer()
        stripped = [t.strip() for t in texts]
        ids = tok(stripped, add_special_tokens=False)["input_ids"] if stripped else []
        unk = tok.unk_token_id
        bad = [i for i, (text, row) in enumerate(zip(stripped, ids))
               if text and (not row or (unk is not None and all(t == unk for t in row)))]
        if bad:
            raise UnreadableTexts(self.model, len(bad), bad[0], not ids[bad[0]])
        return [list(row) for row in ids]

    def log_likelihoods(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logprob_sum [N] float64, tokens [N] int64)``: each text's summed log-probability of its
        predicted tokens (all but the first), and its number of tokens, at most
        :attr:`context_length` (the first ones)."""
        limit = self.context_length
        rows = [row[:limit] for row in self.token_ids(texts)]
        lengths = torch.tensor([len(r) for r in rows], dtype=torch.long)
        sums = torch.zeros(len(rows), dtype=torch.float64)
        order = [i for i in torch.argsort(lengths, descending=True, stable=True).tolist() if lengths[i] >= 2]
        lm = self.load_model()
        pad = self.load_tokenizer().pad_token_id
        pad = 0 if pad is None else pad
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                chosen = order[start:start + self.batch_size]
                width = int(lengths[chosen[0]])
                ids = torch.full((len(chosen), width), pad, dtype=torch.long)
                mask = torch.zeros(len(chosen), width, dtype=torch.long)
                for b, i in enumerate(chosen):
                    ids[b, :len(rows[i])] = torch.tensor(rows[i])
                    mask[b, :len(rows[i])] = 1
                ids, mask = ids.to(self.device), mask.to(self.device)
                logits = lm(input_ids=ids, attention_mask=mask).logits
                sums[chosen] = next_token_logprobs(logits, ids, mask).cpu()
        return sums, lengths

    def score(self, texts: Sequence[str]) -> torch.Tensor:
        """``[N]`` float64: the reference's LM score of each text (see the module's docstring)."""
        sums, lengths = self.log_likelihoods(texts)
        return torch.tensor([reference_score(float(s), int(n)) for s, n in zip(sums, lengths)], dtype=torch.float64)


@dataclass(frozen=True)
class LMTerm:
    """The target-side LM term of a run: the causal LM ``lm`` (hub id or local folder), which
    score of it, its fixed scale and its weight; each candidate's scores become
    ``score + lm_weight * (lm_score - lm_location) / lm_scale`` (every output of the aligner). The
    LM loads when texts are first scored, once per device. Its settings are declared here and
    checked by :func:`~alignscore.settings.check_settings`; a run's options take them from here.

    Examples
    --------
    >>> LMTerm("gpt2").signature()
    'gpt2(w=0.1)'
    >>> LMTerm("gpt2", 0.5, "mean-logprob", -4.0, 2.0).signature()
    'gpt2(mean-logprob,(x+4.0)/2.0,w=0.5)'
    >>> [round(x, 6) for x in LMTerm("gpt2", 0.5).mix(torch.tensor([0.25, 0.5]), torch.tensor([0.5, 0.0])).tolist()]
    [0.5, 0.5]
    """

    lm: str | os.PathLike[str] = setting(None, metavar="MODEL", names_model=True, help=(
        "A causal language model (hub id or local directory) whose fluency score of each candidate is added to "
        "its scores with --lm-weight (XMoverScore's target-side LM term): scoring against --sources only. "
        "Default: none (the term is off)."))
    lm_weight: float = setting(PAPER_WEIGHT, ge=0, metavar="W", help=(
        "The weight of the --lm term: each score becomes score + W * (lm_score - location) / scale "
        "(XMoverScore's 0.1, the default)."))
    lm_score: str = setting(LM_SCORES[0], choices=LM_SCORES, help=(
        "The LM's score of a candidate: reference (exp(m / n), the reference code's, the default) or "
        "mean-logprob (m, the mean log-probability per predicted token: the one that carries signal)."))
    lm_location: float = setting(0.0, metavar="X", help=(
        "Subtracted from the LM score before it is weighted: a fixed number (from training data, never "
        "from the texts being scored). Default 0."))
    lm_scale: float = setting(1.0, gt=0, metavar="X", help=(
        "The LM score (less --lm-location) is divided by it before it is weighted: a fixed number (the "
        "training data's standard deviation, say). Default 1."))
    _models: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _digest: list = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.lm is None or isinstance(self.lm, str) and not self.lm.strip():
            raise SettingError("lm", f"a causal language model (hub id or folder) is needed, not {self.lm!r}")
        check_settings(self)

    def locate(self) -> None:
        """Raise (a SettingError naming ``lm``) where the LM names a path that does not exist, a
        GGUF file or a folder that is not a causal LM (:func:`check_causal`); a hub id is looked
        up when the LM loads."""
        folder = local_model(self.lm, "lm")
        if folder is not None:
            check_causal(folder)

    def signature(self) -> str:
        """``<hub id>(w=<weight>)``, or for a local folder ``<folder name>#<digest of its files>(w=...)``
        (the first 12 hex digits of the SHA-256 over its files, as a model's files are hashed); the
        score and its scale in front of the weight where they are not the reference's."""
        if not self._digest:
            folder = local_model(self.lm, "lm")
            name = self.lm if folder is None or not folder.is_dir() else \
                f"{folder.name}#{directory_fingerprint(folder.resolve())[:DIGEST_HEX]}"
            self._digest.append(name)
        score = "" if self.lm_score == LM_SCORES[0] else f"{self.lm_score},"
        scale = "" if (self.lm_location, self.lm_scale) == (0.0, 1.0) else \
            f"(x{-self.lm_location:+})/{self.lm_scale!r},"
        return f"{self._digest[0]}({score}{scale}w={self.lm_weight!r})"

    def model(self, device: str | None = None, batch_size: int = 8) -> CausalLM:
        """The :class:`CausalLM` on ``device`` (made once per device and batch size; loads when used)."""
        key = (device, batch_size)
        if key not in self._models:
            self._models[key] = CausalLM(self.lm, device_name=device, batch_size=batch_size)
        return self._models[key]

    def values(self, texts: Sequence[str], device: str | None = None, batch_size: int = 8) -> list[float | None]:
        """The LM's score of each text (``lm_score``): under ``reference`` a text of fewer than
        two tokens scores 0 (the reference's), under ``mean-logprob`` it has none (None)."""
        sums, lengths = self.model(device, batch_size).log_likelihoods(texts)
        score = reference_score if self.lm_score == "reference" else mean_logprob
        return [score(float(s), int(n)) for s, n in zip(sums, lengths)]

    def scores(self, texts: Sequence[str], device: str | None = None, batch_size: int = 8) -> torch.Tensor:
        """``[N]`` float64: the LM's score of each text (:meth:`values`), ``lm_location`` where
        it has none (its term is 0)."""
        values = self.values(texts, device, batch_size)
        return torch.tensor([self.lm_location if v is None else v for v in values], dtype=torch.float64)

    def mix(self, values: torch.Tensor, lm_scores: torch.Tensor) -> torch.Tensor:
        """``values + lm_weight * (lm_scores - lm_location) / lm_scale`` (in float64), in ``values``' dtype."""
        term = (lm_scores.double() - self.lm_location) / self.lm_scale
        return (values.double() + self.lm_weight * term).to(values.dtype)


@contextmanager
def lm_named(provenance: Any, where: str = "") -> Iterator[None]:
    """An error about the LM term raised while scoring (texts the language model cannot read, an
    LM given references), reported with the option that named the LM as the user wrote it
    (``--lm``, ``lm=``, ``run.toml:3: lm``); ``where`` names the caller (``score()``) or what was
    scored (a language pair). ``provenance``: the run's
    :class:`~alignscore.config.sources.Provenance` (None: the error goes as it is, with ``where``)."""
    try:
        yield
    except ConfigError as exc:
        if "lm" not in exc.options or provenance is None and not where:
            raise
        named = provenance.relabel(exc) if provenance is not None else exc
        raise ConfigError(f"{where}: {named}" if where else str(named), named.options) from None


def check_readable(term: LMTerm, texts: Sequence[str], provenance: Any = None, where: str = "",
                   device: str | None = None, batch_size: int = 8) -> None:
    """Raise where the language model's tokenizer cannot read one of ``texts`` (only the tokenizer
    loads: a check before any model does), the error named as :func:`lm_named` names it."""
    with lm_named(provenance, where):
        term.model(device, batch_size).token_ids(texts)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


__all__ = ["CAUSAL", "CausalLM", "LMTerm", "LM_SCORES", "PAPER_WEIGHT", "UnreadableTexts", "check_causal",
           "check_readable", "lm_named", "mean_logprob", "next_token_logprobs", "reference_score"]
