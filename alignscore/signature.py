"""The signature: everything that changes a number, kept as sacreBLEU keeps it (a record of
named fields, formatted at the edge).

A :class:`Signature` is a mapping ``{field: value}``; :meth:`Signature.format` (and ``str``)
gives the text every output carries (``model:...|layers:L4|...|v:...``), and a refusal (a
resume, ``diff``, ``compare``) names the fields that differ instead of printing two long lines.
Only the edges read a signature back from text (:meth:`Signature.parse`: an output's header).

>>> a = Signature.of({"model": "m", "layers": "L4", "w": "none"})
>>> str(a)
'model:m|layers:L4|w:none'
>>> a["layers"]
'L4'
>>> a.differences(Signature.parse("model:m|layers:L5|w:none"))
['layers L4 vs L5']

A file that changes scores (an idf-L corpus, stop words, a baseline, a word-vector table) is named
by its name and a digest of its content, ``corpus.txt#9f2c...``: two files of the same name and
other contents get other signatures, and the same content under another name the same digest
(:func:`content_digest`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping

DIGEST_HEX = 12  # hex digits of a content digest shown in a signature


@dataclass(frozen=True)
class Signature(Mapping[str, str]):
    """The fields of a signature, in order: a read-only mapping that prints as
    ``key:value|key:value``.

    Parameters
    ----------
    pairs : tuple of (str, str)
        The ``(key, value)`` fields, in order (:meth:`of` makes them from a mapping).

    Examples
    --------
    >>> sig = Signature.of({"model": "roberta-large", "L": "17"})
    >>> str(sig), sig["L"], Signature.parse(str(sig)) == sig
    ('model:roberta-large|L:17', '17', True)
    """

    pairs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, fields: Mapping[str, str]) -> "Signature":
        """The signature of these fields, in their order."""
        return cls(tuple((str(k), str(v)) for k, v in fields.items()))

    @classmethod
    def parse(cls, text: str) -> "Signature":
        """A signature read back from its text (``key:value`` joined by ``|``; a part without a
        ``:`` is kept under its own text)."""
        out: dict[str, str] = {}
        for part in text.split("|"):
            key, sep, value = part.partition(":")
            out[key if sep else part] = value
        return cls.of(out)

    def __getitem__(self, key: str) -> str:
        for k, v in self.pairs:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def fields(self) -> dict[str, str]:
        """``{key: value}``, in order."""
        return dict(self.pairs)

    def with_fields(self, **fields: str) -> "Signature":
        """This signature with these fields added at the end (or replaced in place)."""
        return Signature.of({**dict(self.pairs), **fields})

    def format(self) -> str:
        """The text: ``key:value`` joined by ``|``."""
        return "|".join(f"{k}:{v}" for k, v in self.pairs)

    __str__ = format

    def differences(self, other: Mapping[str, str]) -> list[str]:
        """``"<key> <mine> vs <theirs>"`` for each field that differs from ``other``'s (a field only
        one side has reads ``(none)`` on the other)."""
        keys = list(self) + [k for k in other if k not in self]
        return [f"{k} {self.get(k, '(none)')} vs {other.get(k, '(none)')}" for k in keys
                if self.get(k) != other.get(k)]


def differences_text(found: str | Signature, wanted: str | Signature, found_name: str = "the file",
                     wanted_name: str = "this run") -> str:
    """One clause naming what differs between two signatures (``found`` first)."""
    as_sig = lambda s: s if isinstance(s, Signature) else Signature.parse(s)  # noqa: E731
    diffs = as_sig(found).differences(as_sig(wanted))
    if not diffs:
        return "the signatures are the same"
    return f"{'; '.join(diffs)} ({found_name} vs {wanted_name})"


def content_digest(lines: Iterable[str]) -> str:
    """The first :data:`DIGEST_HEX` hex digits of the SHA-256 of ``lines``, each followed by a
    newline, in UTF-8: what a signature names a file's content by. Callers pass the lines the
    run uses (an idf-L corpus: its non-blank lines; stop words: the words, sorted; a baseline:
    its table as :meth:`~alignscore.rescale.Baseline.csv` writes it), so a file with only
    ``\\n`` line ends and nothing dropped has the digest ``sha256sum`` prints for it.

    Parameters
    ----------
    lines : iterable of str
        The lines, without their line ends.

    Returns
    -------
    str
        12 lowercase hex digits.

    Examples
    --------
    >>> content_digest(["the", "a"])
    'beb23c7fb3d6'
    >>> import hashlib; hashlib.sha256(b"the\\na\\n").hexdigest()[:12]
    'beb23c7fb3d6'
    """
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8") + b"\n")
    return h.hexdigest()[:DIGEST_HEX]


__all__ = ["DIGEST_HEX", "Signature", "content_digest", "differences_text"]
