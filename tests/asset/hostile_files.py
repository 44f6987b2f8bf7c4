"""Generates the hostile glTF/GLB files of issue 27: each small to write, built to cost time or memory.

``CASES`` maps a name to a ``Case``: ``build(folder) -> Path`` writes the file (and whatever it points at) into
``folder``; ``command`` is how the harness runs it (``info``: ``vkmorph info FILE``; ``textures``: the file's
material images decoded the way ``vkmorph render`` decodes them, without a GPU; ``render``: ``vkmorph render``),
``env`` extra environment, ``expect`` the exit statuses allowed, ``says`` a fragment the one stderr line must hold
(exit 2), ``rss_mb`` the peak-RSS bound of the child (``resource`` usage of the child process and its children).

``python -m tests.asset.hostile_files OUT_DIR`` writes every case (for measuring by hand:
``/usr/bin/time -v vkmorph info OUT_DIR/<case>/<file>``)."""

from __future__ import annotations

import base64
import json
import os
import struct
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

TRIANGLE = struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0)


def _base(extra_nodes: list | None = None) -> dict:
    """One triangle (3 vertices, data: URI) on node 0; scene 0 lists node 0."""
    uri = "data:application/octet-stream;base64," + base64.b64encode(TRIANGLE).decode()
    return {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}],
            "nodes": [{"mesh": 0}] + (extra_nodes or []),
            "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
            "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                           "min": [0, 0, 0], "max": [1, 1, 0]}],
            "bufferViews": [{"buffer": 0, "byteLength": 36}],
            "buffers": [{"byteLength": 36, "uri": uri}]}


def _write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc, separators=(",", ":")))
    return path


def deep(depth: int):
    def build(folder: Path) -> Path:
        doc = _base([{"children": [i + 2]} if i + 2 <= depth else {} for i in range(depth)])
        doc["scenes"][0]["nodes"] = [0, 1]
        return _write(folder / f"deep{depth}.gltf", doc)
    return build


def many_nodes(n: int):
    def build(folder: Path) -> Path:
        doc = _base([{} for _ in range(n - 1)])
        doc["scenes"][0]["nodes"] = list(range(n))
        return _write(folder / f"nodes{n}.gltf", doc)
    return build


def fifo_buffer(folder: Path) -> Path:
    os.mkfifo(folder / "pipe.bin")
    doc = _base()
    doc["buffers"][0]["uri"] = "pipe.bin"
    return _write(folder / "fifo.gltf", doc)


def directory_buffer(folder: Path) -> Path:
    (folder / "sub.bin").mkdir()
    doc = _base()
    doc["buffers"][0]["uri"] = "sub.bin"
    return _write(folder / "dir.gltf", doc)


def device_buffer(folder: Path) -> Path:
    """A link in the model's folder to /dev/zero (external URIs allowed by the case's env)."""
    (folder / "zero.bin").symlink_to("/dev/zero")
    doc = _base()
    doc["buffers"][0]["uri"] = "zero.bin"
    return _write(folder / "device.gltf", doc)


def huge_byte_length(folder: Path) -> Path:
    (folder / "small.bin").write_bytes(TRIANGLE)
    doc = _base()
    doc["buffers"][0] = {"byteLength": 1 << 50, "uri": "small.bin"}
    return _write(folder / "huge_length.gltf", doc)


def _png(width: int, height: int, idat: bytes) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", idat) + chunk(b"IEND", b""))


def real_png(width: int, height: int) -> bytes:
    """A complete, valid RGB PNG of ``width`` x ``height`` grey pixels, compressed row by row (never whole)."""
    z = zlib.compressobj(9)
    row = b"\x00" + b"\x80" * (3 * width)
    parts = [z.compress(row) for _ in range(height)]
    parts.append(z.flush())
    return _png(width, height, b"".join(parts))


