"""The test suite's own structure (issue 11 item 8): test modules never import each other, and the GPU skip
lives in one place (the ``gpu`` marker's hook in tests/conftest.py), not in each test."""

from __future__ import annotations

import ast

from tests.helpers import ROOT

TESTS = ROOT / "tests"
SKIP_HOME = {TESTS / "conftest.py", TESTS / "helpers.py", TESTS / "test_structure.py"}


def _modules():
    return sorted(p for p in TESTS.rglob("*.py") if "assets" not in p.parts)


def _imported(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def test_no_test_module_imports_another():
    bad = []
    for path in _modules():
        for mod in _imported(ast.parse(path.read_text(), str(path))):
            last = mod.split(".")[-1]
            if mod.startswith("tests.") and (last.startswith("test_") or last == "conftest"):
                bad.append(f"{path.relative_to(ROOT)} imports {mod}")
    assert not bad, "shared test code belongs in tests/helpers.py or a conftest fixture:\n" + "\n".join(bad)


def test_gpu_skip_only_in_conftest():
    bad = [str(p.relative_to(ROOT)) for p in _modules()
           if p not in SKIP_HOME and "vulkan_unavailable_reason" in p.read_text()]
    assert not bad, "mark GPU tests with @pytest.mark.gpu (or use ctx / user_device) instead of skipping: " \
                    + ", ".join(bad)


def test_import_scan_sees_both_import_forms():
    tree = ast.parse("from tests.app.test_cli import vkmorph\nimport tests.conftest\n")
    assert _imported(tree) == ["tests.app.test_cli", "tests.conftest"]
