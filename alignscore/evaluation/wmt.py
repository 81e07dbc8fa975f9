"""Loading WMT segment-level direct-assessment data in the DAseg layout (any year).

One folder holds, per language pair ``<src>-<tgt>``, four files with one line per segment::

    DAseg.newstest{YEAR}.reference.<src>-<tgt>   the human reference translation
    DAseg.newstest{YEAR}.mt-system.<src>-<tgt>   the machine translation being judged
    DAseg.newstest{YEAR}.human.<src>-<tgt>       the standardised human DA score
    DAseg.newstest{YEAR}.source.<src>-<tgt>      the source sentence (optional here)

Language pairs are discovered from the file names. The idf-L corpus of a language pair (BERTScore
Table 9's IDF-L: all references of the full test set) is the official full reference file
``newstest{YEAR}-{src}{tgt}-ref.{tgt}`` when it is in the same folder, or a file the user names
(a path, or a template with ``{year}``, ``{src}``, ``{tgt}``, ``{lp}`` placeholders).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import ConfigError, InputError
from ..textio import read_lines

if TYPE_CHECKING:
    from ..remap import Remapping

_FILE = re.compile(r"^DAseg\.newstest(?P<year>\d{4})\.(?P<kind>reference|mt-system|human|source)"
                   r"\.(?P<src>[a-z]{2,3})-(?P<tgt>[a-z]{2,3})$")
REQUIRED = ("reference", "mt-system", "human")


@dataclass
class LangPair:
    """The judged segments of one language pair, and where its idf-L corpus comes from.

    ``idf_corpus`` is ``None`` when no corpus was found (rows that need idf-L cannot run).
    ``remap``: the remapping of the reference side's vectors, where ``references`` are the
    sources (:func:`~alignscore.evaluation.reference_free.against_sources`).
    """

    year: str
    src: str
    tgt: str
    references: list[str]
    candidates: list[str]
    human: np.ndarray
    sources: list[str] | None = None
    idf_corpus: list[str] | None = field(default=None, repr=False)
    idf_corpus_path: Path | None = None
    remap: "Remapping | None" = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return f"{self.src}-{self.tgt}"

    def __len__(self) -> int:
        return len(self.candidates)


def discover(folder: str | Path) -> dict[str, dict[tuple[str, str], dict[str, Path]]]:
    """``{year: {(src, tgt): {kind: path}}}`` for every DAseg file in ``folder``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("not a folder of WMT DAseg files", str(folder))
    found: dict[str, dict[tuple[str, str], dict[str, Path]]] = {}
    for path in sorted(folder.iterdir()):
        m = _FILE.match(path.name)
        if m and path.is_file():
            found.setdefault(m["year"], {}).setdefault((m["src"], m["tgt"]), {})[m["kind"]] = path
    if not found:
        raise InputError("no DAseg.newstest{YEAR}.{reference,mt-system,human}.<src>-<tgt> files here",
                         str(folder))
    return found


# the fewest segments a language pair can be meta-evaluated on (Williams' test needs 4)
MIN_SEGMENTS = 4


def read_scores(path: str | Path) -> np.ndarray:
    """Human scores, one finite number per line."""
    values = []
    for n, line in enumerate(read_lines(path), start=1):
        try:
            value = float(line)
        except ValueError:
            raise InputError(f"not a number: {line[:40]!r}", str(path), n) from None
        if not np.isfinite(value):
            raise InputError(f"not a finite number: {line[:40]!r}", str(path), n)
        values.append(value)
    return np.asarray(values, dtype=np.float64)


def check_human(human: np.ndarray, path: str | Path) -> None:
    """Human scores a correlation is defined with: at least :data:`MIN_SEGMENTS`, not all equal."""
    if len(human) < MIN_SEGMENTS:
        raise InputError(f"{len(human)} segment(s): meta-evaluation needs at least {MIN_SEGMENTS}", str(path))
    if human.min() == human.max():
        raise InputError(f"every human score is {float(human[0])!r}: a correlation with constant scores is undefined, "
                         "so this language pair cannot be meta-evaluated", str(path))


