"""The documentation is tested: every example on the site and in the README runs.

The convention of the pages (``docs/*.md`` and ``README.md``):

- A block fenced as ```` ```console ```` is run. Each line starting with ``$ `` is a command run by
  bash from the repository root (a line ending in ``\\`` goes on to the next line); ``alignscore`` is
  ``python -m alignscore`` of the Python running the tests (run in a fork of a process that has
  imported alignscore once, ``tests/warm_server.py``: each command's import is most of its time),
  ``python`` that Python, the models offline (``HF_HUB_OFFLINE=1``). The commands of one block run in
  one shell, in order (a variable set by one is seen by the next). The lines after a command, up to
  the next ``$ `` line, are its expected output: compared with whitespace normalised and blank lines
  left out, with numbers (``0.796073``, ``9.55e-08``) equal to 1e-5 relative or 2e-6 absolute (the
  last digit printed may differ between CPUs), a line ``...`` matching any number of lines and ``...``
  inside a line any text. The output is what the command writes to stdout, or to stdout then stderr. A
  command exits 0, unless its shown output holds a line ``alignscore: error: ...`` (then it must
  fail). A command shown without output is run and must exit 0. Commands write only under /tmp or to
  stdout (tested: the repository's folders hold the same files after a block). An ``alignscore``
  command that reads only the repository and its own arguments (:func:`self_contained`) and is shown
  on several pages runs once: each page's output is checked against what it printed.
- A block fenced as ```` ```python ```` holding ``>>> `` lines is a doctest session (ELLIPSIS and
  NORMALIZE_WHITESPACE on), run from the repository root; the sessions of one page share their
  names, in page order. A ```` ```python ```` block without ``>>> `` must compile; ```` ```toml ````
  blocks must parse.
- A block fenced as ```` ```text ```` (or anything else) is shown, not run.

Each block is one test, ``page:line``, so a failure names the place."""

from __future__ import annotations

import doctest
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import needs

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README_MAX_LINES = 300

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)[^\n]*$")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language, the line of its opening fence (1-based) and its
    lines with the fence's indentation removed."""

    page: Path
    line: int
    lang: str
    lines: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def fenced_blocks(page: Path) -> list[Block]:
    """The fenced blocks of a Markdown page (fences of three or more backticks or tildes, possibly
    indented, as in a list or an admonition); an unclosed fence is an error."""
    blocks, lines = [], page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        body, j = [], i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence)
                                      and lines[j].strip().strip(fence[0]) == ""):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        if j == len(lines):
            raise ValueError(f"{page}:{i + 1}: the fence opened here is never closed")
        blocks.append(Block(page, i + 1, opening["lang"].lower(), tuple(_included(body))))
        i = j + 1
    return blocks


SNIPPET = re.compile(r'^--8<-- "(?P<path>[^":]+)"$')


def _included(body: list[str]) -> list[str]:
    """A block's lines with pymdownx.snippets' whole-file includes (``--8<-- "examples/x.py"``, paths
    from the repository's root, as mkdocs.yml sets ``base_path``) replaced by the file's lines, as
    the site shows them."""
    out = []
    for line in body:
        match = SNIPPET.match(line.strip())
        out.extend((REPO / match["path"]).read_text(encoding="utf-8").splitlines() if match else [line])
    return out


def all_blocks(lang: str, doctest_only: bool | None = None) -> list[Block]:
    found = [b for page in pages() for b in fenced_blocks(page) if b.lang == lang]
    if doctest_only is not None:
        found = [b for b in found if any(line.lstrip().startswith(">>>") for line in b.lines) == doctest_only]
    return found


def params(blocks: list[Block]) -> list:
    return [pytest.param(b, id=b.id) for b in blocks]


# ---------------------------------------------------------------- console blocks: commands and output

@dataclass(frozen=True)
class Step:
    command: str
    expected: tuple[str, ...]


