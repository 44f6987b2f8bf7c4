"""The in-process scene cache (vkmorph/asset/scene_cache.py): a second load of an unchanged glTF reuses the
validated scene; any change to the model or to a file it names is a fresh import; errors are never cached."""

from __future__ import annotations

import os
import shutil
import warnings

import numpy as np
import pytest

from tests.helpers import asset
from vkmorph.asset import importer, scene_cache
from vkmorph.errors import AssetError


@pytest.fixture
def imports(monkeypatch):
    """Counts the real glTF imports load_scene runs."""
    count = [0]
    real = importer._load_gltf

    def counting(*a, **kw):
        count[0] += 1
        return real(*a, **kw)

    monkeypatch.setattr(importer, "_load_gltf", counting)
    return count


@pytest.fixture
def simple(tmp_path):
    """A private copy of SimpleMorph (a .gltf with two external .bin files)."""
    src = asset("SimpleMorph", "SimpleMorph.gltf").parent
    for name in ("SimpleMorph.gltf", "simpleMorphGeometry.bin", "simpleMorphAnimation.bin"):
        shutil.copy(src / name, tmp_path / name)
    return tmp_path / "SimpleMorph.gltf"


def positions(scene) -> np.ndarray:
    return scene.primitives[0].vertices["position"].copy()


def test_second_load_is_a_hit_and_a_private_copy(simple, imports):
    a = importer.load_scene(simple)
    b = importer.load_scene(simple)
    assert imports[0] == 1
    assert b is not a and b.primitives[0].vertices is not a.primitives[0].vertices
    np.testing.assert_array_equal(positions(a), positions(b))
    a.primitives[0].vertices["position"][:] = 99.0          # what one caller does to its scene ...
    a.nodes[0].name = "changed"
    c = importer.load_scene(simple)
    assert imports[0] == 1
    np.testing.assert_array_equal(positions(c), positions(b))  # ... the next one never sees
    assert c.nodes[0].name == b.nodes[0].name


def test_rewritten_buffer_file_with_the_same_size_and_mtime_is_a_fresh_import(simple, imports):
    first = positions(importer.load_scene(simple))
    geo = simple.parent / "simpleMorphGeometry.bin"
    st = os.stat(geo)
    data = bytearray(geo.read_bytes())
    import json
    import struct

    doc = json.loads(simple.read_text())
    acc = doc["accessors"][doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"]]
    at = doc["bufferViews"][acc["bufferView"]].get("byteOffset", 0) + acc.get("byteOffset", 0)
    x0 = struct.unpack_from("<f", data, at)[0]
    struct.pack_into("<f", data, at, x0 + 0.25)                # the first vertex's x
    geo.write_bytes(bytes(data))
    os.utime(geo, ns=(st.st_atime_ns, st.st_mtime_ns))         # same size, same mtime: only ctime tells
    again = positions(importer.load_scene(simple))
    assert imports[0] == 2
    assert again[0, 0] == pytest.approx(first[0, 0] + 0.25)


def test_edited_model_file_is_a_fresh_import(simple, imports):
    importer.load_scene(simple)
    text = simple.read_text()
    simple.write_text(text.replace('"asset"', '"extras": {"edited": true}, "asset"', 1))
    importer.load_scene(simple)
    assert imports[0] == 2


def test_a_file_that_fails_is_never_cached(simple, imports):
    good = simple.read_text()
    simple.write_text(good.replace('"asset"', '"asset": {"version": "1.0"}, "_old_asset"', 1))
    for _ in range(2):
        with pytest.raises(AssetError, match="only glTF 2.x"):
            importer.load_scene(simple)
    assert imports[0] == 2 and scene_cache.size() == 0
    simple.write_text(good)                                     # fixed: loads ...
    importer.load_scene(simple)
    simple.write_text(good.replace('"asset"', '"asset": {"version": "1.0"}, "_old_asset"', 1))
    with pytest.raises(AssetError, match="only glTF 2.x"):     # ... and broken again: no stale success
        importer.load_scene(simple)


def test_warnings_come_again_on_a_hit(tmp_path, imports):
    src = asset("SimpleMorph", "SimpleMorph.gltf").parent
    for name in ("simpleMorphGeometry.bin", "simpleMorphAnimation.bin"):
        shutil.copy(src / name, tmp_path / name)
    import json

    doc = json.loads((src / "SimpleMorph.gltf").read_text())
    doc["extensionsUsed"] = ["EXT_not_a_real_extension"]       # used, not required: one warning
    path = tmp_path / "warn.gltf"
    path.write_text(json.dumps(doc))
    seen = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            importer.load_scene(path)
        seen.append(sorted(str(w.message) for w in caught))
    assert imports[0] == 1
    assert seen[0] and seen[0] == seen[1]


def test_options_and_environment_are_part_of_the_key(simple, imports, monkeypatch):
    importer.load_scene(simple)
    importer.load_scene(simple, validate=False)
    assert imports[0] == 2
    monkeypatch.setenv("VKMORPH_MAX_NODES", "100000")
    importer.load_scene(simple)
    assert imports[0] == 3
    monkeypatch.setenv(scene_cache.ENV, "0")
    importer.load_scene(simple)
    importer.load_scene(simple)
    assert imports[0] == 5
    importer.load_scene(simple, cache=False)
    assert imports[0] == 6
