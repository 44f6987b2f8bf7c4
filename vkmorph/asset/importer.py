"""Assimp import (pyassimp over libassimp 5.2.5) into the vkmorph data model, then validation.

We take the raw ``aiScene*`` from pyassimp's library handle rather than ``pyassimp.load()``, whose eager
conversion crashes on skinned files (see ``assimp_structs``). Flags: triangulate and nothing that welds or
reorders vertices, so vertex counts and order equal the source file's accessors. Normals and tangents missing
from the file are computed here (without welding) because assimp 5.2.5 skips them for several glTF inputs.
"""

from __future__ import annotations

import ctypes
import os
import sys
import warnings
from pathlib import Path

import numpy as np

from ..errors import AssetError, UsageError, abridged
from . import scene_cache
from .geometry import area_weighted_normals, derived_normal_deltas, vertex_tangents
from .gltf import GltfDocument, external_uris_allowed
from .gltf_animation import gltf_animations
from .gltf_canonical import canonical_glb
from .gltf_check import apply_document, display_names
from .gltf_extensions import check_extensions, file_extensions
from .gltf_validate import validate_gltf
from .isolate import can_isolate, run_isolated
from .materials import Material, assimp_embedded_images, assimp_material
from .model import (
    SKINNED_VERTEX,
    STATIC_VERTEX,
    AnimationClip,
    MeshAsset,
    MeshPrimitiveAsset,
    MorphTargetAsset,
    MorphWeightChannel,
    NodeAsset,
    NodeChannel,
    SceneAsset,
    SkinAsset,
)
from .validate import validate_animations, validate_scene

_CALC_TANGENT_SPACE = 0x1   # only where the file has none (needs UVs; we fill in the rest)
_TRIANGULATE = 0x8
_VALIDATE_DATA_STRUCTURE = 0x400
# No aiProcess_GenNormals: it gives per-face normals where the last face wins on a shared vertex; missing
# normals come from asset.geometry's area-weighted vertex normals instead.
IMPORT_FLAGS = _CALC_TANGENT_SPACE | _TRIANGULATE | _VALIDATE_DATA_STRUCTURE
_SCENE_FLAGS_INCOMPLETE = 0x1
DATA_DIR = Path(__file__).resolve().parents[1] / "data"
ISOLATE_ENV = "VKMORPH_ISOLATE"
ISOLATE_DEFAULT = True


def default_scene_path() -> Path:
    return DATA_DIR / "default_scene.gltf"


A = None  # vkmorph.asset.assimp_structs, imported on first use: importing pyassimp loads libassimp


def _assimp():
    global A
    try:
        with warnings.catch_warnings():
            # pyassimp's helper has an invalid escape sequence: SyntaxWarning when first compiled under Python
            # 3.12 (DeprecationWarning before); it is pyassimp's, not the user's business
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            # pyassimp imports distutils.sysconfig: through setuptools' shim (a meta-path finder the .pth of
            # setuptools installs) that costs 0.2-0.35 s here, the stdlib's (Python < 3.12) 0.02-0.03 s, as with
            # SETUPTOOLS_USE_DISTUTILS=stdlib. Take the stdlib's for this one import and leave no trace: the
            # shim goes back and the stdlib distutils modules leave sys.modules (pyassimp keeps its function).
            shim = ([f for f in sys.meta_path if type(f).__module__ == "_distutils_hack"]
                    if sys.version_info < (3, 12) and "distutils" not in sys.modules else [])
            for f in shim:
                sys.meta_path.remove(f)
            try:
                from pyassimp import core
            finally:
                sys.meta_path[:0] = shim
                for name in [m for m in sys.modules if shim and (m == "distutils" or m.startswith("distutils."))]:
                    del sys.modules[name]

            from . import assimp_structs
    except Exception as exc:  # pyassimp raises its own error when libassimp.so is absent
        raise AssetError(f"libassimp not found ({type(exc).__name__}): `apt-get install libassimp5`") from None
    A = assimp_structs
    lib = core._assimp_lib
    lib.dll.aiGetErrorString.restype = ctypes.c_char_p
    return lib