def steps(block: Block) -> list[Step]:
    """The commands of a console block, each with the output lines shown under it."""
    found: list[Step] = []
    lines = list(block.lines)
    while lines and not lines[0].strip():
        lines.pop(0)
    if lines and not lines[0].startswith("$ "):
        raise ValueError(f"{block.id}: a console block starts with a '$ ' command line, not {lines[0]!r}")
    i = 0
    while i < len(lines):
        command = [lines[i][2:]]
        while command[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            command.append(lines[i])
        i += 1
        expected = []
        while i < len(lines) and not lines[i].startswith("$ "):
            expected.append(lines[i])
            i += 1
        found.append(Step("\n".join(command), tuple(expected)))
    return found


def normalised(text: str) -> list[str]:
    """Lines with runs of whitespace made one space, blank lines and progress-bar redraws left out."""
    out = []
    for line in re.split(r"[\r\n]+", text):
        line = " ".join(line.split())
        if line:
            out.append(line)
    return out


def same_line(want: str, got: str) -> bool:
    if "..." in want:
        pattern = ".*".join(re.escape(part) for part in want.split("..."))
        return re.fullmatch(pattern, got) is not None
    want_parts, got_parts = NUMBER.split(want), NUMBER.split(got)
    if want_parts != got_parts:
        return False
    return all(a == b or math.isclose(float(a), float(b), rel_tol=1e-5, abs_tol=2e-6)
               for a, b in zip(NUMBER.findall(want), NUMBER.findall(got)))


def output_matches(expected: list[str], got: list[str]) -> bool:
    """``expected`` against ``got`` line by line; a line ``...`` takes any number of lines."""
    if not expected:
        return not got
    if expected[0] == "...":
        return any(output_matches(expected[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and same_line(expected[0], got[0]) and output_matches(expected[1:], got[1:])


SKIPPED_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "site", "build", "dist"}


def repo_listing() -> set[str]:
    """The files the repository's folders hold (what a docs command must not add to), build and
    virtual-environment folders left out."""
    found = set()
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        found.update(os.path.relpath(os.path.join(root, f), REPO) for f in files)
    return found


def docs_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", ALIGNSCORE_DOCS_PYTHON=sys.executable,
               NO_MKDOCS_2_WARNING="1", COLUMNS="100", PYTHONIOENCODING="utf-8")
    env.pop("ALIGNSCORE_CACHE", None)
    env.pop("ALIGNSCORE_DEBUG", None)
    return env


#: what each command that reads only the repository's files and its own arguments printed (exit status,
#: stdout, stderr), by its text: the pages show some of them twice, and they run once
_RAN: dict[str, tuple[str, str, str]] = {}
_STATEFUL = re.compile(r"[$<>|;&`()]|/tmp|(^|\s)(-o|--output)(\s|=|$)")


def self_contained(command: str) -> bool:
    """An ``alignscore`` command without shell syntax, paths under /tmp or an output file: what it prints
    depends on its text alone (the repository and the models do not change during a run)."""
    return command.startswith("alignscore ") and "\n" not in command and not _STATEFUL.search(command)


def run_console_block(block: Block, warm: tuple[list[str], dict[str, str]]) -> None:
    """Runs a console block's commands in one shell and checks each one's exit status and output; its
    ``alignscore`` commands run in the ``warm`` server (``tests/warm_server.py``: ``python -m alignscore``
    in a process that imported it once)."""
    todo = steps(block)
    command, variables = warm
    with tempfile.TemporaryDirectory(prefix="alignscore-docs-") as tmp:
        script = [f'alignscore() {{ {" ".join(map(shlex.quote, command))} "$@"; }}',
                  *(f"export {k}={shlex.quote(v)}" for k, v in variables.items()),
                  'python() { "$ALIGNSCORE_DOCS_PYTHON" "$@"; }', "set -o pipefail", f"cd {REPO}"]
        for k, step in enumerate(todo):
            if step.command in _RAN:
                for ext, text in zip(("rc", "out", "err"), _RAN[step.command]):
                    (Path(tmp) / f"{k}.{ext}").write_text(text, encoding="utf-8")
                continue
            script += ["{", step.command, f'}} >"{tmp}/{k}.out" 2>"{tmp}/{k}.err" </dev/null',
                       f'echo $? >"{tmp}/{k}.rc"']
        before = repo_listing()
        subprocess.run(["bash", "-c", "\n".join(script)], env=docs_env(), cwd=REPO, timeout=900, check=False)
        for k, step in enumerate(todo):
            if self_contained(step.command) and step.command not in _RAN:
                _RAN[step.command] = tuple((Path(tmp) / f"{k}.{ext}").read_text(encoding="utf-8", errors="replace")
                                           for ext in ("rc", "out", "err"))
        added = repo_listing() - before
        assert not added, f"{block.id}: the commands wrote into the repository: {sorted(added)[:5]}"
        for k, step in enumerate(todo):
            read = lambda ext: (Path(tmp) / f"{k}.{ext}").read_text(encoding="utf-8", errors="replace")  # noqa: E731
            rc, out, err = int(read("rc") or 1), read("out"), read("err")
            expected = normalised("\n".join(step.expected))
            fails = any(line.startswith("alignscore: error:") for line in expected)
            where = f"{block.id}: `{step.command}`"
            if fails:
                assert rc != 0, f"{where} was shown failing but exited 0\nstdout:\n{out}"
            else:
                assert rc == 0, f"{where} exited {rc}\nstderr:\n{err[-3000:]}"
            if expected:
                same = (output_matches(expected, normalised(out))
                        or output_matches(expected, normalised(out + "\n" + err)))
                assert same, (f"{where}: output differs from the page\n--- page:\n" + "\n".join(step.expected)
                              + f"\n--- stdout:\n{out[-4000:]}\n--- stderr:\n{err[-2000:]}")


@pytest.mark.slow
@pytest.mark.parametrize("block", params(all_blocks("console")))
def test_console_block_runs_and_prints_what_the_page_shows(block: Block, warm) -> None:
    run_console_block(block, warm)


# ---------------------------------------------------------------- python blocks: doctest sessions

_SESSIONS: dict[Path, tuple[dict, list[Block]]] = {}


def _run_doctest(block: Block, globs: dict, report: bool) -> doctest.TestResults:
    test = doctest.DocTestParser().get_doctest("\n".join(block.lines) + "\n", globs, block.id, str(block.page),
                                               block.line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    lines: list[str] = []
    result = runner.run(test, out=lines.append, clear_globs=False)
    globs.update(test.globs)  # a DocTest runs in a copy of the names it is given: keep the page's session
    if report and result.failed:
        pytest.fail(f"{block.id}: {result.failed} of {result.attempted} examples failed\n" + "".join(lines),
                    pytrace=False)
    return result


@pytest.fixture(scope="module", autouse=True)
def _registries_restored():
    """The pages register example parts (docs/adding-a-part.md): they live while this module's sessions
    run and are gone for the tests after it."""
    from alignscore.aggregators import AGGREGATORS
    from alignscore.aligners import ALIGNERS
    from alignscore.config import PRESETS
    from alignscore.filters import FILTERS
    from alignscore.weighting import WEIGHTINGS
    registries = (AGGREGATORS, ALIGNERS, FILTERS, PRESETS, WEIGHTINGS)
    saved = [dict(r._entries) for r in registries]
    yield
    for registry, entries in zip(registries, saved):
        registry._entries.clear()
        registry._entries.update(entries)


@pytest.mark.slow
@pytest.mark.parametrize("block", params(all_blocks("python", doctest_only=True)))
def test_python_session_runs_as_a_doctest(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.delenv("ALIGNSCORE_CACHE", raising=False)
    globs, done = _SESSIONS.setdefault(block.page, ({"__name__": "__docs__"}, []))
    # the sessions before this one on its page first (their own failures are reported by their own tests)
    for earlier in all_blocks("python", doctest_only=True):
        if earlier.page == block.page and earlier.line < block.line and earlier not in done:
            _run_doctest(earlier, globs, report=False)
            done.append(earlier)
    if block not in done:
        done.append(block)
    result = _run_doctest(block, globs, report=True)
    assert result.attempted > 0


def test_python_blocks_without_a_session_compile() -> None:
    """A ```python block that is not a doctest session (a sketch: a class to copy, a loop) still
    has to be valid Python."""
    for block in all_blocks("python", doctest_only=False):
        compile("\n".join(block.lines) + "\n", block.id, "exec")


@pytest.mark.parametrize("block", params(all_blocks("toml")))
def test_toml_block_parses(block: Block) -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    tomllib.loads("\n".join(block.lines) + "\n")


# ---------------------------------------------------------------- the pages as a whole

def test_readme_is_short() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; the site holds the details"


def test_every_command_of_the_cli_is_run_on_the_cli_page() -> None:
    """Each command of the ``alignscore`` group has a section on docs/cli.md and is run there by a
    console block."""
    from alignscore.cli import main

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    run = {step.command.split()[1] for block in fenced_blocks(DOCS / "cli.md") if block.lang == "console"
           for step in steps(block) if step.command.startswith("alignscore ")}
    for name in main.commands:
        assert re.search(rf"^##+ .*`alignscore {name}`", text, re.M), f"docs/cli.md has no section on {name}"
        assert name in run, f"docs/cli.md runs no `alignscore {name}` command"


def test_every_page_is_in_the_navigation_and_every_link_to_the_site_resolves() -> None:
    """mkdocs.yml's nav lists every page of docs/, and links from the README into docs/ point at
    pages that exist (the strict build checks the links between pages)."""
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for page in sorted(DOCS.rglob("*.md")):
        assert str(page.relative_to(DOCS)) in nav, f"{page.name} is not in mkdocs.yml's nav"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\((docs/[^)#\s]+)", readme):
        assert (REPO / target).exists(), f"README links to {target}, which does not exist"


def test_the_parser_reads_commands_outputs_and_wildcards() -> None:
    """The harness itself: a console block's steps, and what matches and what does not."""
    block = Block(REPO / "README.md", 1, "console",
                  ("$ echo a \\", "  b", "a b", "$ true", "$ printf 'x\\n0.7956731\\ny\\n'", "x", "...", ""))
    found = steps(block)
    assert [s.command for s in found] == ["echo a \\\n  b", "true", "printf 'x\\n0.7956731\\ny\\n'"]
    assert found[0].expected == ("a b",) and found[1].expected == ()
    assert output_matches(["x", "..."], ["x", "0.7956731", "y"])
    assert not output_matches(["x", "y"], ["x", "0.7956731", "y"])
    assert same_line("f1=0.798134 p=9.55e-08", "f1=0.7981345 p=9.550001e-08")
    assert not same_line("f1=0.798134", "f1=0.798234")
    assert not same_line("f1=0.798134", "f2=0.798134")
    assert same_line("# model:all-MiniLM-L6-v2|...|v:...", "# model:all-MiniLM-L6-v2|layers:L4|v:alignscore-0.2.0")
    assert self_contained('alignscore score --cand-text "a b" --ref-text "a c" -m all-MiniLM-L6-v2 -q')
    assert self_contained("alignscore mbr -c examples/samples.txt --samples 4 -m all-MiniLM-L6-v2 -q")
    for command in ("alignscore score -c /tmp/c.txt -r examples/refs.txt", "alignscore score -r a -c b -o out.tsv",
                    "alignscore score -r a -c b --output=out.tsv", "alignscore score -r a -c b > out.tsv",
                    "alignscore score -r $D/a -c b", "alignscore show -c a -r b | head -n 3",
                    "python examples/score.py", "ALIGNSCORE_CACHE=x alignscore score -r a -c b"):
        assert not self_contained(command), command


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """``mkdocs build --strict``: every page, link and API reference entry (mkdocstrings imports the
    package and renders its docstrings) without a warning."""
    needs("mkdocs")  # the docs extra; under CI its absence fails the run
    needs("mkdocstrings")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(REPO / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], cwd=REPO, env=docs_env(), capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    api = (tmp_path / "site" / "python-api" / "index.html").read_text(encoding="utf-8")
    assert "alignscore.score" in api and "RunSpec" in api, "the API reference is missing from the built site"
    assert (tmp_path / "site" / "what-it-computes" / "index.html").exists()
