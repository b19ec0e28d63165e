"""medrag built as a wheel and installed into a fresh venv that sees the project's dependencies but not its source."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build_wheel(folder: Path) -> Path:
    """A wheel of the working tree, built from a copy (setuptools leaves a build/ folder beside the sources, and a
    stale one would leak into wheels)."""
    tree = folder / "tree" / "medrag"
    shutil.copytree(REPO, tree, ignore=shutil.ignore_patterns(".git", ".venv*", ".medrag*", "build", "*.egg-info",
                                                              "__pycache__", ".pytest_cache", ".ruff_cache"))
    out = folder / "wheel"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v", "-w",
                            str(out), str(tree)], check=True, timeout=600, capture_output=True, text=True)
    (out / "build.log").write_text(built.stdout + built.stderr)
    return next(out.glob("medrag-*.whl"))


def install_wheel(wheel: Path, venv: Path) -> Path:
    """A venv holding only the wheel, the project's dependencies seen as a plain path (that venv's own .pth files,
    an editable medrag among them, stay unread); returns its site-packages."""
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "medrag_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "--quiet",
                    str(wheel)], check=True, timeout=600, capture_output=True)
    return site
