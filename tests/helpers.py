"""Helpers shared by test modules (test modules never import each other; fixtures live in conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSETS = Path(os.environ.get("VKMORPH_ASSETS", ROOT.parent / "shared" / "assets"))
