"""The API's modules each have one job and never import upward: ``vkmorph.api`` only re-exports; ``model``,
``bake``, ``export`` and the leaf utility ``progress`` never import the app layer (issue 23 item 5)."""

from __future__ import annotations

import ast

import vkmorph.api
from tests.helpers import ROOT

PKG = ROOT / "vkmorph"


def _imports(path) -> list[str]:
    """Absolute names of the vkmorph modules ``path`` imports (relative imports resolved)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            base = "vkmorph." * (node.level > 0) + (node.module or "")
            out.append(base if node.level else node.module or "")
            out += [f"{base}.{a.name}" for a in node.names if node.level and not node.module]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return [m for m in out if m.startswith("vkmorph")]


def test_api_modules_do_not_import_the_app_layer():
    bad = [f"{name}.py imports {m}" for name in ("api", "model", "bake", "export", "progress")
           for m in _imports(PKG / f"{name}.py") if m.startswith("vkmorph.app")]
    assert not bad, "\n".join(bad)
    assert _imports(PKG / "progress.py") == [], "progress is a leaf utility"


def test_api_is_the_stable_re_export():
    from vkmorph import bake, export, model

    assert vkmorph.api.Model is model.Model and vkmorph.api.open is model.open
    assert vkmorph.api.Pose is model.Pose and vkmorph.api.Primitive is model.Primitive
    assert vkmorph.api.Bake is bake.Bake and vkmorph.api.bake_numpy is bake.bake_numpy
    assert vkmorph.api.export is export.export
    tree = ast.parse((PKG / "api.py").read_text())
    assert not [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))], "api.py only re-exports"
