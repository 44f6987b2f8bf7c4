"""Every command that reads a model: ``--allow-external-uris`` (refused by default, with the flag or
VKMORPH_ALLOW_EXTERNAL_URIS=1 read) and the importer's ``AssetWarning`` printed as ONE line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.asset.gltf_build import skinned_morph_model, write_gltf
from tests.helpers import vkmorph


def _model(tmp_path):
    """The base quad with joint weights summing to 2 (vkmorph renormalizes with a warning) and its buffer one
    folder up (``../outside.bin``), outside the model's folder."""
    doc, binary = skinned_morph_model()
    binary = bytearray(binary)
    prim = doc["meshes"][0]["primitives"][0]
    acc = doc["accessors"][prim["attributes"]["WEIGHTS_0"]]
    view = doc["bufferViews"][acc["bufferView"]]
    start = view["byteOffset"] + acc.get("byteOffset", 0)
    w = np.frombuffer(binary, np.float32, acc["count"] * 4, start)
    binary[start:start + w.nbytes] = (2 * w).tobytes()
    (tmp_path / "outside.bin").write_bytes(bytes(binary))
    doc["buffers"] = [{"byteLength": len(binary), "uri": "../outside.bin"}]
    (tmp_path / "m").mkdir()
    return write_gltf(tmp_path / "m" / "x.gltf", json.loads(json.dumps(doc)), bytes(binary))


def _commands(tmp_path):
    return {"info": ["--json"], "morph": ["--out", tmp_path / "o.npz"],
            "render": ["--size", "32x24", "--out", tmp_path / "r.png"],
            "demo": ["--headless", "--frames", "1", "--out-dir", tmp_path / "frames"]}


def test_external_uris_refused_by_default_naming_the_flag(tmp_path, monkeypatch):
    monkeypatch.setenv("VKMORPH_ALLOW_EXTERNAL_URIS", "0")   # the child inherits the environment
    path = _model(tmp_path)
    for cmd, args in _commands(tmp_path).items():
        r = vkmorph(cmd, path, *args)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, (cmd, r.stderr)
        assert "'../outside.bin' points outside the model's folder" in lines[0], lines
        assert "--allow-external-uris" in lines[0] and "VKMORPH_ALLOW_EXTERNAL_URIS=1" in lines[0], lines
    assert not (tmp_path / "o.npz").exists() and not (tmp_path / "r.png").exists()


@pytest.mark.gpu
def test_flag_or_env_reads_it_and_each_asset_warning_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("VKMORPH_ALLOW_EXTERNAL_URIS", "0")
    path = _model(tmp_path)
    for cmd, args in _commands(tmp_path).items():
        r = vkmorph(cmd, path, "--allow-external-uris", *args)
        assert r.returncode == 0, (cmd, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, (cmd, r.stderr)
        assert lines[0].startswith("vkmorph: warning: file ") and "do not sum to 1" in lines[0], lines
        assert "renormalized" in lines[0], lines
    with np.load(tmp_path / "o.npz") as z:
        assert z["p0/position"].shape == (4, 3)
    monkeypatch.setenv("VKMORPH_ALLOW_EXTERNAL_URIS", "1")
    r = vkmorph("info", path, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["primitives"][0]["vertex_count"] == 4
