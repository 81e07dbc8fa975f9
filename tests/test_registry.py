"""Plugins cannot break the tool: a part whose name or setting clashes with a built-in's is refused
where it registers (the project's error, naming its module), an installed plugin that fails is
skipped with one warning naming its module and distribution, and a setting a plugin shares keeps
the built-in's help beside its own."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

from alignscore import registry
from alignscore.aligners import ALIGNERS
from alignscore.aligners.greedy import Greedy
from alignscore.config.schema import options
from alignscore.errors import ConfigError
from alignscore.settings import setting

from cli_checks import CODE_ROOT

CLASH = '''
from dataclasses import dataclass
from alignscore import ALIGNERS
from alignscore.aligners.greedy import Greedy
from alignscore.settings import setting


@ALIGNERS.register("costly")
@dataclass(frozen=True)
class Costly(Greedy):
    cost: str = setting("l1", choices=("l1", "l2"), help="a cost of its own")
'''


@pytest.fixture
def own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The aligners' registry restored after the test, whatever it registered."""
    monkeypatch.setattr(ALIGNERS, "_entries", dict(ALIGNERS._entries))


@dataclass(frozen=True)
class _Costly(Greedy):
    cost: str = setting("l1", choices=("l1", "l2"), help="a cost of its own")


@dataclass(frozen=True)
class _Tolerant(Greedy):
    tol: float = setting(0.5, help="how far a match may be off")


def test_a_clashing_setting_is_refused_where_it_registers(own_registry: None) -> None:
    before = ALIGNERS.registered()
    with pytest.raises(ConfigError, match=r"test_registry\._Costly: aligner 'costly' refused: .*setting 'cost'"):
        ALIGNERS.register("costly")(_Costly)
    assert ALIGNERS.registered() == before and "l1" not in options()["cost"].setting.decl.choices


def test_a_built_in_name_again_is_the_projects_error(own_registry: None) -> None:
    with pytest.raises(ConfigError, match=r"aligner 'greedy' is already alignscore\.aligners\.greedy\.Greedy's"):
        ALIGNERS.register("greedy")(type("Greedy2", (Greedy,), {}))
    assert ALIGNERS.get("greedy") is Greedy


def test_a_shared_setting_lists_each_parts_meaning(own_registry: None) -> None:
    ALIGNERS.register("a-tolerant")(_Tolerant)  # sorts before the built-ins: its help must not replace theirs
    help_text = options()["tol"].help
    assert help_text.startswith("sinkhorn, baryscore: Sinkhorn's marginal-error threshold")
    assert "for aligner a-tolerant: how far a match may be off" in help_text


def test_an_installed_plugin_that_clashes_is_skipped_with_one_warning(monkeypatch, tmp_path, own_registry, capsys):
    (tmp_path / "clash_plugin.py").write_text(textwrap.dedent(CLASH), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    broken = metadata.EntryPoint("broken", "no_such_plugin_module", registry.PLUGIN_GROUP)
    clash = metadata.EntryPoint("costly", "clash_plugin", registry.PLUGIN_GROUP)
    monkeypatch.setattr(metadata, "entry_points", lambda group: [broken, clash])
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    from alignscore.cli import _load_plugins

    _load_plugins()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(line.startswith("alignscore: warning: alignscore plugin ") for line in lines)
    assert "'broken' (module no_such_plugin_module) skipped: No module named" in lines[0]
    assert "'costly' (module clash_plugin) skipped: clash_plugin.Costly: aligner 'costly' refused" in lines[1]
    assert "costly" not in ALIGNERS.names() and "l1" not in options()["cost"].setting.decl.choices


@pytest.mark.slow  # a real process with an installed plugin: out of the edit loop's tier, in CI's
def test_an_installed_clashing_plugin_leaves_every_command_working(tmp_path: Path) -> None:
    (tmp_path / "clash_plugin.py").write_text(textwrap.dedent(CLASH), encoding="utf-8")
    info = tmp_path / "clash_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: clash-plugin\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[alignscore.parts]\ncostly = clash_plugin\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(CODE_ROOT)])}
    env.pop("ALIGNSCORE_DEBUG", None)
    for args in (["--help"], ["score", "--help"], ["config", "--model", "all-MiniLM-L6-v2", "--aligner", "wmd"]):
        proc = subprocess.run([sys.executable, "-m", "alignscore", *args], capture_output=True, text=True, env=env,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        warning, = proc.stderr.splitlines()
        assert warning.startswith("alignscore: warning: alignscore plugin 'costly' (module clash_plugin, "
                                  "distribution clash-plugin) skipped: "), warning
    assert 'aligner = "wmd"' in proc.stdout
