"""The suite itself: an oracle that cannot be imported fails the run under CI instead of skipping
its parity tests silently."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cli_checks import CODE_ROOT

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("ci, outcome", [("true", "error"), ("", "skipped")])
def test_a_missing_oracle_fails_under_ci(tmp_path, ci, outcome):
    fake = tmp_path / "site" / "bert_score"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('bert_score made unimportable by the test')\n")
    env = {**os.environ, "CI": ci, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(CODE_ROOT)])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(CODE_ROOT / "tests" / "parity" / "test_bert_score_parity.py")],
                          capture_output=True, text=True, env=env, cwd=CODE_ROOT, timeout=300)
    summary = proc.stdout.strip().splitlines()[-1]
    if outcome == "error":
        assert proc.returncode != 0 and "error" in summary and "the oracle bert_score cannot be imported" in proc.stdout
    else:
        # 5: pytest collected nothing, which a module skipped whole reports
        assert proc.returncode in (0, 5) and "skipped" in summary and "error" not in summary, proc.stdout[-2000:]
