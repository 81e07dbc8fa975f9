"""The signature: everything that changes a number, as sacreBLEU keeps it (a mapping of settings,
formatted at the edge).

A :class:`Signature` is the text every output carries (``model:...|layers:L4|...|v:...``) and
also its fields, so a refusal (a resume, ``diff``, ``compare``) names the settings that differ
instead of printing two long lines.

>>> a = Signature.of({"model": "m", "layers": "L4", "w": "none"})
>>> a
'model:m|layers:L4|w:none'
>>> a.fields["layers"]
'L4'
>>> a.differences("model:m|layers:L5|w:none")
['layers L4 vs L5']
"""

from __future__ import annotations

from typing import Mapping


class Signature(str):
    """A signature's text (a ``str``), readable as its fields (``key:value`` joined by ``|``)."""

    @classmethod
    def of(cls, fields: Mapping[str, str]) -> "Signature":
        """The signature of these fields, in their order."""
        return cls("|".join(f"{key}:{value}" for key, value in fields.items()))

    @property
    def fields(self) -> dict[str, str]:
        """``{key: value}`` in order (a part without a ``:`` is kept under its own text)."""
        out: dict[str, str] = {}
        for part in self.split("|"):
            key, sep, value = part.partition(":")
            out[key if sep else part] = value
        return out

    def differences(self, other: str) -> list[str]:
        """``"<key> <mine> vs <theirs>"`` for each field that differs from ``other``'s (a field only
        one side has reads ``(none)`` on the other)."""
        mine, theirs = self.fields, Signature(other).fields
        keys = list(mine) + [k for k in theirs if k not in mine]
        return [f"{k} {mine.get(k, '(none)')} vs {theirs.get(k, '(none)')}" for k in keys
                if mine.get(k) != theirs.get(k)]


def differences_text(found: str, wanted: str, found_name: str = "the file", wanted_name: str = "this run") -> str:
    """One clause naming what differs between two signatures (``found`` first)."""
    diffs = Signature(found).differences(wanted)
    if not diffs:
        return "the signatures are the same"
    return f"{'; '.join(diffs)} ({found_name} vs {wanted_name})"


__all__ = ["Signature", "differences_text"]
