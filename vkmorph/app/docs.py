"""``python -m vkmorph.app.docs OUT_DIR``: the API reference from the docstrings (pdoc), failing on broken links.

pdoc renders every public module of the package. A reference is any backticked dotted name that starts with
``vkmorph.`` in a docstring (e.g. `vkmorph.api.Model`); each must resolve to a module or an attribute, or the
build fails listing them, and so does any warning pdoc raises while importing or rendering. ``make docs`` runs
it; the test suite runs it too (tests/app/test_docs.py).
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import warnings
from pathlib import Path

EXCLUDE = ("vkmorph.__main__",)          # importing it would run the CLI
REFERENCE = re.compile(r"`(vkmorph(?:\.\w+)+)`")


def modules() -> list[str]:
    import pkgutil

    import vkmorph

    names = ["vkmorph"] + [m.name for m in pkgutil.walk_packages(vkmorph.__path__, "vkmorph.")]
    return [n for n in names if n not in EXCLUDE]


def _children() -> list[str]:
    import pkgutil

    import vkmorph

    return [f"vkmorph.{m.name}" for m in pkgutil.iter_modules(vkmorph.__path__)
            if f"vkmorph.{m.name}" not in EXCLUDE]


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def broken_references() -> list[str]:
    """One ``"<where>: <reference>"`` line for every docstring reference that does not resolve."""
    bad = []
    for name in modules():
        mod = importlib.import_module(name)
        objs = [(name, mod)] + [(f"{name}.{k}", v) for k, v in vars(mod).items()
                                 if getattr(v, "__module__", None) == name and (inspect.isclass(v)
                                                                                or inspect.isfunction(v))]
        for owner, cls in list(objs):
            if inspect.isclass(cls):
                objs += [(f"{owner}.{k}", v) for k, v in vars(cls).items() if inspect.isfunction(v)]
        for where, obj in objs:
            for ref in REFERENCE.findall(inspect.getdoc(obj) or ""):
                if not _resolves(ref):
                    bad.append(f"{where}: `{ref}`")
    return sorted(set(bad))


def build(out_dir: str | Path) -> list[str]:
    """Render the reference into ``out_dir``; returns the problems (empty when the build is clean)."""
    import pdoc

    problems = broken_references()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.render.configure(docformat="markdown", footer_text="vkmorph API reference")
        # vkmorph's __all__ lists no submodules, so name its direct children; subpackages recurse by themselves
        pdoc.pdoc("vkmorph", *_children(), output_directory=Path(out_dir))
    ignored = (DeprecationWarning, SyntaxWarning, ResourceWarning)  # not about the docs (e.g. a GC'd pipe)
    problems += [f"pdoc: {w.message}" for w in caught if not issubclass(w.category, ignored)]
    return problems


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0] if argv else "build/api")
    problems = build(out)
    for p in problems:
        print(f"vkmorph docs: {p}", file=sys.stderr)
    if not problems:
        print(f"wrote {out}/index.html ({len(modules())} modules)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
