"""After Assimp imported ``gltf_canonical``'s decode: the file's names and materials put back, and a check that
every attribute the GPU will get equals vkmorph's own decode of the file (a check, not a hope).

The check compares, per imported primitive, positions, normals, tangents, TEXCOORD_0/1, COLOR_0, indices
(triangle lists), skin influences (top four per vertex, as node indices) and morph position / normal / tangent
deltas with ``GltfDocument.accessor``. A disagreement is one ``AssetError`` naming the accessor and the vertex.
Draco-compressed primitives, which Assimp decodes, are compared with DracoPy's decode of the same bytes (only
their vertex counts when DracoPy is not installed).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import AssetError, AssetWarning
from .gltf import GltfDocument
from .gltf_animation import UNIT_TOLERANCE
from .gltf_canonical import DRACO, NAME_PREFIX, Canonical
from .materials import Material, gltf_materials
from .model import SceneAsset

# float32 round trips through Assimp (v flipped twice, target = base + delta then delta = target - base):
# a few units in the last place of the magnitudes involved
_ULPS = 4 * float(np.finfo(np.float32).eps)


def display_names(doc: GltfDocument, canon: Canonical) -> dict:
    """The canonical file's names (``vkm#i``) -> the file's, for the importer: ``meshes`` maps each Assimp mesh
    name to (display name, (file mesh, file primitive)); ``nodes`` maps node names; ``node_index`` gives the
    file's node index of each canonical node that is not an instance copy."""
    meshes = {}
    for c, (m_i, kept) in enumerate(canon.meshes):
        mesh = doc.json["meshes"][m_i]
        name = mesh.get("name")
        base = name if isinstance(name, str) and name else f"meshes[{m_i}]"
        many = len(mesh["primitives"]) > 1
        for k, p_i in enumerate(kept):
            raw = f"{NAME_PREFIX}{c}" if len(kept) == 1 else f"{NAME_PREFIX}{c}-{k}"
            meshes[raw] = (f"{base}-{p_i}" if many else base, (m_i, p_i))
    nodes, index = {}, {}
    for c, (n_i, inst) in enumerate(canon.nodes):
        raw = f"{NAME_PREFIX}{c}"
        base = doc.assimp_node_name(n_i)
        nodes[raw] = base if inst is None else f"{base} instance {inst}"
        if inst is None:
            index[raw] = n_i
    return {"meshes": meshes, "nodes": nodes, "node_index": index, "file_node_count": len(doc.array("nodes"))}


def apply_document(doc: GltfDocument, canon: Canonical, scene: SceneAsset) -> None:
    """Materials from the file (by each primitive's own ``material`` index), then ``check_import``."""
    materials = gltf_materials(doc)
    for prim in scene.primitives:
        if prim.source is None:
            continue
        m_i, p_i = prim.source
        idx = doc.json["meshes"][m_i]["primitives"][p_i].get("material")
        prim.material = materials[idx] if isinstance(idx, int) and 0 <= idx < len(materials) else Material()
        prim.base_color = prim.material.base_color_factor
    check_import(doc, canon, scene)


