"""The package's layer order, read from the import statements (docs/architecture.md, "Layers"):

    asset -> morph -> anim -> gpu -> render -> app / api

A module imports only its own layer and the ones left of it. ``errors``, ``outputs`` and ``progress`` are leaf
utilities every layer may use (they import nothing of vkmorph but ``errors``); ``app`` (the command line) may use
the public ``api``, never the reverse; ``vkmorph/__init__.py`` and ``__main__.py`` are the package's entry points.
Function-local imports count too: a lazy upward import is still an upward dependency."""

from __future__ import annotations

import ast

from tests.helpers import ROOT

PACKAGE = ROOT / "vkmorph"
RANK = {"asset": 0, "morph": 1, "anim": 2, "gpu": 3, "render": 4, "api": 5, "app": 6}   # api: top-level modules
UTILITIES = {"errors", "outputs", "progress"}
ENTRY_POINTS = {"__init__", "__main__"}


def _layer_of(name: str) -> str:
    """The layer of ``vkmorph.<name>...``: its subpackage; a top-level module is a utility, an entry point or
    part of the public Python API (``api``, ``bake``, ...)."""
    name = name.removesuffix(".py")
    if name in UTILITIES or name in ENTRY_POINTS or name in RANK or name.startswith("__"):
        return name
    return "api"


def _imports(path, package) -> list[tuple[int, str]]:
    """(line, absolute module) for every vkmorph import in ``path``, relative ones resolved."""
    rel = path.relative_to(package).parts
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["vkmorph", *rel[:-1]][: len(rel) - node.level + 1]
                names = [".".join([*base, node.module] if node.module else base)]
                if not node.module:    # `from . import x`: x is the module
                    names = [".".join([*base, a.name]) for a in node.names]
            else:
                names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out += [(node.lineno, n) for n in names if n.startswith("vkmorph.")]
    return out


def violations(package=PACKAGE) -> list[str]:
    root = package.parent
    bad = []
    for path in sorted(package.rglob("*.py")):
        src = _layer_of(path.relative_to(package).parts[0])
        for line, mod in _imports(path, package):
            dst = _layer_of(mod.split(".")[1])
            if src in ENTRY_POINTS or dst in UTILITIES or dst == src or dst.startswith("__"):    # __version__
                continue
            if src in UTILITIES:
                bad.append(f"{path.relative_to(root)}:{line}: utility module imports {mod}")
            elif RANK[dst] > RANK[src]:
                bad.append(f"{path.relative_to(root)}:{line}: {src} imports {mod} (upward)")
    return bad


def test_every_import_goes_down_the_layers():
    bad = violations()
    assert not bad, "layer order asset -> morph -> anim -> gpu -> render -> app/api:\n" + "\n".join(bad)


def test_the_scan_resolves_relative_imports_and_sees_function_local_ones(tmp_path):
    pkg = tmp_path / "vkmorph"
    (pkg / "asset").mkdir(parents=True)
    (pkg / "asset" / "x.py").write_text("def f():\n    from ..render import morph_pass\n")
    (pkg / "morph.py").write_text("")
    assert violations(pkg) == ["vkmorph/asset/x.py:2: asset imports vkmorph.render (upward)"]