def read_human(path: str | Path, n: int) -> np.ndarray:
    """The human scores of ``n`` segments, one finite number per line of ``path``, that a
    correlation is defined with (:func:`check_human`)."""
    human = read_scores(path)
    if len(human) != n:
        raise InputError(f"{len(human)} human scores, but there are {n} candidates: give one per candidate",
                         str(path))
    check_human(human, path)
    return human


def _corpus_path(folder: Path, year: str, src: str, tgt: str, idf_corpus: str | Path | None) -> Path | None:
    if idf_corpus is not None:
        text = str(idf_corpus)
        try:
            path = Path(text.format(year=year, src=src, tgt=tgt, lp=f"{src}-{tgt}"))
        except (KeyError, IndexError, ValueError):
            raise ConfigError(f"cannot fill the idf corpus template {text!r}: use only "
                              "{year}, {src}, {tgt}, {lp}") from None
        if not path.is_file():
            raise InputError("idf-L corpus file not found", str(path))
        return path
    official = folder / f"newstest{year}-{src}{tgt}-ref.{tgt}"
    return official if official.is_file() else None


def load_daseg(folder: str | Path, lang_pairs: Sequence[str] | None = None, year: str | None = None,
               idf_corpus: str | Path | None = None) -> list[LangPair]:
    """Load the language pairs of a DAseg folder (all of them, or those named, in that order).

    Args:
        folder: the folder holding the ``DAseg.newstest{YEAR}.*`` files.
        lang_pairs: e.g. ``["cs-en", "de-en"]``; default: every pair found, sorted.
        year: which year, when the folder holds several.
        idf_corpus: the idf-L corpus: a file, or a template such as
            ``"refs/newstest{year}-{src}{tgt}-ref.{tgt}"``; default: the official full reference
            file next to the DAseg files, when it is there.

    Raises:
        InputError: missing files, files of different lengths, an empty reference or source line,
            human scores that are not finite numbers, that are all equal or fewer than :data:`MIN_SEGMENTS`.
        ConfigError: an unknown language pair or year, or several years and none chosen.
    """
    folder = Path(folder)
    found = discover(folder)
    if year is None:
        if len(found) > 1:
            raise ConfigError(f"{folder} holds several years ({', '.join(sorted(found))}); choose one")
        year = next(iter(found))
    elif year not in found:
        raise ConfigError(f"no DAseg files of year {year} in {folder} (found {', '.join(sorted(found))})")
    pairs = found[year]
    names = {f"{s}-{t}": (s, t) for s, t in pairs}
    if lang_pairs is None:
        wanted = sorted(names)
    else:
        wanted = list(dict.fromkeys(lang_pairs))
        unknown = [lp for lp in wanted if lp not in names]
        if unknown:
            raise ConfigError(f"language pair(s) {', '.join(unknown)} not in {folder}; "
                              f"found: {', '.join(sorted(names))}")
    out = []
    for lp in wanted:
        src, tgt = names[lp]
        files = pairs[(src, tgt)]
        missing = [k for k in REQUIRED if k not in files]
        if missing:
            raise InputError(f"{lp}: missing DAseg.newstest{year}.{{{','.join(missing)}}}.{lp}", str(folder))
        refs, cands = read_lines(files["reference"]), read_lines(files["mt-system"])
        human = read_scores(files["human"])
        sources = read_lines(files["source"]) if "source" in files else None
        for kind, n in (("mt-system", len(cands)), ("human", len(human)),
                        ("source", len(sources) if sources is not None else len(refs))):
            if n != len(refs):
                raise InputError(f"{n} lines but the reference file has {len(refs)}", str(files[kind]))
        check_human(human, files["human"])
        for kind, texts in (("reference", refs), ("source", sources or [])):
            blank = next((k for k, text in enumerate(texts) if not text.strip()), None)
            if blank is not None:
                raise InputError(f"an empty {kind}: {lp}'s segment {blank + 1} has nothing to compare with",
                                 str(files[kind]), blank + 1)
        corpus_path = _corpus_path(folder, year, src, tgt, idf_corpus)
        corpus = read_lines(corpus_path) if corpus_path is not None else None
        out.append(LangPair(year, src, tgt, refs, cands, human, sources, corpus, corpus_path))
    return out