def check_import(doc: GltfDocument, canon: Canonical, scene: SceneAsset) -> None:
    for prim in scene.primitives:
        if prim.source is None:
            raise AssetError(f"imported primitive {prim.name!r} matches no primitive of the file", file=doc.file)
        m_i, p_i = prim.source
        fp = doc.json["meshes"][m_i]["primitives"][p_i]
        w = f"meshes[{m_i}].primitives[{p_i}]"
        attrs = fp["attributes"]
        V = prim.vertex_count
        if V != doc.json["accessors"][attrs["POSITION"]]["count"]:
            raise AssetError(f"{w}: {V} vertices imported, POSITION (accessors[{attrs['POSITION']}]) has "
                             f"{doc.json['accessors'][attrs['POSITION']]['count']}", file=doc.file)
        get = _decoder(doc, fp, w)
        if get is None:   # Draco without DracoPy: only Assimp decodes it
            continue
        v = prim.vertices
        pos = get("POSITION").astype(np.float32)
        _same(doc, w, "POSITION", attrs["POSITION"], pos, v["position"])
        if "NORMAL" in attrs:
            nrm = get("NORMAL")
            _same(doc, w, "NORMAL", attrs["NORMAL"], nrm, v["normal"])
            off = np.abs(np.linalg.norm(nrm.astype(np.float64), axis=1) - 1.0) > UNIT_TOLERANCE
            if off.any():
                _warn(doc, f"{w}.attributes.NORMAL", f"{int(off.sum())} of {V} normals are not unit length "
                      f"(vertex {int(np.flatnonzero(off)[0])}); normalized where shaded")
        if "TANGENT" in attrs:
            _same(doc, w, "TANGENT", attrs["TANGENT"], get("TANGENT")[:, :3], v["tangent"][:, :3])
        if "TEXCOORD_0" in attrs:
            _same(doc, w, "TEXCOORD_0", attrs["TEXCOORD_0"], get("TEXCOORD_0"), v["texcoord"])
        if "TEXCOORD_1" in attrs:
            _same(doc, w, "TEXCOORD_1", attrs["TEXCOORD_1"], get("TEXCOORD_1"), prim.texcoord1)
        if "COLOR_0" in attrs:
            c = get("COLOR_0").astype(np.float32)
            if c.shape[1] == 3:
                c = np.concatenate([c, np.ones((len(c), 1), np.float32)], axis=1)
            _same(doc, w, "COLOR_0", attrs["COLOR_0"], np.clip(np.nan_to_num(c, nan=1.0), 0, 1), prim.colors)
            off = ~((c >= 0) & (c <= 1)).all(axis=1)
            if off.any():
                _warn(doc, f"{w}.attributes.COLOR_0", f"{int(off.sum())} of {V} colours lie outside 0..1 or are "
                      f"not numbers (vertex {int(np.flatnonzero(off)[0])}); clamped")
        if fp.get("mode", 4) == 4:
            idx = get("indices") if "indices" in fp else np.arange(V)
            ours = idx.astype(np.int64).reshape(-1)
            ours = ours[:len(ours) // 3 * 3]
            _same(doc, w, "indices", fp.get("indices"), ours, prim.indices.astype(np.int64), exact=True)
        if prim.is_skinned:
            _influences(doc, scene, prim, w, attrs, m_i, get)
        for t_i, (ft, t) in enumerate(zip(fp.get("targets", []), prim.morph_targets)):
            tw = f"{w}.targets[{t_i}]"
            for key, base, got in (("POSITION", pos, t.position_deltas),
                                   ("NORMAL", v["normal"], t.normal_deltas if not t.normals_derived else None),
                                   ("TANGENT", v["tangent"][:, :3], t.tangent_deltas)):
                if key in ft and got is not None:
                    d = doc.accessor(ft[key]).astype(np.float32)
                    _same(doc, tw, key, ft[key], d, got, scale=np.abs(base) + np.abs(d))


def _decoder(doc: GltfDocument, fp: dict, w: str):
    """name -> vkmorph's decode of that attribute (or "indices") of primitive ``fp``. A Draco primitive is decoded
    with DracoPy (Google's Draco decoder, independent of Assimp's copy of it); None when DracoPy is absent."""
    attrs = fp["attributes"]
    ext = (fp.get("extensions") or {}).get(DRACO)
    if not isinstance(ext, dict):
        return lambda name: doc.accessor(fp["indices"] if name == "indices" else attrs[name])
    try:
        import DracoPy
    except ImportError:
        return None
    data, _ = doc.view_range(ext.get("bufferView"), f"{w}.extensions.{DRACO}.bufferView")
    try:
        mesh = DracoPy.decode(bytes(data))
    except Exception as exc:  # noqa: BLE001 - the decoder's own reason, in one line naming the primitive
        raise AssetError(f"{w}.extensions.{DRACO}: Draco cannot decode it: {str(exc).splitlines()[0][:120]}",
                         file=doc.file) from None
    ids = ext.get("attributes") or {}

    def get(name):
        if name == "indices":
            return np.asarray(mesh.faces, np.int64).reshape(-1)
        if name not in ids:
            return doc.accessor(attrs[name])
        arr = np.asarray(mesh.get_attribute_by_unique_id(ids[name])["data"])
        acc = doc.json["accessors"][attrs[name]]
        if acc.get("normalized") and arr.dtype.kind in "iu":   # same rule as GltfDocument.accessor
            arr = np.maximum(arr.astype(np.float32) / np.float32(np.iinfo(arr.dtype).max), -1.0)
        return arr
    return get


def _warn(doc, where: str, msg: str) -> None:
    warnings.warn(AssetWarning(f"file {doc.file}: {where}: {msg}"), stacklevel=4)


def _same(doc, where, what, a_i, ours, got, *, exact=False, scale=None) -> None:
    if got is None:
        raise AssetError(f"{where}.{what}: accessors[{a_i}] was not imported", file=doc.file)
    ours = np.asarray(ours)
    got = np.asarray(got)
    if ours.shape != got.shape:
        raise AssetError(f"{where}.{what}: vkmorph's decode of accessors[{a_i}] has shape {ours.shape}, the "
                         f"imported data {got.shape}", file=doc.file)
    if exact:
        bad = ours != got
    else:
        o, g = ours.astype(np.float64), got.astype(np.float64)
        s = np.abs(o) + np.abs(g) if scale is None else np.asarray(scale, np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~(np.abs(o - g) <= _ULPS * np.maximum(s, 1e-30) + 1e-30) & ~(np.isnan(o) & np.isnan(g))
    if bad.any():
        k = int(np.flatnonzero(bad.reshape(len(bad), -1).any(axis=1))[0])
        raise AssetError(f"{where}.{what}: vkmorph's decode of accessors[{a_i}] and the imported data differ "
                         f"at element {k}: {np.round(ours[k], 6).tolist()} vs {np.round(got[k], 6).tolist()}",
                         file=doc.file)


def _influences(doc, scene, prim, w, attrs, m_i, get) -> None:
    """Top-four influences as scene node indices: the file's JOINTS_n / WEIGHTS_n against what was imported."""
    from .importer import top4_influences

    if scene.file_nodes is None:
        return
    joints = scene.skins[prim.skin].joints
    # the file's skin this primitive got: one of its mesh's nodes' skins, the one whose joints it has (Assimp may
    # order them differently; the importer may append one joint for unweighted vertices)
    candidates = sorted({n["skin"] for n in doc.array("nodes") if n.get("mesh") == m_i and "skin" in n})
    file_joints = None
    for s_i in candidates:
        fj = [scene.file_nodes[j] for j in doc.json["skins"][s_i]["joints"]]
        if set(fj) <= set(joints.tolist()) and len(joints) - len(fj) in (0, 1):
            file_joints = fj
            break
    if file_joints is None:
        raise AssetError(f"{w}: the imported skin's joints {list(joints)[:8]} are those of none of the file's "
                         f"skins {candidates} of its mesh's nodes", file=doc.file)
    sets = sorted(k[8:] for k in attrs if k.startswith("WEIGHTS_"))
    V = prim.vertex_count
    vid, node, wt = [], [], []
    for s in sets:
        j = get(f"JOINTS_{s}").astype(np.int64)
        x = get(f"WEIGHTS_{s}").astype(np.float64)
        vid.append(np.repeat(np.arange(V), 4))
        node.append(np.asarray(file_joints, np.int64)[np.minimum(j, len(file_joints) - 1)].reshape(-1))
        wt.append(np.where(j < len(file_joints), x, 0.0).reshape(-1))
    ours_j, ours_w, _ = top4_influences(np.concatenate(vid), np.concatenate(node), np.concatenate(wt), V)
    got_j = np.asarray(joints, np.int64)[prim.vertices["joints"].astype(np.int64)]
    got_w = prim.vertices["weights"].astype(np.float64)
    weighted = ours_w.sum(axis=1) > 0     # unweighted vertices are imported rigid (importer._rigid_joint)
    oj, ow = _canonical_rows(ours_j.astype(np.int64), ours_w.astype(np.float64))
    gj, gw = _canonical_rows(got_j, got_w)
    bad = weighted & ((oj != gj).any(axis=1) | (np.abs(ow - gw) > 1e-5).any(axis=1))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        a_i = attrs.get("WEIGHTS_0")
        raise AssetError(f"{w}.WEIGHTS_0: vkmorph's decode of accessors[{a_i}] (with JOINTS_0) and the imported "
                         f"skin influences differ at vertex {k}: nodes {oj[k].tolist()} weights "
                         f"{np.round(ow[k], 5).tolist()} vs nodes {gj[k].tolist()} weights "
                         f"{np.round(gw[k], 5).tolist()}", file=doc.file)


def _canonical_rows(j: np.ndarray, w: np.ndarray):
    """Influence rows sorted by node, zero weights dropped to the end as node -1 (order-free comparison)."""
    j = np.where(w > 0, j, -1)
    order = np.argsort(np.where(j < 0, np.iinfo(np.int64).max, j), axis=1, kind="stable")
    return np.take_along_axis(j, order, 1), np.take_along_axis(np.where(w > 0, w, 0.0), order, 1)
