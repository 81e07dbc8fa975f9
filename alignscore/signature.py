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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping


@dataclass(frozen=True)
class Signature(Mapping[str, str]):
    """The fields of a signature, in order (``pairs``)."""

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


__all__ = ["Signature", "differences_text"]
