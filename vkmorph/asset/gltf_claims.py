"""What a glTF file's JSON claims it will cost, checked against ``limits`` before anything is decoded.

A small file can claim a lot: 100,000 morph targets that all read one accessor, 4,000 targets of 1,000,000
vertices each reading one accessor, 1,000 primitives sharing one POSITION accessor, an accessor without a
bufferView claiming 200 MB of zeros, 2,000 accessors over one buffer view. Decoding each use (the validator,
Assimp and the data model all hold their own arrays) costs memory by the claim, not by the bytes in the file.
``check_claims`` adds up, from the JSON alone, the primitives (~3 ms each in the importer), the morph targets
per primitive, the skin joints per skinned node and primitive (~70 us each), the vertices and target vertices
over all primitives (~350 B and ~60 B, ~4 and ~3 us each: 1,000,000 vertices with 40 targets took 54 s and 3 GB
on this 2-core host), the animation channels and the bytes decoded for every use of every accessor (each
accessor at least once), and raises one ``AssetError`` naming the place and the limit that the first excess
breaks. Malformed members are skipped here: the validator reports them with their own messages.
"""

from __future__ import annotations

import math

from . import limits
from .gltf import TYPE_SHAPES, is_int

_COMPONENTS = {t: math.prod(shape) for t, shape in TYPE_SHAPES.items()}
DECODED_ITEM = 4       # accessors end up as float32 / uint32 components
SAMPLER_ITEM = 8       # animation samplers are decoded to float64, once per channel that uses them


def check_claims(doc) -> None:
    accessors = doc.array("accessors")
    sizes = [_size(a) for a in accessors]
    uses = [0] * len(accessors)      # bytes claimed per accessor over all its uses

    def use(a, item: int = DECODED_ITEM) -> None:
        if is_int(a) and 0 <= a < len(sizes):
            uses[a] += sizes[a] * item

    vertices = target_vertices = primitives = 0
    joint_limit = limits.value("skin_joints")
    for m_i, mesh in enumerate(doc.array("meshes")):
        prims = mesh.get("primitives") if isinstance(mesh, dict) else None
        primitives += len(prims) if isinstance(prims, list) else 0
        _limit(doc, "primitives", primitives, f"meshes[{m_i}]", "mesh primitives up to this mesh")
        for p_i, prim in enumerate(prims if isinstance(prims, list) else []):
            if not isinstance(prim, dict):
                continue
            where = f"meshes[{m_i}].primitives[{p_i}]"
            targets = prim.get("targets")
            targets = targets if isinstance(targets, list) else []
            _limit(doc, "morph_targets", len(targets), f"{where}.targets", "morph targets")
            attrs = prim.get("attributes")
            pos = attrs.get("POSITION") if isinstance(attrs, dict) else None
            v = _count(accessors[pos]) if is_int(pos) and 0 <= pos < len(accessors) else 0
            vertices += v
            target_vertices += v * len(targets)
            _limit(doc, "vertices", vertices, where, "vertices up to this primitive")
            _limit(doc, "target_vertices", target_vertices, where, "morph target vertices up to this primitive")
            for attrs in [prim.get("attributes")] + targets:
                if isinstance(attrs, dict):
                    for a in attrs.values():
                        use(a)
            use(prim.get("indices"))
    skins, meshes = doc.array("skins"), doc.array("meshes")
    for skin in skins:
        if isinstance(skin, dict):
            use(skin.get("inverseBindMatrices"))
    joints = 0      # the importer handles each joint once per skinned node and primitive (~70 us each)
    for n_i, node in enumerate(doc.array("nodes")):
        s_i, m_i = (node.get("skin"), node.get("mesh")) if isinstance(node, dict) else (None, None)
        if is_int(s_i) and 0 <= s_i < len(skins) and is_int(m_i) and 0 <= m_i < len(meshes):
            j = skins[s_i].get("joints") if isinstance(skins[s_i], dict) else None
            p = meshes[m_i].get("primitives") if isinstance(meshes[m_i], dict) else None
            joints += (len(j) if isinstance(j, list) else 0) * (len(p) if isinstance(p, list) else 0)
            if joints > joint_limit:
                _limit(doc, "skin_joints", joints, f"nodes[{n_i}].skin", "skin joints up to this node")
    channels = 0
    for anim in doc.array("animations"):
        if not isinstance(anim, dict):
            continue
        samplers = anim.get("samplers") if isinstance(anim.get("samplers"), list) else []
        chans = anim.get("channels") if isinstance(anim.get("channels"), list) else []
        channels += len(chans)
        _limit(doc, "channels", channels, "animations", "animation channels")
        for s in samplers:          # the validator decodes each once
            if isinstance(s, dict):
                use(s.get("input"))
                use(s.get("output"))
        for ch in chans:            # the importer decodes a channel's sampler per channel
            s_i = ch.get("sampler") if isinstance(ch, dict) else None
            if is_int(s_i) and 0 <= s_i < len(samplers) and isinstance(samplers[s_i], dict):
                use(samplers[s_i].get("input"), SAMPLER_ITEM)
                use(samplers[s_i].get("output"), SAMPLER_ITEM)
    total, limit = 0, limits.value("decoded_bytes")
    for a, (size, claimed) in enumerate(zip(sizes, uses)):
        total += max(claimed, size * DECODED_ITEM)
        if total > limit:
            total = sum(max(c, s * DECODED_ITEM) for s, c in zip(sizes, uses))
            problem = limits.exceeded("decoded_bytes", total, "bytes of accessor data to decode")
            raise doc.error("accessors", f"{problem}; accessors[{a}] takes the sum past it (an accessor counts "
                                         "once per use)")


def _count(acc) -> int:
    count = acc.get("count") if isinstance(acc, dict) else None
    return count if is_int(count) and count > 0 else 0


def _size(acc) -> int:
    """Components an accessor decodes to (count x components), 0 when malformed (the validator says why)."""
    if not isinstance(acc, dict):
        return 0
    count, tp = acc.get("count"), acc.get("type")
    if not is_int(count) or count < 0 or not isinstance(tp, str) or tp not in _COMPONENTS:
        return 0
    return count * _COMPONENTS[tp]


def _limit(doc, name: str, count: int, where: str, what: str) -> None:
    problem = limits.exceeded(name, count, what)
    if problem:
        raise doc.error(where, problem)
