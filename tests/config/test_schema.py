"""Every option is named once: where it is declared. This scans the package's source (ast) for an
option's name (a key of :func:`alignscore.config.schema.options`) written as a string literal
outside its declaration, so that no module keeps a second list of option names or translates
settings by hand.

A literal is in its declaration where
- the module declares a dataclass field of that name (a part naming its own setting in a
  ``SettingError``: ``SettingError("layer", ...)`` in ``aggregators/single.py``);
- it names a stage or a part in its registry (``Registry("aligner")``, ``FILTERS.register("stopwords")``);
- it is an older name a field declares for itself (``setting(..., aliases=("dtype",))``);
- it names a module's own objects in its ``__all__`` (the function ``rescale``);
- it is in ``config/schema.py`` and names an option that is no part's setting (``preset``,
  ``config``, ``lang``, ``idf``, ``filters`` and the stages' names are declared there).
Docstrings are text, not code, and are not scanned.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

import alignscore
from alignscore.config.schema import options

PACKAGE = Path(alignscore.__file__).resolve().parent

#: where a literal cannot be avoided, and why
ALLOWED = {
    # a grid file's own syntax: `model = "<role>"` names a model role, a role's table its model, and a
    # column names its `aligner` (a grid's columns are aligners by definition)
    ("ablation/grid.py", "model"), ("ablation/grid.py", "aligner"),
    # the signature's record is its own vocabulary (model:...|layers:...), not options
    ("composition.py", "model"), ("composition.py", "layers"),
    *(("scorer.py", key) for key in ("model", "layers", "metric", "remap", "rescale", "lm")),
    # the schema declares the shorthand `lang` as standing for the model, and names its option groups
    # (the group "cache" is the cache's settings)
    ("config/schema.py", "model"), ("config/schema.py", "cache"),
    # an encoder object fixes its device: the preset functions refuse device= beside encoder=
    ("api.py", "device"),
    # results.csv's column of a grid's aligner columns (as in the grid file)
    ("ablation/report.py", "aligner"),
    # a kind of vectors an aggregator hands on (`Vectors.kind`: one layer's), not the option
    ("aggregators/base.py", "layer"), ("aligners/barycenter.py", "layer"),
    # the word as a label: a baseline's default name, the progress bar computing one, a chart's axis
    ("baseline.py", "baseline"), ("rescale.py", "baseline"), ("fit/outputs.py", "layer"),
    # the aggregator check's promise about the layers an aggregator reads, named in its report
    ("testing/aggregators.py", "layers"),
    # other libraries' words: transformers' block paths and model config, model2vec's config key,
    # evaluate's module type, a tensor's attribute, the packaged model's folder
    ("encoders/forward.py", "layer"), ("encoders/forward.py", "layers"), ("runtime.py", "config"),
    ("encoders/distill.py", "normalize"), ("integrations/alignscore/alignscore.py", "metric"),
    ("testing/words.py", "dtype"), ("encoders/layers.py", "model"),
    # out of memory, the runtime advises the encoder's precision (named through the run's naming; the
    # runtime is below the encoder's declarations)
    ("runtime.py", "dtype"),
}

@lru_cache(maxsize=None)
def _modules() -> tuple[tuple[str, ast.Module], ...]:
    """The package's modules (path under the package, syntax tree), parsed once for the scans below."""
    return tuple((path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
                 for path in sorted(PACKAGE.rglob("*.py")))


def _declared_fields(tree: ast.Module) -> set[str]:
    return {node.target.id for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) for node in cls.body
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}


def _docstrings(tree: ast.Module) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(node.body[0].value) for node in ast.walk(tree) if isinstance(node, kinds) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _registry_names(tree: ast.Module) -> set[int]:
    return {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
            and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("Registry", "register")
            for arg in node.args}


def _field_aliases(tree: ast.Module) -> set[int]:
    return {id(const) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) for node in cls.body
            if isinstance(node, ast.AnnAssign) and node.value is not None for call in ast.walk(node.value)
            if isinstance(call, ast.Call) for kw in call.keywords if kw.arg == "aliases"
            for const in ast.walk(kw.value) if isinstance(const, ast.Constant)}


def _exported(tree: ast.Module) -> set[int]:
    return {id(const) for node in tree.body if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            and any(getattr(t, "id", None) == "__all__" for t in getattr(node, "targets", [getattr(node, "target", None)]))
            for const in ast.walk(node.value) if isinstance(const, ast.Constant)}


def literals() -> Counter[tuple[str, str]]:
    """``(module, option name)`` -> how many times the name is written outside its declaration."""
    table = options()
    not_settings = {name for name, option in table.items() if option.setting is None}
    found: Counter[tuple[str, str]] = Counter()
    for module, tree in _modules():
        own, skip = _declared_fields(tree), _docstrings(tree) | _registry_names(tree) | _field_aliases(tree) | _exported(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in table):
                continue
            name = node.value
            if id(node) in skip or name in own or (module == "config/schema.py" and name in not_settings):
                continue
            if (module, name) not in ALLOWED:
                found[module, name] += 1
    return found


def test_no_option_name_outside_its_declaration() -> None:
    found = literals()
    assert not found, ("option names written as string literals outside their declarations ((module, name): "
                       f"times): {dict(found)}; name them through alignscore.config.schema.OPTION or the field")


def test_the_scan_finds_a_literal(tmp_path: Path) -> None:
    tree = ast.parse('def f(x):\n    return x["n_gram"]\n')
    constants = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    assert "n_gram" in constants and "n_gram" in options()  # what the scan reads is what it looks for


#: every module but the command line's names an option as the caller gave it (its Options' label, the
#: run's naming, Runtime.name), so none writes a flag
FLAG = re.compile(r"(?<![\w-])--[a-z]")


@lru_cache(maxsize=None)
def flags_and_styles() -> tuple[tuple[str, int, str], ...]:
    """``(module, line, what)`` for each flag written in a string (an f-string's text included) and
    each ``style`` parameter or attribute, in the modules outside cli/; docstrings and
    declared help texts (``setting(help=...)``, ``Option(..., help)``, read by ``--help``) aside."""
    found = []
    for module, tree in _modules():
        if module.startswith("cli/"):
            continue
        skip = _docstrings(tree) | {id(c) for kw in ast.walk(tree) if isinstance(kw, ast.keyword) and kw.arg == "help"
                                    for c in ast.walk(kw.value)}
        skip |= {id(c) for call in ast.walk(tree) if isinstance(call, ast.Call)  # an Option's help, its third argument
                 and getattr(call.func, "id", "") == "Option" and len(call.args) > 2 for c in ast.walk(call.args[2])}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip \
                    and FLAG.search(node.value):
                found.append((module, node.lineno, node.value))
            elif isinstance(node, ast.arg) and node.arg == "style" or isinstance(node, ast.Attribute) and \
                    node.attr == "style":
                found.append((module, node.lineno, "style"))
    return tuple(found)


def test_no_module_outside_the_command_line_writes_a_flag() -> None:
    found = [f for f in flags_and_styles() if f[2] != "style"]
    assert not found, f"flags written outside cli/ (name the option through its Options' label or provenance): {found}"


def test_no_module_takes_a_style() -> None:
    found = [f for f in flags_and_styles() if f[2] == "style"]
    assert not found, f"style parameters (name options through labels): {found}"


def test_the_flag_scan_finds_a_flag_in_an_f_string() -> None:
    tree = ast.parse('def f(x, style="flag"):\n    raise ValueError(f"--layers {x}: bad")\n')
    texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    args = [a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)]
    assert any(FLAG.search(t) for t in texts) and args[-1] == "style"
