"""The CPU scene data model (seed 000; docs/architecture.md). Plain dataclasses over numpy arrays; no Vulkan here.

Vertex arrays are numpy structured arrays whose layout is exactly the vertex buffer's (tightly packed, 4-byte
fields), so the same bytes go to the GPU unchanged and the morph shader addresses fields in 32-bit words.
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass, field

import numpy as np

from .materials import Material

STATIC_VERTEX = np.dtype([("position", "<f4", 3), ("normal", "<f4", 3), ("tangent", "<f4", 4),
                          ("texcoord", "<f4", 2)])
SKINNED_VERTEX = np.dtype([("position", "<f4", 3), ("normal", "<f4", 3), ("tangent", "<f4", 4),
                           ("texcoord", "<f4", 2), ("joints", "<u4", 4), ("weights", "<f4", 4)])
assert STATIC_VERTEX.itemsize == 48 and SKINNED_VERTEX.itemsize == 80


def attribute_offsets_words(dtype: np.dtype) -> dict[str, int]:
    """Field offsets in 32-bit words (push constants of morph.comp, vertex-input descriptions)."""
    return {name: dtype.fields[name][1] // 4 for name in dtype.names}


@dataclass
class MorphTargetAsset:
    """One blend shape: per-vertex deltas in the base mesh's local space. Position deltas are required."""

    name: str
    position_deltas: np.ndarray               # (V, 3) float32
    normal_deltas: np.ndarray | None = None   # (V, 3) float32
    tangent_deltas: np.ndarray | None = None  # (V, 3) float32
    generated_name: bool = False              # True when the file had no name and one was made up
    normals_derived: bool = False             # True when the file had no normal deltas and the importer derived
                                              # them from the positions (asset.geometry.derived_normal_deltas)


@dataclass
class MeshPrimitiveAsset:
    vertices: np.ndarray                      # STATIC_VERTEX or SKINNED_VERTEX structured array, (V,)
    indices: np.ndarray                       # (I,) uint32, a triangle list
    morph_targets: list[MorphTargetAsset] = field(default_factory=list)
    default_weights: np.ndarray | None = None  # (T,) float32, from the file
    skin: int | None = None                   # index into SceneAsset.skins when skinned
    base_color: tuple[float, float, float, float] = (0.8, 0.8, 0.8, 1.0)
    name: str = ""
    truncated_influences: int = 0             # vertices that had more than four non-zero influences
    material: Material | None = None          # None: the renderer uses base_color as a plain dielectric
    colors: np.ndarray | None = None          # (V, 4) float32 linear RGBA (COLOR_0), never morphed
    texcoord1: np.ndarray | None = None       # (V, 2) float32 (TEXCOORD_1), never morphed
    source: tuple[int, int] | None = None     # glTF: (mesh, primitive) index of the file
    unweighted_vertices: int = 0              # vertices of a skinned primitive with no influence: imported rigid
                                              # with the mesh node (through an added joint, see importer)

    @property
    def vertex_count(self) -> int:
        return int(self.vertices.shape[0])

    @property
    def is_skinned(self) -> bool:
        return self.vertices.dtype == SKINNED_VERTEX

    @property
    def target_names(self) -> list[str]:
        return [t.name for t in self.morph_targets]


@dataclass
class MeshAsset:
    name: str
    primitives: list[MeshPrimitiveAsset]

    @property
    def target_count(self) -> int:
        return max((len(p.morph_targets) for p in self.primitives), default=0)


@dataclass
class SkinAsset:
    joints: np.ndarray                # (J,) int node indices
    inverse_bind_matrices: np.ndarray  # (J, 4, 4) float64, column vectors (M @ v)
    name: str = ""
    file_skin: int | None = None      # glTF: the index in the file's ``skins`` this one was made from