def is_gltf(path: Path) -> bool:
    """glTF by name (.gltf/.glb) or by content (GLB magic, or a JSON object, which Assimp would also sniff)."""
    if path.suffix.lower() in (".gltf", ".glb"):
        return True
    with open(path, "rb") as fh:
        head = fh.read(64)
    return head[:4] == b"glTF" or head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{"


def isolation_default() -> bool:
    """``VKMORPH_ISOLATE=1|0`` in the environment, else on (see ``load_scene``)."""
    v = os.environ.get(ISOLATE_ENV, "")
    return v not in ("0", "false", "no") if v else ISOLATE_DEFAULT


def load_scene(path: str | Path | None = None, *, validate: bool = True, isolate: bool | None = None,
               allow_external_uris: bool | None = None, cache: bool = True) -> SceneAsset:
    """Import ``path`` (glTF/GLB primary, FBX and anything Assimp reads) and validate it.

    ``None`` loads the built-in default scene (red morph-only, blue skin-only, purple both; seed 003).
    Raises ``AssetError`` with file/mesh/primitive/target/index for any bad input; never half a scene.

    - glTF/GLB files are read and structurally validated by vkmorph first (``validate=False`` skips that, for
      tests); data vkmorph repairs on purpose is reported with an ``AssetWarning``.
    - ``isolate``: import in a child process so that a native crash in Assimp becomes
      "the importer crashed on FILE (signal SIGFPE)"; default from ``VKMORPH_ISOLATE``, else on.
    - ``allow_external_uris``: let buffer/image URIs leave the model's folder (absolute paths, ``..``);
      default from ``VKMORPH_ALLOW_EXTERNAL_URIS``, else refused.
    - ``cache``: a glTF file loaded before in this process, whose files (the model and every buffer and image
      file it names) are all unchanged, is not imported again (``asset/scene_cache.py``: a deep copy, its
      warnings re-issued; only successes are kept; ``VKMORPH_SCENE_CACHE=0`` turns it off).
    """
    path = default_scene_path() if path is None else path
    if not isinstance(path, (str, os.PathLike)):
        raise UsageError(f"load_scene needs a file path (str or os.PathLike), not {type(path).__name__}")
    path = Path(path)
    file = str(path)
    if not path.exists():
        raise AssetError("file not found", file=file)
    if not path.is_file():
        raise AssetError("not a regular file", file=file)
    try:
        gltf = is_gltf(path)
    except OSError as exc:
        raise AssetError(f"unreadable: {exc.strerror}", file=file) from None
    isolated = (isolate if isolate is not None else isolation_default()) and can_isolate()
    if not gltf:
        return run_isolated(import_with_assimp, file, file=file) if isolated else import_with_assimp(file)
    if not cache:
        return _load_gltf(path, file, validate, isolated, allow_external_uris)[0]
    key = scene_cache.options_key(path, validate, external_uris_allowed(allow_external_uris))
    hit = scene_cache.lookup(key)
    if hit is not None:
        return hit
    before = scene_cache.file_stat(path)   # taken before the file is read: a change during the import misses
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scene, doc = _load_gltf(path, file, validate, isolated, allow_external_uris)
    scene_cache.store(key, [(path, before), *doc.local_files], scene, caught)
    for w in caught:   # as they would have come without the recording
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return scene


def _load_gltf(path: Path, file: str, validate: bool, isolated: bool, allow_external_uris) -> tuple:
    """The glTF import: (scene, the GltfDocument it was read from)."""
    # glTF: vkmorph decodes the file (asset.gltf_canonical) and Assimp imports that decode; materials and clips
    # come from the file itself (clips: interpolation and CUBICSPLINE tangents, which Assimp drops)
    with np.errstate(all="ignore"):
        doc = GltfDocument(path, allow_external_uris=allow_external_uris)
        check_extensions(doc)
        if validate:
            validate_gltf(doc)
        canon = canonical_glb(doc)
    names = display_names(doc, canon)
    if isolated:
        scene = run_isolated(import_canonical_glb, canon.glb, file, names, file=file)
    else:
        scene = import_canonical_glb(canon.glb, file, names)
    with np.errstate(all="ignore"):
        apply_document(doc, canon, scene)
        scene.extensions = file_extensions(doc)
        _file_skins(doc, scene)
        scene.animations = gltf_animations(doc, scene)
        validate_animations(scene)
    return scene, doc


def _file_skins(doc, scene: SceneAsset) -> None:
    """The file's skins (``scene.file_skins``) and, per imported skin, the file's skin it was made from: the skin
    of a file node that instances it."""
    skins = [s if isinstance(s, dict) else {} for s in doc.array("skins")]
    scene.file_skins = [{"name": s["name"] if isinstance(s.get("name"), str) else f"skins[{i}]",
                         "joint_count": len(s.get("joints", []))} for i, s in enumerate(skins)]
    for k, node in enumerate(doc.array("nodes")):
        i = scene.file_nodes[k] if scene.file_nodes is not None and k < len(scene.file_nodes) else None
        s = node.get("skin") if isinstance(node, dict) else None
        if i is None or not isinstance(s, int) or scene.nodes[i].mesh is None:
            continue
        for p in scene.meshes[scene.nodes[i].mesh].primitives:
            if p.skin is not None:
                scene.skins[p.skin].file_skin = s


def import_with_assimp(file: str, animations: bool = True) -> SceneAsset:
    """Assimp import of a file (any format but glTF, which ``load_scene`` decodes first), conversion to the data
    model and ``validate_scene`` (what ``isolate`` runs in a child)."""
    lib = _assimp()
    return _finish(lib, lib.load(os.fsencode(file), IMPORT_FLAGS), file, animations=animations)


def import_canonical_glb(glb: bytes, file: str, names: dict) -> SceneAsset:
    """Assimp import of ``gltf_canonical``'s GLB (from memory: it never opens another file), with the file's
    names put back (``gltf_check.display_names``) before validation, so errors name the file's meshes."""
    lib = _assimp()
    ptr = lib.load_mem(glb, len(glb), IMPORT_FLAGS, b"glb")
    return _finish(lib, ptr, file, animations=False, names=names)


def _finish(lib, ptr, file: str, *, animations: bool, names: dict | None = None) -> SceneAsset:
    if not ptr:
        msg = (lib.dll.aiGetErrorString() or b"unknown error").decode(errors="replace").strip()
        raise AssetError(f"Assimp cannot import it: {msg.splitlines()[0] if msg else 'unknown error'}", file=file)
    try:
        raw = ptr.contents
        if raw.mFlags & _SCENE_FLAGS_INCOMPLETE or not raw.mRootNode:
            raise AssetError("incomplete scene (no meshes or truncated file)", file=file)
        with np.errstate(all="ignore"):  # NaN/inf from bad data are reported by validate_scene, not warned
            scene = _convert(raw, file, animations=animations, names=names)
    finally:
        lib.release(ptr)
    with np.errstate(all="ignore"):
        validate_scene(scene)
    return scene


def _materials(raw, file: str) -> tuple[list[Material], Material]:
    """Materials by Assimp material index, and the one for primitives without a material (not glTF: there
    ``gltf_check.apply_document`` gives each primitive the file's own material)."""
    embedded = assimp_embedded_images(raw)
    mats = [assimp_material(raw.mMaterials[i].contents, file, embedded, i) for i in range(raw.mNumMaterials)]
    return mats, Material.plain((0.8, 0.8, 0.8, 1.0))


# ---------------------------------------------------------------------------------------------- conversion
def _convert(raw, file: str, animations: bool = True, names: dict | None = None) -> SceneAsset:
    """``names`` (glTF): the canonical file's names -> the file's (``gltf_check.display_names``); bones are
    bound by the canonical names, which are unique."""
    nodes, node_meshes, roots = _nodes(raw.mRootNode)
    name_to_node: dict[str, int] = {}
    for i, n in enumerate(nodes):
        name_to_node.setdefault(n.name, i)
    shown = names["meshes"] if names else {}

    prims: list[MeshPrimitiveAsset] = []
    pending_skins: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    colors = [_base_color(raw.mMaterials[i].contents) for i in range(raw.mNumMaterials)]
    materials, default_material = _materials(raw, file) if names is None else ([], None)
    for m_i in range(raw.mNumMeshes):
        mesh = raw.mMeshes[m_i].contents
        prim = _primitive(mesh, m_i, file, name_to_node, pending_skins, shown)
        if mesh.mMaterialIndex < len(colors) and colors[mesh.mMaterialIndex] is not None:
            prim.base_color = colors[mesh.mMaterialIndex]
        prim.material = materials[mesh.mMaterialIndex] if mesh.mMaterialIndex < len(materials) \
            else default_material
        prims.append(prim)

    # One MeshAsset per distinct list of aiMeshes a node instances (a glTF mesh = its primitives).
    groups: dict[tuple[int, ...], int] = {}
    for idxs in node_meshes:
        if idxs and idxs not in groups:
            groups[idxs] = -1
    claimed = {i for g in groups for i in g}
    for m_i in range(raw.mNumMeshes):
        if m_i not in claimed:
            groups[(m_i,)] = -1
    meshes: list[MeshAsset] = []
    skins: list[SkinAsset] = []
    for key in sorted(groups, key=min):
        groups[key] = len(meshes)
        name = _mesh_group_name(prims, key)
        meshes.append(MeshAsset(name=name, primitives=[prims[i] for i in key]))
        # glTF binds a skin per node/mesh, assimp per aiMesh: one SkinAsset per mesh, shared by its primitives
        # when their joints and inverse binds agree.
        local: dict[bytes, int] = {}
        for i in key:
            if i in pending_skins:
                joints, ibm = _rigid_joint(prims[i], *pending_skins[i], node_meshes, key)
                k = joints.tobytes() + np.round(ibm, 6).tobytes()
                if k not in local:
                    local[k] = len(skins)
                    skins.append(SkinAsset(joints=joints, inverse_bind_matrices=ibm, name=f"skin_{len(skins)}"))
                prims[i].skin = local[k]
    for node, idxs in zip(nodes, node_meshes):
        if idxs:
            node.mesh = groups[idxs]
            mesh = meshes[node.mesh]
            node.skin = next((p.skin for p in mesh.primitives if p.skin is not None), None)
            first = next((p for p in mesh.primitives if p.morph_targets), None)
            if first is not None and first.default_weights is not None:
                node.default_weights = first.default_weights.copy()

    clips = [_animation(raw.mAnimations[a].contents, a, name_to_node, nodes, meshes, file)
             for a in range(raw.mNumAnimations)] if animations else []
    scene = SceneAsset(nodes=nodes, meshes=meshes, skins=skins, animations=clips, roots=roots, source=file)
    if names:
        scene.file_nodes = [None] * names["file_node_count"]
        for i, n in enumerate(nodes):
            k = names["node_index"].get(n.name)
            if k is not None and k < names["file_node_count"]:
                scene.file_nodes[k] = i
            n.name = names["nodes"].get(n.name, n.name)
        for m in meshes:
            m.name = _mesh_group_name(m.primitives, range(len(m.primitives)))
    return scene


_PTI_FLOAT = 1


def _base_color(material) -> tuple[float, float, float, float] | None:
    """glTF base colour factor ($clr.base), else the diffuse colour ($clr.diffuse), as linear RGBA."""
    found = {}
    for i in range(material.mNumProperties):
        prop = material.mProperties[i].contents
        key = A.string(prop.mKey)
        if key in ("$clr.base", "$clr.diffuse") and prop.mType == _PTI_FLOAT and prop.mDataLength >= 12:
            n = min(4, prop.mDataLength // 4)
            vals = ctypes.cast(prop.mData, ctypes.POINTER(ctypes.c_float * n)).contents
            rgba = list(vals) + [1.0] * (4 - n)
            if all(np.isfinite(rgba)):
                found[key] = tuple(float(x) for x in rgba)
    return found.get("$clr.base") or found.get("$clr.diffuse")


def _mesh_group_name(prims, key) -> str:
    name = prims[key[0]].name
    if len(key) > 1 and "-" in name:
        base, _, suffix = name.rpartition("-")
        if suffix.isdigit():
            return base
    return name


def _decompose(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = m[:3, 3].copy()
    basis = m[:3, :3]
    s = np.linalg.norm(basis, axis=0)
    if np.linalg.det(basis) < 0:
        s[0] = -s[0]
    r = basis / np.where(np.abs(s) > 1e-30, s, 1.0)
    return t, _quat_from_matrix(r), s


def _quat_from_matrix(r: np.ndarray) -> np.ndarray:
    """Rotation matrix -> unit quaternion (x, y, z, w)."""
    tr = np.trace(r)
    if tr > 0:
        s = np.sqrt(tr + 1.0) * 2
        q = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, 0.25 * s]
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = np.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2]) * 2
        q = [0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s, (r[2, 1] - r[1, 2]) / s]
    elif r[1, 1] > r[2, 2]:
        s = np.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2]) * 2
        q = [(r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s, (r[0, 2] - r[2, 0]) / s]
    else:
        s = np.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1]) * 2
        q = [(r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s, (r[1, 0] - r[0, 1]) / s]
    q = np.array(q)
    return q / np.linalg.norm(q)


def _nodes(root_ptr):
    nodes: list[NodeAsset] = []
    node_meshes: list[tuple[int, ...]] = []
    stack = [(root_ptr, None)]
    while stack:
        ptr, parent = stack.pop()
        n = ptr.contents
        t, r, s = _decompose(A.matrix(n.mTransformation))
        idx = len(nodes)
        nodes.append(NodeAsset(name=A.string(n.mName), translation=t, rotation=r, scale=s, parent=parent))
        node_meshes.append(tuple(n.mMeshes[k] for k in range(n.mNumMeshes)))
        if parent is not None:
            nodes[parent].children.append(idx)
        for c in reversed(range(n.mNumChildren)):
            stack.append((n.mChildren[c], idx))
    return nodes, node_meshes, [0]


def _indices(mesh, where) -> np.ndarray:
    nf = mesh.mNumFaces
    out = np.empty(nf * 3, dtype=np.uint32)
    faces = mesh.mFaces
    for f in range(nf):
        face = faces[f]
        if face.mNumIndices != 3:
            raise AssetError(f"face {f} has {face.mNumIndices} indices; only triangles are supported "
                             "(points/lines are not skinned meshes)", **where)
        ind = face.mIndices
        out[3 * f] = ind[0]
        out[3 * f + 1] = ind[1]
        out[3 * f + 2] = ind[2]
    return out


def _primitive(mesh, m_i, file, name_to_node, pending_skins, shown) -> MeshPrimitiveAsset:
    raw_name = A.string(mesh.mName) or f"mesh_{m_i}"
    name, source = shown.get(raw_name, (raw_name, None))
    where = {"file": file, "mesh": name, "primitive": m_i}
    V = mesh.mNumVertices
    if V == 0:
        raise AssetError("primitive has no vertices", **where)
    pos = A.vec3_array(mesh.mVertices, V)
    indices = _indices(mesh, where)
    if len(indices) and int(indices.max()) >= V:
        bad = int(np.flatnonzero(indices >= V)[0])
        raise AssetError(f"index out of range (vertex count {V})", index=bad, **where)
    file_normals = A.vec3_array(mesh.mNormals, V)
    computed_normals = area_weighted_normals(pos, indices)   # also the base of derived target normal deltas
    normals = file_normals if file_normals is not None else computed_normals.astype(np.float32)
    uv = _texcoords(mesh, 0, V)
    file_tangents = A.vec3_array(mesh.mTangents, V)
    if file_tangents is not None:
        bit = A.vec3_array(mesh.mBitangents, V)
        w = np.ones(V, np.float32)
        if bit is not None:
            w = np.where(np.sum(np.cross(normals, file_tangents) * bit, axis=1) < 0, -1.0, 1.0)
        tangents = np.concatenate([file_tangents, w[:, None]], axis=1).astype(np.float32)
    else:
        # glTF's (MikkTSpace's) bitangent points up the image, i.e. along -v in these coordinates: derive the
        # tangent frame from v-up coordinates so handedness w comes out as the spec's cross(N, T) * w
        uv_up = None if uv is None else np.stack([uv[:, 0], 1.0 - uv[:, 1]], axis=1)
        tangents = vertex_tangents(pos, normals, uv_up, indices)

    bones = A.bones_of(mesh)
    dtype = SKINNED_VERTEX if bones else STATIC_VERTEX
    verts = np.zeros(V, dtype=dtype)
    verts["position"] = pos
    verts["normal"] = normals
    verts["tangent"] = tangents
    if uv is not None:
        verts["texcoord"] = uv

    prim = MeshPrimitiveAsset(vertices=verts, indices=indices, name=name, source=source)
    if mesh.mColors[0]:  # COLOR_0 (assimp normalizes integer colours to float)
        rgba = np.frombuffer(ctypes.cast(mesh.mColors[0], ctypes.POINTER(ctypes.c_float * (4 * V))).contents,
                             np.float32).reshape(V, 4).copy()
        if not rgba[:, 3].any():
            rgba[:, 3] = 1.0  # assimp 5.2.5 leaves alpha 0 for three-component colours
        prim.colors = np.clip(np.nan_to_num(rgba, nan=1.0), 0.0, 1.0)
    prim.texcoord1 = _texcoords(mesh, 1, V)
    if bones:
        joints, ibm, prim.truncated_influences = _skin(bones, verts, name_to_node, where)
        pending_skins[m_i] = (joints, ibm)

    targets, weights = [], []
    for k in range(mesh.mNumAnimMeshes):
        am = mesh.mAnimMeshes[k].contents
        tname = A.string(am.mName)
        if am.mNumVertices != V:
            raise AssetError(f"position delta count {am.mNumVertices} != vertex count {V}",
                             target=tname or k, **where)
        apos = A.vec3_array(am.mVertices, V)
        if apos is None:
            raise AssetError("target has no positions", target=tname or k, **where)
        an = A.vec3_array(am.mNormals, V)
        at = A.vec3_array(am.mTangents, V)
        dpos = (apos - pos).astype(np.float32)
        derive = an is None or file_normals is None
        targets.append(MorphTargetAsset(
            name=tname or f"target_{k}",
            position_deltas=dpos,
            normal_deltas=derived_normal_deltas(pos, indices, dpos, computed_normals) if derive
            else (an - normals).astype(np.float32),
            tangent_deltas=(at - file_tangents).astype(np.float32) if at is not None and file_tangents is not None
            else None,
            generated_name=not tname, normals_derived=derive))
        weights.append(am.mWeight)
    prim.morph_targets = targets
    prim.default_weights = np.array(weights, np.float32) if targets else None
    return prim


def _texcoords(mesh, channel: int, V: int) -> np.ndarray | None:
    """UV set ``channel`` with v pointing down the image (glTF's and Vulkan's convention: v = 0 is the first
    row). Assimp hands out OpenGL's v-up coordinates (it flips glTF's), so v is flipped back here."""
    uv3 = A.vec3_array(mesh.mTextureCoords[channel], V)
    if uv3 is None:
        return None
    uv = np.ascontiguousarray(uv3[:, :2])
    uv[:, 1] = 1.0 - uv[:, 1]
    return uv


def _rigid_joint(prim, joints, ibm, node_meshes, key):
    """Vertices of a skinned primitive with no influence at all move rigidly with their mesh node: they get one
    extra joint, the (first) node instancing the mesh with an identity inverse bind, so their skin matrix
    inverse(mesh world) x mesh world x I is the identity."""
    rigid = prim.vertices["weights"].sum(axis=1) == 0
    prim.unweighted_vertices = int(rigid.sum())
    if not prim.unweighted_vertices:
        return joints, ibm
    node = next((n for n, idxs in enumerate(node_meshes) if idxs == key), 0)
    prim.vertices["joints"][rigid] = (len(joints), 0, 0, 0)
    prim.vertices["weights"][rigid] = (1.0, 0.0, 0.0, 0.0)
    return np.append(joints, node), np.concatenate([ibm, np.eye(4)[None]])


def _skin(bones, verts, name_to_node, where) -> tuple[np.ndarray, np.ndarray, int]:
    """Joint node indices, inverse binds and truncation count; writes top-4 influences into ``verts``."""
    V = len(verts)
    joints = []
    ibms = []
    vid_parts, bone_parts, w_parts = [], [], []
    for b_i, b in enumerate(bones):
        bname = A.string(b.mName)
        if bname not in name_to_node:
            raise AssetError(f"bone {abridged(bname)} names no node of the scene", index=b_i, **where)
        joints.append(name_to_node[bname])
        ibms.append(A.matrix(b.mOffsetMatrix))
        n = b.mNumWeights
        if n:
            arr = np.ctypeslib.as_array(ctypes.cast(b.mWeights, ctypes.POINTER(ctypes.c_uint8)), (n * 8,))
            rec = arr.view(np.dtype([("v", "<u4"), ("w", "<f4")]))
            vid_parts.append(rec["v"].astype(np.int64))
            w_parts.append(rec["w"].astype(np.float64))
            bone_parts.append(np.full(n, b_i, np.int64))
    vid = np.concatenate(vid_parts) if vid_parts else np.zeros(0, np.int64)
    bone = np.concatenate(bone_parts) if bone_parts else np.zeros(0, np.int64)
    w = np.concatenate(w_parts) if w_parts else np.zeros(0)
    if len(vid) and vid.max() >= V:
        raise AssetError(f"bone weight refers to vertex {int(vid.max())} beyond {V}", **where)
    joints_arr, weights_arr, truncated = top4_influences(vid, bone, w, V)
    verts["joints"] = joints_arr
    verts["weights"] = weights_arr
    return np.array(joints, np.int64), np.array(ibms, np.float64).reshape(-1, 4, 4), truncated


def top4_influences(vertex: np.ndarray, joint: np.ndarray, weight: np.ndarray, V: int):
    """Drop zero weights, keep the four largest per vertex (ties: lower joint first), renormalize to sum 1.

    Returns (joints (V,4) uint32, weights (V,4) float32, number of vertices that had more than four)."""
    keep = weight > 0
    vertex, joint, weight = vertex[keep], joint[keep], weight[keep]
    order = np.lexsort((joint, -weight, vertex))
    vertex, joint, weight = vertex[order], joint[order], weight[order]
    first = np.searchsorted(vertex, vertex, side="left")
    rank = np.arange(len(vertex)) - first
    counts = np.bincount(vertex, minlength=V)
    sel = rank < 4
    j = np.zeros((V, 4), np.uint32)
    w = np.zeros((V, 4), np.float64)
    j[vertex[sel], rank[sel]] = joint[sel]
    w[vertex[sel], rank[sel]] = weight[sel]
    s = w.sum(axis=1, keepdims=True)
    w = np.where(s > 0, w / np.where(s > 0, s, 1.0), 0.0)
    return j, w.astype(np.float32), int((counts > 4).sum())


def _animation(anim, a_i, name_to_node, nodes, meshes, file) -> AnimationClip:
    name = A.string(anim.mName) or f"clip_{a_i}"
    tps = anim.mTicksPerSecond if anim.mTicksPerSecond > 0 else 25.0  # assimp's documented default
    node_channels: list[NodeChannel] = []
    last = 0.0
    for ch in A.node_anims_of(anim):
        nname = A.string(ch.mNodeName)
        if nname not in name_to_node:
            raise AssetError(f"animation {abridged(name)} animates unknown node {abridged(nname)}", file=file)
        node = name_to_node[nname]
        for path, count, keys, width in (("translation", ch.mNumPositionKeys, ch.mPositionKeys, 3),
                                         ("rotation", ch.mNumRotationKeys, ch.mRotationKeys, 4),
                                         ("scale", ch.mNumScalingKeys, ch.mScalingKeys, 3)):
            if not count:
                continue
            times = np.array([keys[k].mTime for k in range(count)], np.float64) / tps
            if width == 4:
                vals = np.array([(keys[k].mValue.x, keys[k].mValue.y, keys[k].mValue.z, keys[k].mValue.w)
                                 for k in range(count)], np.float64)
            else:
                vals = np.array([(keys[k].mValue.x, keys[k].mValue.y, keys[k].mValue.z)
                                 for k in range(count)], np.float64)
            node_channels.append(NodeChannel(node=node, path=path, times=times, values=vals))
            last = max(last, float(times[-1]))
    morph_channels: list[MorphWeightChannel] = []
    for c in range(anim.mNumMorphMeshChannels):
        ch = anim.mMorphMeshChannels[c].contents
        nname = A.string(ch.mName)
        if nname not in name_to_node:
            raise AssetError(f"animation {abridged(name)} morphs unknown node {abridged(nname)}", file=file)
        node = name_to_node[nname]
        mesh = nodes[node].mesh
        T = meshes[mesh].target_count if mesh is not None else 0
        K = ch.mNumKeys
        times = np.empty(K, np.float64)
        vals = np.zeros((K, T), np.float64)
        for k in range(K):
            key = ch.mKeys[k]
            times[k] = key.mTime / tps
            for j in range(key.mNumValuesAndWeights):
                t = key.mValues[j]
                if t >= T:
                    raise AssetError(f"animation {abridged(name)} weights target {t} of node {abridged(nname)} "
                                     f"which has {T}", file=file, index=k)
                vals[k, t] = key.mWeights[j]
        if K:
            last = max(last, float(times[-1]))
        morph_channels.append(MorphWeightChannel(node=node, times=times, values=vals))
    duration = max(float(anim.mDuration) / tps, last)
    return AnimationClip(name=name, duration=duration, morph_channels=morph_channels, node_channels=node_channels)
