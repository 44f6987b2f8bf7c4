"""The extension table is one: the README's "glTF extensions" rows equal ``gltf_extensions.EXTENSIONS``."""

from __future__ import annotations

import re

from tests.helpers import ROOT
from vkmorph.asset.gltf_extensions import EXTENSIONS


def test_readme_table_lists_every_extension_with_its_status():
    text = (ROOT / "README.md").read_text()
    start = text.index("### glTF extensions")
    section = text[start:text.index("\n## ", start)]   # up to the next top-level section
    rows = dict(re.findall(r"^\| `([A-Za-z0-9_]+)` \| (\w+) \|", section, re.M))
    assert rows == {name: e.status for name, e in EXTENSIONS.items()}