@dataclass
class NodeAsset:
    name: str
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotation: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 0.0, 1.0]))  # x, y, z, w
    scale: np.ndarray = field(default_factory=lambda: np.ones(3))
    children: list[int] = field(default_factory=list)
    parent: int | None = None
    mesh: int | None = None
    skin: int | None = None
    default_weights: np.ndarray | None = None


@dataclass
class MorphWeightChannel:
    node: int
    times: np.ndarray      # (K,) seconds, increasing
    values: np.ndarray     # (K, T), or (3K, T) for CUBICSPLINE (in-tangent, value, out-tangent per key)
    interpolation: str = "LINEAR"


@dataclass
class NodeChannel:
    node: int
    path: str              # "translation" | "rotation" | "scale"
    times: np.ndarray      # (K,) seconds
    values: np.ndarray     # (K, 3) or (K, 4) quaternion x,y,z,w; (3K, n) for CUBICSPLINE
    interpolation: str = "LINEAR"


@dataclass
class AnimationClip:
    name: str
    duration: float
    morph_channels: list[MorphWeightChannel] = field(default_factory=list)
    node_channels: list[NodeChannel] = field(default_factory=list)


@dataclass
class SceneAsset:
    nodes: list[NodeAsset]
    meshes: list[MeshAsset]
    skins: list[SkinAsset]
    animations: list[AnimationClip]
    roots: list[int]
    source: str = "<memory>"
    # glTF: for each node index of the FILE, the index of that node in ``nodes`` (None where Assimp has no such
    # node); None for other formats. The importer's node order differs from the file's (Assimp adds a root, and
    # walks the hierarchy depth first).
    file_nodes: list[int | None] | None = None
    # glTF: every extension the file declares, as gltf_extensions.file_extensions gives them (name, required,
    # status: supported | warned, what vkmorph does with it); None for other formats
    extensions: list[dict] | None = None
    # glTF: the file's own ``skins`` (name, joint_count), which ``vkmorph info`` counts; ``skins`` above has one
    # per (mesh, skin) pair (Assimp binds a skin per mesh); None for other formats
    file_skins: list[dict] | None = None

    @property
    def primitives(self) -> list[MeshPrimitiveAsset]:
        """All primitives in import order (mesh order, then primitive order)."""
        return [p for m in self.meshes for p in m.primitives]

    def morph_node_names(self) -> list[str]:
        """Names of the nodes whose mesh has morph targets, in the file's node order (glTF; else the importer's),
        each once: what a message about an unknown node lists."""
        order = range(len(self.nodes))
        if self.file_nodes is not None:
            order = [i for i in self.file_nodes if i is not None]
        names = [self.nodes[i].name for i in order
                 if self.nodes[i].mesh is not None and self.meshes[self.nodes[i].mesh].target_count]
        return list(dict.fromkeys(names))

    def morph_nodes_hint(self) -> str:
        """What a message about an unknown node or a node without targets says next."""
        from ..errors import name_list

        names = self.morph_node_names()
        return f"the nodes with morph targets are {name_list(names)}" if names else "no node has morph targets"

    def node_index(self, name: str) -> int:
        for i, n in enumerate(self.nodes):
            if n.name == name:
                return i
        raise KeyError(name)

    def clip(self, key: str | int | AnimationClip) -> AnimationClip:
        """A clip by name or index (as a string too, for CLIs), or one of this scene's clips itself."""
        from ..errors import UsageError, abridged, name_list

        if isinstance(key, AnimationClip):
            if any(a is key for a in self.animations):
                return key
            raise UsageError(f"clip {abridged(key.name)} is not one of this file's animations (pass its name)")
        names = [a.name for a in self.animations]
        if isinstance(key, str) and re.fullmatch(r"-?[0-9]+", key) and key not in names:     # not "--1", "²"
            key = int(key)
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            if 0 <= key < len(self.animations):
                return self.animations[int(key)]
        elif isinstance(key, str) and key in names:
            return self.animations[names.index(key)]
        raise UsageError(f"unknown clip {abridged(key)}; the file has {name_list(names) if names else 'no animations'}")
