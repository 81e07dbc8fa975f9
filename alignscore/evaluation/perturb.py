"""Perturbations of candidates into challenge items, DEMETR-style (Karpinska et al., 2022).

Each kind turns a correct candidate into an incorrect one by one error (a number changed, a
negation flipped, a word dropped, ...), or, for the neutral controls, changes it in a way that
should not change a score (casing, spacing before punctuation). A kind is a pure function of
the candidate's words and a :class:`random.Random`; it returns ``None`` where it does not apply
(no number to change). :func:`perturb` seeds one generator per (seed, line, kind), so an item
does not depend on which other kinds or lines are asked for.

Texts are split on whitespace and joined with single spaces; punctuation attached to a word
stays with its place, not with the word.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..errors import ConfigError, InputError
from .challenge import Item

FUNCTION_WORDS = frozenset("""
a an the this that these those my your his her its our their some any each every no
of to in on at by for with from into onto about over under between through after before during without within
against among upon as than
and or but nor so yet if because while although though since unless whether
is are was were be been being am do does did have has had will would shall should can could may might must
i you he she it we they me him us them who whom which what
not there here then very also just only too
""".split())
NEGATIONS = {"not": "", "never": "always", "no": "some", "nothing": "something", "nobody": "somebody",
             "none": "some", "cannot": "can"}
AUXILIARIES = ("is", "are", "was", "were", "can", "could", "will", "would", "should", "must", "may", "might",
               "has", "have", "had", "does", "did", "do", "shall")
_WORD = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)
_ALPHA = re.compile(r"^[^\W\d_]+(?:[-'][^\W\d_]+)*$")
_NUMBER = re.compile(r"\d+")
_PUNCT = re.compile(r"(?<=\w)([,.;:!?])")


@dataclass
class Word:
    """A whitespace token: leading punctuation, the word, trailing punctuation."""

    lead: str
    core: str
    tail: str

    @classmethod
    def of(cls, token: str) -> "Word":
        m = _WORD.match(token)
        assert m is not None  # the pattern matches every string
        return cls(*m.groups())

    def text(self) -> str:
        return self.lead + self.core + self.tail


def _words(text: str) -> list[Word]:
    return [Word.of(t) for t in text.split()]


def _join(words: Sequence[Word]) -> str:
    return " ".join(w.text() for w in words if w.text())


def _alpha(w: Word) -> bool:
    return bool(_ALPHA.match(w.core))


def _drop(words: list[Word], k: int) -> list[Word]:
    """``words`` without word ``k``; its punctuation stays in its place."""
    out = [Word(w.lead, w.core, w.tail) for w in words]
    gone = out.pop(k)
    if gone.lead and k < len(out):
        out[k].lead = gone.lead + out[k].lead
    if gone.tail and k > 0:  # a sentence-initial word's trailing punctuation goes with it
        out[k - 1].tail += gone.tail
    return out


def number(words: list[Word], rng: random.Random) -> list[Word] | None:
    """A number changed to another (digits replaced, its format kept): "3 people" -> "7 people"."""
    spots = [k for k, w in enumerate(words) if _NUMBER.search(w.core)]
    if not spots:
        return None
    k = rng.choice(spots)
    runs = list(_NUMBER.finditer(words[k].core))
    run = rng.choice(runs)
    value = run.group()
    new = value
    while new == value:
        new = str(int(value) + rng.randint(1, 9)) if len(value) < 4 or rng.random() < 0.5 else \
            str(max(0, int(value) - rng.randint(1, 9)))
    out = list(words)
    core = words[k].core
    out[k] = Word(words[k].lead, core[:run.start()] + new + core[run.end():], words[k].tail)
    return out


def negation(words: list[Word], rng: random.Random) -> list[Word] | None:
    """A negation removed ("is not" -> "is", "never" -> "always", "isn't" -> "is") or, where
    there is none, added after an auxiliary ("was" -> "was not")."""
    spots = [k for k, w in enumerate(words) if w.core.lower() in NEGATIONS or w.core.lower().endswith("n't")]
    out = [Word(w.lead, w.core, w.tail) for w in words]
    if spots:
        k = rng.choice(spots)
        low = out[k].core.lower()
        if low.endswith("n't"):
            stem = out[k].core[:-3]
            out[k].core = {"wo": "will", "ca": "can", "sha": "shall"}.get(stem.lower(), stem)
            return out if out[k].core else None
        repl = NEGATIONS[low]
        if not repl:
            return _drop(out, k)
        out[k].core = repl.capitalize() if out[k].core[:1].isupper() else repl
        return out
    aux = [k for k, w in enumerate(words) if w.core.lower() in AUXILIARIES]
    if not aux:
        return None
    k = rng.choice(aux)
    out.insert(k + 1, Word("", "not", out[k].tail))
    out[k].tail = ""
    return out


class _Entities:
    """Named entity swap, with the pool of entities (capitalised words not opening a sentence)
    of every candidate being perturbed."""

    def __init__(self, pool: Sequence[str]) -> None:
        self.pool = sorted(set(pool))

    @staticmethod
    def spots(words: Sequence[Word]) -> list[int]:
        return [k for k, w in enumerate(words) if k > 0 and _alpha(w) and w.core[:1].isupper()
                and not w.core.isupper() and not words[k - 1].tail.endswith((".", "!", "?", ":"))
                and w.core.lower() not in FUNCTION_WORDS]

    def __call__(self, words: list[Word], rng: random.Random) -> list[Word] | None:
        spots = self.spots(words)
        if not spots:
            return None
        k = rng.choice(spots)
        others = [e for e in self.pool if e != words[k].core]
        if not others:
            return None
        out = list(words)
        out[k] = Word(words[k].lead, rng.choice(others), words[k].tail)
        return out


def content_drop(words: list[Word], rng: random.Random) -> list[Word] | None:
    """A content word dropped (a word not in :data:`FUNCTION_WORDS`)."""
    spots = [k for k, w in enumerate(words) if _alpha(w) and w.core.lower() not in FUNCTION_WORDS]
    return _drop(words, rng.choice(spots)) if spots and len(words) > 1 else None


def function_drop(words: list[Word], rng: random.Random) -> list[Word] | None:
    """A function word dropped (an article, preposition, auxiliary, pronoun, ...; no negation)."""
    spots = [k for k, w in enumerate(words) if w.core.lower() in FUNCTION_WORDS and w.core.lower() not in NEGATIONS]
    return _drop(words, rng.choice(spots)) if spots and len(words) > 1 else None


def swap(words: list[Word], rng: random.Random) -> list[Word] | None:
    """Two adjacent, different words swapped (their punctuation stays in place)."""
    spots = [k for k in range(len(words) - 1) if _alpha(words[k]) and _alpha(words[k + 1])
             and words[k].core.lower() != words[k + 1].core.lower()]
    if not spots:
        return None
    k = rng.choice(spots)
    out = [Word(w.lead, w.core, w.tail) for w in words]
    out[k].core, out[k + 1].core = words[k + 1].core, words[k].core
    return out


def repeat(words: list[Word], rng: random.Random) -> list[Word] | None:
    """A span of one to three words repeated right after itself ("the the cat")."""
    if not words:
        return None
    size = rng.randint(1, min(3, len(words)))
    start = rng.randrange(len(words) - size + 1)
    span = [Word(w.lead, w.core, w.tail) for w in words[start:start + size]]
    span[-1].tail = ""
    return list(words[:start + size]) + span + list(words[start + size:])


def clause_drop(words: list[Word], rng: random.Random) -> list[Word] | None:
    """A clause dropped: one of the spans between commas, semicolons or colons (at least two
    words left)."""
    bounds = [k + 1 for k, w in enumerate(words[:-1]) if w.tail[:1] in (",", ";", ":")]
    if not bounds:
        return None
    edges = [0, *bounds, len(words)]
    spans = [(a, b) for a, b in zip(edges, edges[1:]) if len(words) - (b - a) >= 2]
    if not spans:
        return None
    a, b = rng.choice(spans)
    out = [Word(w.lead, w.core, w.tail) for w in words[:a]] + [Word(w.lead, w.core, w.tail) for w in words[b:]]
    if a > 0 and b == len(words):  # the last clause gone: the sentence keeps its final punctuation
        out[a - 1].tail = words[-1].tail
    return out


def casing(words: list[Word], rng: random.Random) -> list[Word] | None:
    """Control: the text lower-cased."""
    out = [Word(w.lead.lower(), w.core.lower(), w.tail.lower()) for w in words]
    return None if [w.text() for w in out] == [w.text() for w in words] else out


def punct_spacing(words: list[Word], rng: random.Random) -> list[Word] | None:
    """Control: a space before each punctuation mark that follows a word ("end." -> "end .")."""
    text = _join(words)
    spaced = _PUNCT.sub(r" \1", text)
    return None if spaced == text else _words(spaced)


Kind = Callable[[list[Word], random.Random], "list[Word] | None"]


@dataclass(frozen=True)
class KindInfo:
    """A registered perturbation: what it does (one line), and whether it is a neutral control."""

    doc: str
    control: bool = False
    fn: Kind | None = field(default=None, repr=False)


# The kinds, in the order they are written. "entity" is built per run (its pool is the input).
KINDS: dict[str, KindInfo] = {
    "number": KindInfo("a number changed to another", fn=number),
    "negation": KindInfo("a negation removed, or added after an auxiliary", fn=negation),
    "entity": KindInfo("a named entity (capitalised word inside the sentence) swapped for another from the input"),
    "content_drop": KindInfo("a content word dropped", fn=content_drop),
    "function_drop": KindInfo("a function word (article, preposition, auxiliary, pronoun) dropped",
                              fn=function_drop),
    "swap": KindInfo("two adjacent words swapped", fn=swap),
    "repeat": KindInfo("a span of one to three words repeated", fn=repeat),
    "clause_drop": KindInfo("a clause (between commas, semicolons or colons) dropped", fn=clause_drop),
    "casing": KindInfo("control: the text lower-cased", control=True, fn=casing),
    "punct_spacing": KindInfo("control: a space before punctuation after a word", control=True, fn=punct_spacing),
}


@dataclass
class Perturbed:
    """What :func:`perturb` made: the ``items``, and per kind how many lines it did not apply to
    (``skipped``); ``empty`` counts lines left out for an empty candidate or reference."""

    items: list[Item]
    made: dict[str, int]
    skipped: dict[str, int]
    empty: int = 0


def check_kinds(kinds: Sequence[str] | None) -> list[str]:
    """The kinds asked for (all when none), checked against :data:`KINDS`, in its order."""
    if not kinds:
        return list(KINDS)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ConfigError(f"unknown perturbation kind(s) {', '.join(unknown)} (kinds: {', '.join(KINDS)})")
    return [k for k in KINDS if k in kinds]


def perturb(cands: Sequence[str], refs: Sequence[Sequence[str]], seed: int,
            kinds: Sequence[str] | None = None) -> Perturbed:
    """Challenge items from candidates: for each line and kind, the candidate as ``good`` and
    its perturbation as ``bad``, with the line's references; the category is the kind, the id
    ``"<line>:<kind>"`` (lines from 1). Deterministic for a seed.

    Example:
        >>> out = perturb(["The 3 cats are not here."], [["Three cats are absent."]], seed=1,
        ...               kinds=["number", "negation", "clause_drop"])
        >>> [(i.category, i.bad) for i in out.items]
        [('number', 'The 10 cats are not here.'), ('negation', 'The 3 cats are here.')]
        >>> out.skipped
        {'number': 0, 'negation': 0, 'clause_drop': 1}
    """
    chosen = check_kinds(kinds)
    if len(cands) != len(refs):
        raise ConfigError(f"{len(cands)} candidates but {len(refs)} reference groups")
    entity = _Entities([w.core for c in cands for k in [_words(c)] for i in _Entities.spots(k) for w in [k[i]]])
    fns: dict[str, Kind] = {name: (KINDS[name].fn or entity) for name in chosen}
    out = Perturbed([], {k: 0 for k in chosen}, {k: 0 for k in chosen})
    for line, (cand, group) in enumerate(zip(cands, refs), start=1):
        if not cand.strip() or not group or not all(r.strip() for r in group):
            out.empty += 1
            continue
        words = _words(cand)
        for name in chosen:
            changed = fns[name](words, random.Random(f"{seed}:{line}:{name}"))
            bad = _join(changed) if changed is not None else None
            if bad is None or not bad.strip() or bad.strip() == cand.strip():
                out.skipped[name] += 1
                continue
            out.made[name] += 1
            out.items.append(Item(tuple(group), cand, bad, name, f"{line}:{name}", KINDS[name].control))
    return out


def item_json(item: Item) -> dict[str, object]:
    """An item as a line of a challenge set file."""
    obj: dict[str, object] = {"id": item.id}
    obj.update({"ref": item.refs[0]} if len(item.refs) == 1 else {"refs": list(item.refs)})
    obj.update(good=item.good, bad=item.bad, category=item.category)
    if item.control:
        obj["control"] = True
    obj.update((k, v) for k, v in item.fields if k not in obj)  # extra fields (lp, system, ...) go through
    return obj


def perturb_files(cands: str, refs: Sequence[str], seed: int, kinds: Sequence[str], output: str | None) -> str:
    """:func:`perturb` of the lines of ``cands`` (with those of ``refs``) written as JSON lines
    to ``output`` (None: standard output), which may not be an input.

    Returns
    -------
    str
        What was written: the items, and per kind how many were made and skipped.
    """
    import json

    from ..textio import check_output, read_aligned, write_output

    check_output(output, [cands, *refs])
    cand_texts, ref_groups = read_aligned(cands, refs)
    made = perturb(cand_texts, ref_groups, seed, kinds)
    if not made.items:
        raise InputError(f"no kind ({', '.join(kinds)}) applies to any line: there is no item to write", cands)
    write_output(output, "".join(json.dumps(item_json(i), ensure_ascii=False) + "\n" for i in made.items))
    counts = ", ".join(f"{k} {made.made[k]} (skipped {made.skipped[k]})" for k in kinds)
    empty = f"; {made.empty} line(s) with an empty candidate or reference left out" if made.empty else ""
    return (f"wrote {len(made.items)} items of {len(cand_texts)} lines to {output or 'standard output'}: "
            f"{counts}{empty}")


__all__ = ["FUNCTION_WORDS", "KINDS", "KindInfo", "Perturbed", "check_kinds", "item_json", "perturb", "perturb_files"]