def _textured(folder: Path, name: str, png: bytes) -> Path:
    (folder / "tex.png").write_bytes(png)
    doc = _base()
    doc["accessors"].append({"bufferView": 1, "componentType": 5126, "count": 3, "type": "VEC2"})
    doc["bufferViews"].append({"buffer": 0, "byteOffset": 0, "byteLength": 24})
    doc["meshes"][0]["primitives"][0]["attributes"]["TEXCOORD_0"] = 1
    doc["meshes"][0]["primitives"][0]["material"] = 0
    doc["materials"] = [{"name": "skin", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]
    doc["textures"] = [{"source": 0}]
    doc["images"] = [{"uri": "tex.png"}]
    return _write(folder / name, doc)


def png_bomb(side: int):
    def build(folder: Path) -> Path:
        return _textured(folder, f"bomb{side}.gltf", _png(side, side, zlib.compress(b"\x00" * 64)))
    return build


def big_png(side: int):
    def build(folder: Path) -> Path:
        return _textured(folder, f"png{side}.gltf", real_png(side, side))
    return build


def fifo_image(folder: Path) -> Path:
    path = _textured(folder, "fifo_image.gltf", b"")
    (folder / "tex.png").unlink()
    os.mkfifo(folder / "tex.png")
    return path


def shared_targets(n: int):
    def build(folder: Path) -> Path:
        doc = _base()
        doc["meshes"][0]["primitives"][0]["targets"] = [{"POSITION": 0}] * n
        return _write(folder / f"targets{n}.gltf", doc)
    return build


def _zeros_accessor(doc: dict, folder: Path, vertices: int) -> int:
    """A real VEC3 accessor of ``vertices`` zero positions in its own .bin file; returns its index."""
    (folder / "zeros.bin").write_bytes(bytes(12 * vertices))
    doc["buffers"].append({"byteLength": 12 * vertices, "uri": "zeros.bin"})
    doc["bufferViews"].append({"buffer": len(doc["buffers"]) - 1, "byteLength": 12 * vertices})
    doc["accessors"].append({"bufferView": len(doc["bufferViews"]) - 1, "componentType": 5126, "count": vertices,
                             "type": "VEC3", "min": [0, 0, 0], "max": [0, 0, 0]})
    return len(doc["accessors"]) - 1


def target_vertices(folder: Path) -> Path:
    """4,000 targets (under the target limit) x 1,000,000 vertices, all reading one 12 MB accessor."""
    doc = _base()
    a = _zeros_accessor(doc, folder, 1_000_000)
    prim = doc["meshes"][0]["primitives"][0]
    prim["attributes"]["POSITION"] = a
    prim["targets"] = [{"POSITION": a}] * 4000
    return _write(folder / "target_vertices.gltf", doc)


def shared_positions(folder: Path) -> Path:
    """200 primitives sharing one 1.2 MB POSITION accessor of 100,000 vertices (20,000,000 vertices claimed)."""
    doc = _base()
    a = _zeros_accessor(doc, folder, 100_000)
    doc["meshes"][0]["primitives"] = [{"attributes": {"POSITION": a}}] * 200
    return _write(folder / "shared_positions.gltf", doc)


def zero_accessors(folder: Path) -> Path:
    """64 accessors without a bufferView, each claiming 200 MB of zeros (12.8 GB in all)."""
    doc = _base()
    doc["accessors"] += [{"componentType": 5126, "count": 200_000_000 // 16, "type": "VEC4"} for _ in range(64)]
    return _write(folder / "zero_accessors.gltf", doc)


def aliased_views(folder: Path) -> Path:
    """One 16 MB buffer view read by 2,000 accessors (32 GB if each is decoded)."""
    (folder / "big.bin").write_bytes(bytes(16 << 20))
    doc = _base()
    doc["buffers"].append({"byteLength": 16 << 20, "uri": "big.bin"})
    doc["bufferViews"].append({"buffer": 1, "byteLength": 16 << 20})
    doc["accessors"] += [{"bufferView": 1, "componentType": 5126, "count": (16 << 20) // 16, "type": "VEC4"}
                         for _ in range(2000)]
    return _write(folder / "aliased.gltf", doc)


def whitespace_glb(megabytes: int):
    def build(folder: Path) -> Path:
        doc = _base()
        bin_ = TRIANGLE
        doc["buffers"] = [{"byteLength": len(bin_)}]
        js = json.dumps(doc).encode()
        js = js[:-1] + b" " * (megabytes << 20) + b"}"
        js += b" " * (-len(js) % 4)
        bn = bin_ + b"\0" * (-len(bin_) % 4)
        body = struct.pack("<II", len(js), 0x4E4F534A) + js + struct.pack("<II", len(bn), 0x004E4942) + bn
        path = folder / f"whitespace{megabytes}.glb"
        path.write_bytes(b"glTF" + struct.pack("<II", 2, 12 + len(body)) + body)
        return path
    return build


def unused_members(folder: Path) -> Path:
    """30 MB of JSON in an unused extras member: 10,000,000 empty objects."""
    doc = _base()
    doc["extras"] = "@"
    text = json.dumps(doc, separators=(",", ":")).replace('"@"', "[" + ",".join(["{}"] * 10_000_000) + "]")
    path = folder / "unused_members.gltf"
    path.write_text(text)
    return path


def many_channels(n: int):
    def build(folder: Path) -> Path:
        doc = _base()
        doc["accessors"].append({"bufferView": 0, "componentType": 5126, "count": 1, "type": "SCALAR"})
        doc["accessors"].append({"bufferView": 0, "componentType": 5126, "count": 1, "type": "VEC3"})
        doc["animations"] = [{"samplers": [{"input": 1, "output": 2}],
                              "channels": [{"sampler": 0, "target": {"node": 0, "path": "translation"}}] * n}]
        return _write(folder / f"channels{n}.gltf", doc)
    return build


def many_meshes(n: int):
    def build(folder: Path) -> Path:
        doc = _base()
        doc["nodes"] = [{"mesh": i} for i in range(n)]
        doc["scenes"][0]["nodes"] = list(range(n))
        doc["meshes"] = [{"primitives": [{"attributes": {"POSITION": 0}}]} for _ in range(n)]
        return _write(folder / f"meshes{n}.gltf", doc)
    return build


def shared_skin(users: int, joints: int):
    """One skin of ``joints`` joints (identity inverse binds) bound by ``users`` mesh nodes of one skinned mesh."""
    def build(folder: Path) -> Path:
        doc = _base()
        ibm = struct.pack("<16f", *[1.0 if r == c else 0.0 for c in range(4) for r in range(4)]) * joints
        blob = TRIANGLE + bytes(12) + struct.pack("<12f", *([1, 0, 0, 0] * 3)) + ibm
        doc["buffers"] = [{"byteLength": len(blob),
                           "uri": "data:application/octet-stream;base64," + base64.b64encode(blob).decode()}]
        doc["bufferViews"] = [{"buffer": 0, "byteLength": 36}, {"buffer": 0, "byteOffset": 36, "byteLength": 12},
                              {"buffer": 0, "byteOffset": 48, "byteLength": 48},
                              {"buffer": 0, "byteOffset": 96, "byteLength": len(ibm)}]
        doc["accessors"] += [{"bufferView": 1, "componentType": 5121, "count": 3, "type": "VEC4"},
                             {"bufferView": 2, "componentType": 5126, "count": 3, "type": "VEC4"},
                             {"bufferView": 3, "componentType": 5126, "count": joints, "type": "MAT4"}]
        doc["meshes"][0]["primitives"][0]["attributes"].update({"JOINTS_0": 1, "WEIGHTS_0": 2})
        doc["nodes"] = [{"mesh": 0, "skin": 0} for _ in range(users)] + [{} for _ in range(joints)]
        doc["scenes"][0]["nodes"] = list(range(users + joints))
        doc["skins"] = [{"joints": list(range(users, users + joints)), "inverseBindMatrices": 3}]
        return _write(folder / f"skin{users}x{joints}.gltf", doc)
    return build


@dataclass(frozen=True)
class Case:
    build: object
    command: str = "info"
    expect: tuple = (0, 2)
    says: str = ""
    rss_mb: int = 400
    env: dict = field(default_factory=dict)


CASES = {
    "deep_100000": Case(deep(100_000), expect=(2,), says="levels", env={"VKMORPH_MAX_NODES": "200000"}),
    "deep_10000": Case(deep(10_000), expect=(2,), says="levels"),
    "deep_2000": Case(deep(2_000), expect=(2,), says="levels"),
    "deep_500": Case(deep(500), expect=(0,)),
    "nodes_1000000": Case(many_nodes(1_000_000), expect=(2,), says="JSON values"),
    "nodes_100000": Case(many_nodes(100_000), expect=(2,), says="nodes in a glTF file"),
    "fifo_buffer": Case(fifo_buffer, expect=(2,), says="not a regular file"),
    "directory_buffer": Case(directory_buffer, expect=(2,), says="not a regular file"),
    "device_buffer": Case(device_buffer, expect=(2,), says="not a regular file",
                          env={"VKMORPH_ALLOW_EXTERNAL_URIS": "1"}),
    "huge_byte_length": Case(huge_byte_length, expect=(2,), says="byteLength"),
    "png_bomb_20000": Case(png_bomb(20_000), command="textures", expect=(0,), says="VKMORPH_MAX_IMAGE_PIXELS"),
    "png_bomb_30000": Case(png_bomb(30_000), command="textures", expect=(0,), says="VKMORPH_MAX_IMAGE_PIXELS"),
    "png_12000": Case(big_png(12_000), command="textures", expect=(0,), says="VKMORPH_MAX_IMAGE_PIXELS"),
    "png_bomb_render": Case(png_bomb(30_000), command="render", expect=(0,), says="VKMORPH_MAX_IMAGE_PIXELS"),
    "fifo_image": Case(fifo_image, command="textures", expect=(0,), says="not a regular file"),
    "targets_100000": Case(shared_targets(100_000), expect=(2,), says="morph targets"),
    "target_vertices": Case(target_vertices, expect=(2,), says="morph target vertices"),
    "meshes_20000": Case(many_meshes(20_000), expect=(2,), says="mesh primitives"),
    "skin_joints": Case(shared_skin(100, 19_000), expect=(2,), says="skin joints"),
    "skin_joints_ok": Case(shared_skin(2, 2_000), expect=(0,)),
    "shared_positions": Case(shared_positions, expect=(2,), says="VKMORPH_MAX_VERTICES"),
    "zero_accessors": Case(zero_accessors, expect=(2,), says="bytes of accessor data"),
    "aliased_views": Case(aliased_views, expect=(2,), says="bytes of accessor data"),
    "whitespace_glb_100mb": Case(whitespace_glb(100), expect=(0,), rss_mb=420),   # 446 MB before
    "unused_members": Case(unused_members, expect=(2,), says="JSON values"),
    "channels_200000": Case(many_channels(200_000), expect=(2,), says="animation channels"),
}


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    names = argv[1:] or list(CASES)
    for name in names:
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        print(name, CASES[name].build(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
