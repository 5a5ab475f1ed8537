"""Models shipped as package data: the file in the package is the one its script trains."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def assert_shipped_weights_match(script: str) -> None:
    """``benchmarks/<script> --check`` passes: the same data and steps give the shipped weights."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "weights file: matches" in done.stdout
