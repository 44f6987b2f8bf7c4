"""The API reference builds from the docstrings (pdoc) with no broken `vkmorph.*` reference."""

from __future__ import annotations

import vkmorph.api
import vkmorph.model
from vkmorph.app import docs


def test_api_reference_builds_clean(tmp_path):
    problems = docs.build(tmp_path)
    assert problems == [], "\n".join(problems)
    page = (tmp_path / "vkmorph" / "api.html").read_text()
    assert "def bake" in page or "bake" in page and "Model" in page
    assert (tmp_path / "vkmorph" / "render" / "morph_pass.html").exists()


def test_a_broken_reference_is_reported(monkeypatch):
    monkeypatch.setattr(vkmorph.model.Model.pose, "__doc__", "See `vkmorph.api.no_such_thing`.")
    assert "vkmorph.model.Model.pose: `vkmorph.api.no_such_thing`" in docs.broken_references()
