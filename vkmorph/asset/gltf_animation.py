"""glTF animations exactly as the file says them, read with vkmorph's own glTF reader (``asset.gltf``).

Assimp 5.2.5 drops each sampler's interpolation (STEP and CUBICSPLINE play back as LINEAR) and reads the
(in-tangent, value, out-tangent) triplets of a CUBICSPLINE *weights* sampler as values, so such files failed to
import. For .gltf/.glb the importer therefore replaces Assimp's clips by these: times, values (tangents kept for
CUBICSPLINE) and interpolation per channel, sampled by ``anim.sampler`` per the glTF specification.

glTF node i is found among the importer's nodes by walking both hierarchies in the same pre-order (Assimp adds a
"ROOT" node above several scene roots, names unnamed nodes ``nodes[i]``); if that walk disagrees anywhere,
unique names are used, and a node that cannot be found is an ``AssetError``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import AssetError, AssetWarning, abridged
from .model import AnimationClip, MorphWeightChannel, NodeChannel, SceneAsset

_WIDTH = {"translation": 3, "rotation": 4, "scale": 3}
UNIT_TOLERANCE = 5e-4   # the Khronos glTF-Validator's threshold for unit quaternions and normals


def gltf_node_map(doc, scene: SceneAsset) -> list[int | None]:
    """For each glTF node index, the index of the same node in ``scene.nodes`` (None: not in the scene)."""
    nodes = doc.json.get("nodes", [])
    scenes = doc.json.get("scenes", [])
    s_i = doc.json.get("scene", 0)
    roots = list(scenes[s_i].get("nodes", [])) if scenes and 0 <= s_i < len(scenes) else []
    order: list[int] = []
    stack = list(reversed(roots))
    seen: set[int] = set()
    while stack:
        i = stack.pop()
        if i in seen or not 0 <= i < len(nodes):
            continue
        seen.add(i)
        order.append(i)
        stack.extend(reversed(nodes[i].get("children", []) if isinstance(nodes[i], dict) else []))
    ours = [n.name for n in scene.nodes]
    start = 1 if len(roots) > 1 and len(ours) == len(order) + 1 else 0
    out: list[int | None] = [None] * len(nodes)
    if len(ours) - start == len(order) and all(ours[start + k] == doc.assimp_node_name(i)
                                               for k, i in enumerate(order)):
        for k, i in enumerate(order):
            out[i] = start + k
        return out
    index: dict[str, list[int]] = {}
    for k, name in enumerate(ours):
        index.setdefault(name, []).append(k)
    for i in range(len(nodes)):
        hits = index.get(doc.assimp_node_name(i), [])
        out[i] = hits[0] if len(hits) == 1 else None
    return out


def gltf_animations(doc, scene: SceneAsset) -> list[AnimationClip]:
    """Every animation of the glTF document as an ``AnimationClip`` over ``scene``'s nodes (found through
    ``scene.file_nodes``, which the importer fills by node index; else by ``gltf_node_map``). A channel without
    a target node, or a ``KHR_animation_pointer`` one, is skipped with one warning per animation."""
    node_of = scene.file_nodes if scene.file_nodes is not None else gltf_node_map(doc, scene)
    clips = []
    for a_i, anim in enumerate(doc.json.get("animations", [])):
        name = anim.get("name") if isinstance(anim.get("name"), str) and anim.get("name") else f"clip_{a_i}"
        morph: list[MorphWeightChannel] = []
        trs: list[NodeChannel] = []
        last = 0.0
        skipped = []
        for c_i, ch in enumerate(doc.channels(a_i)):
            if ch.node is None:          # glTF: a channel without a node is ignored
                skipped.append((c_i, ch.path))
                continue
            where = f"animations[{a_i}].channels[{c_i}]"
            node = node_of[ch.node] if 0 <= ch.node < len(node_of) else None
            if node is None:
                raise AssetError(f"{where}: node {ch.node} is not part of the imported scene", file=scene.source)
            width = doc.node_target_count(ch.node) if ch.path == "weights" else None
            s = doc.sampler(a_i, ch.sampler, width=width)
            per_key = 3 if s.interpolation == "CUBICSPLINE" else 1
            K = len(s.input)
            want = width if width is not None else _WIDTH[ch.path]
            if K == 0 or s.output.shape != (per_key * K, want):
                raise AssetError(f"{where}: {s.interpolation} sampler has {s.output.shape[0]} x {s.output.shape[1]}"
                                 f" output values for {K} keys; expected {per_key * K} x {want}", file=scene.source)
            if ch.path == "rotation":
                keys = s.output[1::3] if s.interpolation == "CUBICSPLINE" else s.output
                off = np.abs(np.linalg.norm(keys, axis=1) - 1.0) > UNIT_TOLERANCE
                if off.any():
                    warnings.warn(AssetWarning(
                        f"file {doc.file}: animations[{a_i}].samplers[{ch.sampler}].output: {int(off.sum())} of "
                        f"{len(keys)} rotation keys are not unit quaternions (key {int(np.flatnonzero(off)[0])}); "
                        "normalized when sampled"), stacklevel=3)
            if ch.path == "weights":
                morph.append(MorphWeightChannel(node=node, times=s.input, values=s.output,
                                                interpolation=s.interpolation))
            else:
                trs.append(NodeChannel(node=node, path=ch.path, times=s.input, values=s.output,
                                       interpolation=s.interpolation))
            last = max(last, float(np.max(s.input)))
        if skipped:
            pointer = sum(p == "pointer" for _, p in skipped)
            what = (f"{len(skipped) - pointer} without a target node" if len(skipped) > pointer else "") + \
                (", " if pointer and len(skipped) > pointer else "") + \
                (f"{pointer} KHR_animation_pointer" if pointer else "")
            warnings.warn(AssetWarning(f"file {doc.file}: animations[{a_i}] ({abridged(name)}): {len(skipped)} channel"
                                       f"{'s' if len(skipped) > 1 else ''} skipped ({what}; channels "
                                       f"{[c for c, _ in skipped][:8]})"), stacklevel=3)
        clips.append(AnimationClip(name=name, duration=last, morph_channels=morph, node_channels=trs))
    return clips
