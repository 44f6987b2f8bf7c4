"""Shader interfaces, declared once (the model is pygfx's ``renderers/wgpu/shader/bindings.py``).

Each ``ShaderInterface`` below is the single declaration of what a pipeline's shaders and its Python side share:
descriptor bindings by name (set, binding number, descriptor kind, stages, the element of a storage buffer as a
GLSL type or a numpy struct dtype), push constants (a numpy dtype), the compute local size, vertex inputs (the
vertex dtypes of ``asset/model.py``) and named constants. Each ``StageLink`` is the single declaration of the
varyings between a pipeline's stages (location, GLSL type, note; fragment outputs too). From them

* ``tools/compile_shaders.py`` writes ``glsl/gen/<name>.glsl`` (and ``<link>_out.glsl`` / ``<link>_in.glsl``),
  the GLSL declarations the shaders ``#include``
  (``--check`` fails when one is stale, as for SPIR-V, and when a generated layout disagrees with its dtype);
* ``gpu/pipeline.py`` builds descriptor set layouts, pipeline layouts, push-constant ranges, descriptor writes
  (by binding NAME, never list position) and vertex-input descriptions.

Naming rule: a Python name in snake_case becomes camelCase in GLSL (``first_vertex`` -> ``firstVertex``,
``base_vertices`` -> ``baseVertices``), its block name CamelCase (``BaseVertices``); vertex attribute ``normal``
becomes ``inNormal``. ``member``/``block``/``instance`` override the derived GLSL names where a shader's code
reads them differently. A numpy field of 16 float32 is a column-major ``mat4``.

This module imports numpy only (no Vulkan), so the shader tool runs without a Vulkan loader.
See docs/architecture.md, "Shader interfaces", for adding a binding or a vertex attribute step by step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..asset.model import SKINNED_VERTEX, STATIC_VERTEX
from ..morph.gpu_data import BLOCK_ENTRY, CHUNK, CHUNK_HEADER

# descriptor kinds
STORAGE, UNIFORM, SAMPLER = "storage", "uniform", "sampler"
UNIFORM_ARRAY = "uniform_array"   # a dynamic uniform buffer holding one sized array (Binding.count elements)
STORAGE_DYNAMIC = "storage_dynamic"   # a storage buffer whose offset is given at bind time (a dynamic offset)
TEXEL = "texel"   # a uniform texel buffer (a VkBufferView, memory.TexelView), element: samplerBuffer / usamplerBuffer
# shader stages
COMPUTE, VERTEX, FRAGMENT = "compute", "vertex", "fragment"


def camel(name: str) -> str:
    """``first_vertex`` -> ``firstVertex``."""
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def pascal(name: str) -> str:
    """``base_vertices`` -> ``BaseVertices``."""
    c = camel(name)
    return c[:1].upper() + c[1:]


_SCALARS = {"f": "float", "u": "uint", "i": "int"}
_VECTOR_PREFIX = {"f": "", "u": "u", "i": "i"}


def glsl_type(sub: np.dtype) -> str:
    """GLSL type of one numpy field (4-byte scalars, 2-4 vectors, 16 floats = mat4)."""
    kind, shape = sub.base.kind, sub.shape
    if sub.base.itemsize != 4 or kind not in _SCALARS:
        raise ValueError(f"field type {sub} has no GLSL equivalent (4-byte float/uint/int only)")
    n = int(np.prod(shape)) if shape else 1
    if n == 1:
        return _SCALARS[kind]
    if kind == "f" and n == 16:
        return "mat4"
    if 2 <= n <= 4 and len(shape) == 1:
        return f"{_VECTOR_PREFIX[kind]}vec{n}"
    raise ValueError(f"field shape {shape} has no GLSL equivalent")


@dataclass(frozen=True)
class Struct:
    """A GLSL struct (storage-buffer element) or block body (uniform / push constants) whose truth is a dtype."""

    name: str                      # GLSL struct / block name
    dtype: np.dtype
    source: str = ""               # where the dtype lives, for the generated comment
    notes: tuple[tuple[str, str], ...] = ()   # (field, comment) pairs copied into the generated GLSL

    def fields(self) -> list[tuple[str, str, int]]:
        """(GLSL type, GLSL name, byte offset) per field, in order."""
        return [(glsl_type(self.dtype.fields[n][0]), camel(n), self.dtype.fields[n][1]) for n in self.dtype.names]

    def body(self, indent: str = "    ") -> list[str]:
        notes = dict(self.notes)
        lines = []
        for name, (typ, gname, _) in zip(self.dtype.names, self.fields()):
            line = f"{indent}{typ} {gname};"
            if name in notes:
                line = f"{line:<28}// {notes[name]}"
            lines.append(line)
        return lines


@dataclass(frozen=True)
class Binding:
    """One descriptor. ``element``: storage -> GLSL type or Struct of the array element; uniform -> the Struct
    that is the block; sampler, texel -> the GLSL sampler type."""

    name: str
    binding: int
    kind: str
    stages: tuple[str, ...]
    element: str | Struct
    access: str = ""              # "readonly" | "writeonly" | "" (storage only)
    set: int = 0
    member: str | None = None     # GLSL array name in the block (default camel(name))
    block: str | None = None      # GLSL block name (default pascal(name), or the Struct's name for uniforms)
    instance: str | None = None   # GLSL instance name; members are then read as instance.member
    count: int = 0                # UNIFORM_ARRAY: elements of the array (its std140 block is count x 16 B or more)
    # STORAGE of float: also declared at the same binding as an array of Pair (two vertices' xyz as 3 64-bit
    # words, 24 bytes under the scalar layout), block <block>Pairs, instance <instance>p, member `pairs`: the
    # shader enables GL_ARB_gpu_shader_int64 and GL_EXT_scalar_block_layout before the header (bake_wide.comp)
    pairs: bool = False

    @property
    def glsl_name(self) -> str:
        return self.member or camel(self.name)

    @property
    def block_name(self) -> str:
        if self.block:
            return self.block
        if self.kind == UNIFORM and isinstance(self.element, Struct):
            return self.element.name
        return pascal(self.name)


@dataclass(frozen=True)
class PushConstants:
    struct: Struct
    stages: tuple[str, ...]
    instance: str = "pc"

    @property
    def size(self) -> int:
        return self.struct.dtype.itemsize


@dataclass(frozen=True)
class VertexAttribute:
    location: int
    name: str          # the dtype field
    glsl: str          # GLSL type
    vk_format: str     # VkFormat enumerant name (resolved in gpu/pipeline.py)
    offset: int        # bytes


_FORMAT_SUFFIX = {"f": "SFLOAT", "u": "UINT", "i": "SINT"}


def vertex_attributes(dtype: np.dtype, first_location: int = 0) -> list[VertexAttribute]:
    """One attribute per field of a vertex dtype, location = first_location + field order (``inPosition`` at
    location 0, ...). 4-byte fields are read as they are (float / uint / int); a ``u1`` field is
    unsigned-normalized (``("color", "u1", 4)`` -> R8G8B8A8_UNORM, a vec4 in [0, 1] in GLSL)."""
    out = []
    for loc, name in enumerate(dtype.names, first_location):
        sub, off = dtype.fields[name][:2]
        n = int(np.prod(sub.shape)) if sub.shape else 1
        if sub.base.kind == "u" and sub.base.itemsize == 1 and 1 <= n <= 4:
            fmt = "VK_FORMAT_" + "".join(f"{c}8" for c in "RGBA"[:n]) + "_UNORM"
            glsl = "float" if n == 1 else f"vec{n}"
        else:
            fmt = "VK_FORMAT_" + "".join(f"{c}32" for c in "RGBA"[:n]) + "_" + _FORMAT_SUFFIX[sub.base.kind]
            glsl = glsl_type(sub)
        out.append(VertexAttribute(loc, name, glsl, fmt, off))
    return out


@dataclass(frozen=True)
class ShaderInterface:
    """Everything one pipeline's shaders share with Python. ``name`` is the generated header glsl/gen/<name>.glsl."""

    name: str
    shaders: tuple[str, ...]                 # glsl/ files that #include "gen/<name>.glsl"
    doc: str = ""
    bindings: tuple[Binding, ...] = ()
    push: PushConstants | None = None
    local_size: int | None = None            # compute: local_size_x
    # compute: the specialization constant id that overrides local_size_x at pipeline creation (None: fixed)
    local_size_id: int | None = None
    vertex: np.dtype | None = None           # vertex inputs: one attribute per field
    vertex_location: int = 0                 # location of the first field (a second vertex binding)
    constants: tuple[tuple[str, str, float | int], ...] = ()   # (GLSL type, NAME, value)

    def __getitem__(self, name: str) -> Binding:
        for b in self.bindings:
            if b.name == name:
                return b
        raise KeyError(f"interface {self.name!r} has no binding {name!r}; it has {[b.name for b in self.bindings]}")

    @property
    def extensions(self) -> tuple[str, ...]:
        """GLSL extensions the header needs, which each of its shaders enables before including it."""
        return ("GL_ARB_gpu_shader_int64", "GL_EXT_scalar_block_layout") if any(b.pairs for b in self.bindings) \
            else ()

    def constant(self, name: str) -> float | int:
        for _, n, v in self.constants:
            if n == name:
                return v
        raise KeyError(name)

    @property
    def stage(self) -> str:
        return COMPUTE if self.local_size is not None else VERTEX

    @property
    def shader(self) -> str:
        """The one shader of a compute interface."""
        if len(self.shaders) != 1:
            raise ValueError(f"interface {self.name!r} is used by {self.shaders}, not one shader")
        return self.shaders[0]

    def sets(self) -> list[int]:
        return sorted({b.set for b in self.bindings})

    def set_bindings(self, set_index: int) -> list[Binding]:
        return [b for b in self.bindings if b.set == set_index]

    def structs(self) -> list[Struct]:
        """The GLSL structs this interface declares (storage-buffer elements), first use order, no repeats."""
        seen: dict[str, Struct] = {}
        for b in self.bindings:
            if b.kind == STORAGE and isinstance(b.element, Struct):
                seen.setdefault(b.element.name, b.element)
        return list(seen.values())

    def groups(self, count: int) -> int:
        """Work groups covering ``count`` invocations."""
        return (count + self.local_size - 1) // self.local_size

    def vertex_attributes(self) -> list[VertexAttribute]:
        return vertex_attributes(self.vertex, self.vertex_location) if self.vertex is not None else []


# ---------------------------------------------------------------------------------------------------- structs
_GPU_DATA = "numpy vkmorph.morph.gpu_data"
CHUNK_STRUCT = Struct("Chunk", CHUNK_HEADER, f"{_GPU_DATA}.CHUNK_HEADER", (
    ("first_vertex", "global index of the chunk's vertex 0"), ("first_entry", "its block-table range"),
    ("out_vec4", "output vec4 of vertex 0; vertex stride in vec4s below"),
    ("slot_words", "per-vertex kernel: weight slot of target 0, target mask words per vertex")))
BLOCK_STRUCT = Struct("Block", BLOCK_ENTRY, f"{_GPU_DATA}.BLOCK_ENTRY", (
    ("slot", "weight slot"), ("first_delta", "index of the block's first delta")))

# first_instance / instance_slots / instance_vec4: crowds (MorphRuntime(instances=N)): workgroup row y of a
# dispatch morphs instance first_instance + y, whose weight slots start at (first_instance + y) * instance_slots
# and whose output at (first_instance + y - output_instance) * instance_vec4 vec4s of the output binding (bound
# per group of instances that fits maxStorageBufferRange, from instance output_instance on); one instance: zeros.
# from_list != 0: row y morphs instance instance_list[first_instance + y] instead (scattered changed instances in
# one dispatch: the list of the frame's changed instances, ascending, written with the weights).
MORPH_PUSH = np.dtype([("first_chunk", "<u4"), ("first_instance", "<u4"), ("instance_slots", "<u4"),
                       ("instance_vec4", "<u4"), ("output_instance", "<u4"), ("from_list", "<u4")])
NORMALS_PUSH = np.dtype([("first_vertex", "<u4"), ("vertex_count", "<u4")])
SKIN_CAPTURE_PUSH = np.dtype([(n, "<u4") for n in ("vertex_count", "stride_words", "position_offset",
                                                   "normal_offset", "tangent_offset", "joints_offset",
                                                   "weights_offset")])
# crowd compute skinning: per dispatch one primitive, workgroup row y = instance first_instance + y
CROWD_SKIN_PUSH = np.dtype([(n, "<u4") for n in (
    "vertex_count", "stride_words", "position_offset", "normal_offset", "tangent_offset", "texcoord_offset",
    "joints_offset", "weights_offset", "src_first_word", "src_instance_words", "palette_first", "palette_instance",
    "dst_first_vec4", "dst_instance_vec4", "first_instance", "motion", "prev_first_vec4")])
COPY_PUSH = np.dtype([("count", "<u4"), ("xor_mask", "<u4")])
FRAME_UBO = np.dtype([("view_proj", "<f4", 16), ("light_view_proj", "<f4", 16), ("light_dir", "<f4", 4),
                      ("camera_pos", "<f4", 4), ("sky", "<f4", 4), ("ground", "<f4", 4), ("viewport", "<f4", 4),
                      ("outline_color", "<f4", 4)])
ITEM_PUSH = np.dtype([("model", "<f4", 16), ("pass", "<i4"), ("heat_joint", "<i4"), ("instance_matrices", "<i4"),
                      ("matrix_first", "<i4"), ("instance_vec4", "<i4")])
# crowd_pull.vert / crowd_skin_pull.vert: a crowd primitive's per-instance vertices read from set 1's crowd_vertices
# (instance i's range at i x instance_vec4 vec4s: the compute-skinned output's STATIC_VERTEX vertices, or the morph
# output's own range, STATIC_VERTEX (rigid) / SKINNED_VERTEX (vertex-shader skinned), whose instance stride
# ``MorphBatch.instance_stride`` is 256-byte aligned, not a whole number of vertices), so one instanced draw
# covers a run of instances
PULLED_VERTEX_VEC4 = STATIC_VERTEX.itemsize // 16
PULLED_SKINNED_VEC4 = SKINNED_VERTEX.itemsize // 16
MATERIAL_UBO = np.dtype([("base_color", "<f4", 4), ("emissive", "<f4", 4), ("params", "<f4", 4),
                         ("modes", "<i4", 4), ("uv_xform0", "<f4", 16), ("uv_xform1", "<f4", 16),
                         ("uv_xform2", "<f4", 16)])
UV_XFORM_FIELDS = ("uv_xform0", "uv_xform1", "uv_xform2")   # 12 vec4 columns: rows 2i, 2i + 1 are slot i's
# binding 1 of every graphics pipeline: per-vertex data that is never morphed (COLOR_0, TEXCOORD_1)
EXTRA_VERTEX = np.dtype([("color", "<f4", 4), ("texcoord1", "<f4", 2)])
EXTRA_VERTEX_LOCATION = 6    # after the skinned vertex's six attributes

# ---------------------------------------------------------------------------------------------------- compute
NORMALIZE_EPSILON = 1e-12   # squared length; same constant in vkmorph/morph/reference.py (a test compares)


def _morph(name: str, shader: str, compact: bool, vertex_lists: bool) -> ShaderInterface:
    """The morph kernels (layout: morph/gpu_data.py build_chunked_batch; code: glsl/morph_common.glsl)."""
    c = (COMPUTE,)
    delta = (Binding("deltas", 4, STORAGE, c, "uvec4", "readonly", member="deltaA",
                     block="DeltaA"),                      # (p.xy)(p.z n.x)(n.yz)(t.xy) snorm16 pairs
             Binding("deltas_tz", 5, STORAGE, c, "uint", "readonly", member="deltaB", block="DeltaB"),
             Binding("scales", 8, STORAGE, c, "vec4", "readonly")) if compact else (
             Binding("deltas", 4, STORAGE, c, "vec4", "readonly", member="deltaA",
                     block="DeltaA"),                      # 2 per delta: p.xyz n.x | n.yz t.xy
             Binding("deltas_tz", 5, STORAGE, c, "float", "readonly", member="deltaB", block="DeltaB"))
    blocks = (Binding("table", 1, STORAGE, c, BLOCK_STRUCT, "readonly"),
              Binding("masks", 2, STORAGE, c, "uvec4", "readonly"))       # 2 per block: 256 vertex bits
    weights = Binding("weights", 3, STORAGE, c, "float", "readonly")
    if vertex_lists:   # the CPU-device kernel: vertex-major deltas; per vertex its first delta + target bitmask
        blocks = (Binding("vertex_records", 1, STORAGE, c, "uint", "readonly"),
                  Binding("active_bits", 2, STORAGE, c, "uint", "readonly"))   # bit s: weight slot s non-zero
        if compact:    # weight x (position, normal, tangent scale, 1) per slot, multiplied on the CPU per frame
            weights = Binding("weights", 3, STORAGE, c, "vec4", "readonly")
            delta = delta[:2]
    return ShaderInterface(
        name, (shader,), f"chunked morph pass ({'snorm16' if compact else 'full'} deltas)",
        bindings=(Binding("chunks", 0, STORAGE, c, CHUNK_STRUCT, "readonly"),) + blocks + (
                  weights,
                  Binding("base", 6, STORAGE, c, "vec4", "readonly"),         # 3 per vertex: its first 48 bytes
                  Binding("output", 7, STORAGE, c, "vec4", "writeonly", member="outVec4")) + delta + (
                  Binding("instance_list", 9, STORAGE, c, "uint", "readonly"),),   # crowds: changed instances
        push=PushConstants(Struct("Push", MORPH_PUSH, notes=(
            ("first_chunk", "chunk of workgroup 0 of this dispatch"),
            ("first_instance", "instance of workgroup row 0 (gl_WorkGroupID.y) of this dispatch"),
            ("instance_slots", "weight slots (and active bits) per instance, a multiple of 32"),
            ("instance_vec4", "output vec4s per instance"),
            ("output_instance", "instance at vec4 0 of the output binding"),
            ("from_list", "non-zero: row y morphs instance instanceList[first_instance + y]"))), c),
        local_size=CHUNK,
        constants=(("float", "NORMALIZE_EPSILON", NORMALIZE_EPSILON), ("uint", "CHUNK", CHUNK)))


MORPH = _morph("morph", "morph.comp", False, False)
MORPH_COMPACT = _morph("morph_compact", "morph_compact.comp", True, False)
MORPH_VERTEX = _morph("morph_vertex", "morph_vertex.comp", False, True)
MORPH_COMPACT_VERTEX = _morph("morph_compact_vertex", "morph_compact_vertex.comp", True, True)

NORMALS = ShaderInterface(
    "normals", ("normals.comp",), "optional per-frame normals from the morphed positions and the triangles",
    bindings=(Binding("out_words", 0, STORAGE, (COMPUTE,), "float", block="Output"),
              Binding("out_word", 1, STORAGE, (COMPUTE,), "uint", "readonly", block="OutputBase"),
              Binding("face_vertices", 2, STORAGE, (COMPUTE,), "uint", "readonly"),
              Binding("face_offsets", 3, STORAGE, (COMPUTE,), "uint", "readonly"),
              Binding("vertex_faces", 4, STORAGE, (COMPUTE,), "uint", "readonly")),
    push=PushConstants(Struct("Push", NORMALS_PUSH, notes=(
        ("first_vertex", "global index (the morph batch's) of the first vertex of this dispatch"),)), (COMPUTE,)),
    local_size=64,
    constants=(("float", "NORMALIZE_EPSILON", NORMALIZE_EPSILON), ("float", "AREA_EPSILON", 1e-24)))

SKIN_CAPTURE = ShaderInterface(
    "skin_capture", ("skin.comp",), "skinning capture over a vertex buffer read as raw words",
    bindings=(Binding("vertices", 0, STORAGE, (COMPUTE,), "uint", "readonly", member="words", instance="src"),
              Binding("palette", 1, STORAGE, (COMPUTE,), "mat4", "readonly", member="joints", instance="palette"),
              Binding("output", 2, STORAGE, (COMPUTE,), "vec4", "writeonly", member="values", block="Out",
                      instance="dst")),
    push=PushConstants(Struct("Push", SKIN_CAPTURE_PUSH, notes=(("stride_words", "offsets in 32-bit words"),)),
                       (COMPUTE,)),
    local_size=64)

CROWD_SKIN = ShaderInterface(
    "crowd_skin", ("crowd_skin.comp",), "crowd compute skinning: skin once per frame, draw as static vertices",
    bindings=(Binding("vertices", 0, STORAGE, (COMPUTE,), "uint", "readonly", member="words", instance="src"),
              Binding("palettes", 1, STORAGE, (COMPUTE,), "mat4", "readonly", member="joints", instance="palette"),
              Binding("output", 2, STORAGE, (COMPUTE,), "vec4", "writeonly", member="values", block="Out",
                      instance="dst"),
              # motion vectors (CrowdSkinning(motion_vectors=True)): the skinned vertices the previous frame drew
              # (the previous slot's output; this slot's own with one slot, read before it is rewritten), the
              # previous positions written here, and per instance where they come from (1: last, 0: current)
              Binding("last", 3, STORAGE, (COMPUTE,), "vec4", "readonly", member="values", block="Last",
                      instance="last"),
              Binding("previous", 4, STORAGE, (COMPUTE,), "vec4", "writeonly", member="values", block="Previous",
                      instance="prev"),
              Binding("history", 5, STORAGE, (COMPUTE,), "uint", "readonly", member="fromLast", block="History")),
    push=PushConstants(Struct("Push", CROWD_SKIN_PUSH, notes=(
        ("stride_words", "source vertex stride and attribute offsets in 32-bit words"),
        ("src_instance_words", "words between instances' source vertices (0: shared by every instance)"),
        ("palette_instance", "mat4s between instances' palettes"),
        ("dst_instance_vec4", "vec4s between instances' outputs (3 per vertex: the STATIC_VERTEX layout)"),
        ("motion", "1: write previous positions (vec4 per vertex at prev_first_vec4 + instance x vertex_count)"))),
        (COMPUTE,)),
    local_size=64)

# crowd_anim.comp (vkmorph/render/crowd_anim.py): clips sampled on the GPU for a crowd, one thread per instance:
# channels -> local TRS -> world matrices (parents first) -> palettes, so the CPU writes per frame one time
CROWD_ANIM_PUSH = np.dtype([("time", "<f4")] + [(n, "<u4") for n in (
    "first_instance", "instance_count", "node_count", "entry_count", "palette_width")])
CROWD_ANIM_MAX_NODES = 128    # private world-matrix array per thread (a scene with more nodes is refused)
# the pass's workgroup size is a specialization constant (constant_id CROWD_ANIM_LOCAL_SIZE_ID, default 64):
# render.crowd_anim.ClipPosePass(local_size=) makes smaller workgroups where a few poses must spread over the
# device's threads (the bake's batch of 64 frames on lavapipe, which runs a workgroup on one thread)
CROWD_ANIM_LOCAL_SIZE_ID = 0
CROWD_ANIM = ShaderInterface(
    "crowd_anim", ("crowd_anim.comp",), "crowd animation: clip channels sampled per instance into palettes",
    bindings=(Binding("channels", 0, STORAGE, (COMPUTE,), "uvec4", "readonly"),     # mode, first time, keys, value
              Binding("times", 1, STORAGE, (COMPUTE,), "float", "readonly"),
              Binding("values", 2, STORAGE, (COMPUTE,), "vec4", "readonly"),
              Binding("node_channels", 3, STORAGE, (COMPUTE,), "uvec4", "readonly"),  # per (clip, node): T R S + 1
              Binding("nodes", 4, STORAGE, (COMPUTE,), "vec4", "readonly"),         # rest T (w: parent), R, S
              Binding("entries", 5, STORAGE, (COMPUTE,), "uvec4", "readonly"),      # node, inverse bind, column, rel.
              Binding("inverse_binds", 6, STORAGE, (COMPUTE,), "mat4", "readonly"),
              Binding("instances", 7, STORAGE, (COMPUTE,), "uvec4", "readonly", member="params",
                      block="InstanceParams"),                                     # clip, phase, speed, duration
              Binding("transforms", 8, STORAGE, (COMPUTE,), "mat4", "readonly"),
              Binding("palettes", 9, STORAGE, (COMPUTE,), "mat4", "writeonly", member="joints", block="Out",
                      instance="dst")),
    push=PushConstants(Struct("Push", CROWD_ANIM_PUSH, notes=(
        ("time", "the crowd's clock (s): instance time = phase + speed x time, wrapped by its clip's duration"),
        ("entry_count", "palette entries (joint of a distinct skin) per instance"),
        ("palette_width", "mat4s between instances' palettes"))), (COMPUTE,)),
    local_size=64, local_size_id=CROWD_ANIM_LOCAL_SIZE_ID,
    constants=(("uint", "MAX_NODES", CROWD_ANIM_MAX_NODES),))

COPY = ShaderInterface(
    "copy", ("copy.comp",), "coalesced uvec4 copy (round-trip test kernel, bandwidth ceiling of the benchmark)",
    bindings=(Binding("src", 0, STORAGE, (COMPUTE,), "uvec4", "readonly"),
              Binding("dst", 1, STORAGE, (COMPUTE,), "uvec4", "writeonly")),
    push=PushConstants(Struct("Push", COPY_PUSH, notes=(("count", "number of uvec4 elements"),
                                                        ("xor_mask", "0 for a pure copy; tests prove the kernel ran"))),
                       (COMPUTE,)),
    local_size=256)

# bake.comp (vkmorph/bake.py): per (instance, frame) of a batch, its vertices from their source (the morph output
# or the rest vertices) through the frame's palette or world matrix into three planes (positions, normals,
# tangents; float32 x 3 each) laid out as the Bake's arrays, so the readback lands with one copy per plane
BAKE_ITEM = np.dtype([(n, "<u4") for n in ("source_word", "stride_words", "vertex_count", "out_vertex", "mode",
                                            "matrix", "pad0", "pad1")])
BAKE_PUSH = np.dtype([(n, "<u4") for n in ("item_first", "frame_first", "frame_count", "frames_per_group",
                                            "matrices_per_frame", "frame_vertices", "out_shift", "matrix_frame")])
BAKE_COPY, BAKE_RIGID, BAKE_SKINNED = 0, 1, 2       # BAKE_ITEM.mode
# the bake kernel's specialization constants: BAKE_MODE (constant_id BAKE_MODE_ID), one of the modes (a pipeline
# for the items of that mode only: the other modes' code folds away) or BAKE_ANY (each item's own, the default);
# BAKE_SKIP_ZERO (constant_id BAKE_SKIP_ZERO_ID, a bool: 1 skips the reads of zero-weight joints, the default)
BAKE_ANY, BAKE_MODE_ID, BAKE_SKIP_ZERO_ID = 3, 0, 1
BAKE = ShaderInterface(
    "bake", ("bake.comp",), "bake: vertices of (instance, frame) through palettes / world matrices into planes",
    bindings=(Binding("source", 0, STORAGE, (COMPUTE,), "uvec4", "readonly", member="quads", instance="src"),
              Binding("items", 1, STORAGE, (COMPUTE,), Struct("BakeItem", BAKE_ITEM, "interface.BAKE_ITEM", notes=(
                  ("source_word", "first word of the instance's vertices in the bound source (a multiple of 4)"),
                  ("out_vertex", "first vertex of the instance in a frame's concatenated vertices"),
                  ("mode", "MODE_COPY | MODE_RIGID | MODE_SKINNED"),
                  ("matrix", "first matrix of the instance in a frame's matrices (palette or world matrix)"))),
                      "readonly"),
              Binding("matrices", 2, STORAGE, (COMPUTE,), "mat4", "readonly"),
              # the three planes of the batch's frames (positions, normals, tangents: float x 3 per vertex,
              # [frame][vertex][xyz]), each a window bound at its dynamic offset: the slot's output planes, or the
              # batch's frames of the bake's result array itself (imported host memory, vkmorph/bake.py)
              *(Binding(plane, 3 + k, STORAGE_DYNAMIC, (COMPUTE,), "float", "writeonly", member="values",
                        block=f"Out{k}", instance=f"out{k}")
                for k, plane in enumerate(("positions", "normals", "tangents")))),
    push=PushConstants(Struct("Push", BAKE_PUSH, notes=(
        ("item_first", "workgroup y = item_first + item"),
        ("frame_first", "frames [frame_first, frame_first + frame_count) of the batch"),
        ("frames_per_group", "workgroup z covers frames_per_group of them"),
        ("frame_vertices", "vertices between two frames of a plane"),
        ("out_shift", "float of the batch's first frame in each bound plane window (its dynamic offset's rest)"),
        ("matrix_frame", "the frame whose matrices are matrices[0] (the bound window's first; 0: the batch's)"))),
        (COMPUTE,)),
    local_size=64,
    constants=(("uint", "MODE_COPY", BAKE_COPY), ("uint", "MODE_RIGID", BAKE_RIGID),
               ("uint", "MODE_SKINNED", BAKE_SKINNED), ("uint", "MODE_ANY", BAKE_ANY)))
# bake_ubo.comp: bake.comp with the matrices in a dynamic uniform buffer (llvmpipe lowers a storage-buffer load
# to a loop over the lanes, a uniform one is cheaper: bench/2026-12-02-lavapipe-bake-kernel.txt). The binding is
# a window of whole frames' matrices, BAKE_UBO_MATRICES mat4 (64 KiB, the maxUniformBufferRange of lavapipe and
# NVIDIA), placed per dispatch by its dynamic offset (vkmorph/bake.py: a run of frames per window)
BAKE_UBO_MATRICES = 1024
BAKE_UBO = ShaderInterface(
    "bake_ubo", ("bake_ubo.comp",), "bake with the frames' matrices in a dynamic uniform buffer (a window of frames)",
    bindings=tuple(Binding("matrices", 2, UNIFORM_ARRAY, (COMPUTE,), "mat4", count=BAKE_UBO_MATRICES)
                   if b.name == "matrices" else b for b in BAKE.bindings),
    push=BAKE.push, local_size=BAKE.local_size, constants=BAKE.constants)
# bake_wide.comp, the bake kernel of CPU devices (vkmorph/bake.py, GpuBaker.wide_stores): bake.comp writing each
# plane's whole quads of 4 vertices as two vertex pairs of 64-bit words (the planes also declared as Pair arrays:
# on llvmpipe a storage-buffer store is a loop over the lanes per component, so 6 components a plane and quad
# instead of 12 floats, bench/2026-12-02h-lavapipe-store-probe.txt), reading the batch's matrices through a
# uniform texel buffer (RGBA32F, a matrix's columns at texels 4 i .. 4 i + 3): llvmpipe fetches texels with a
# vector gather, where a uniform-buffer load at a per-item offset is a load per lane
# (bench/2026-12-02i-lavapipe-palette-probe.txt), and the whole batch's frames fit one dispatch (no 64 KiB
# window). Needs shaderInt64 and scalarBlockLayout (Context.wide_stores)
BAKE_WIDE = ShaderInterface(
    "bake_wide", ("bake_wide.comp",), "bake with 64-bit stores, matrices in a texel buffer (CPU devices)",
    bindings=tuple(replace(b, pairs=True) if b.kind == STORAGE_DYNAMIC else
                   Binding("matrices", 2, TEXEL, (COMPUTE,), "samplerBuffer", member="matrixTexels")
                   if b.name == "matrices" else b for b in BAKE.bindings),
    push=BAKE.push, local_size=BAKE.local_size, constants=BAKE.constants)

# ---------------------------------------------------------------------------------------------------- graphics
SHADOW_BIAS = 0.0015        # depth bias of the shadow-map comparison (grows with the light's grazing angle)
_VF = (VERTEX, FRAGMENT)
_F = (FRAGMENT,)
SCENE = ShaderInterface(
    "scene", ("skin.vert", "static.vert", "crowd_skin.vert", "crowd_static.vert", "crowd_pull.vert",
              "crowd_skin_pull.vert", "forward.frag", "ground.frag",
              "outline.frag", "shadow_mask.frag"),
    "graphics pipelines: set 0 per frame (shadow map, frame constants), set 1 per item (skinning palette), "
    "set 2 per material",
    bindings=(Binding("shadow_map", 0, SAMPLER, _F, "sampler2DShadow"),
              Binding("frame", 1, UNIFORM, _VF, Struct("Frame", FRAME_UBO, "FRAME_UBO", notes=(
                  ("view_proj", "camera"),
                  ("light_view_proj", "directional light (orthographic), also samples the shadow map"),
                  ("light_dir", "xyz: direction the light travels (world), w: intensity"),
                  ("camera_pos", "xyz, w: exposure"), ("sky", "rgb: hemisphere ambient from above"),
                  ("ground", "rgb: hemisphere ambient from below, a: outline width (pixels)"),
                  ("viewport", "xy: framebuffer size (pixels)"),
                  ("outline_color", "linear RGBA of the selected mesh's outline"))), instance="frame"),
              Binding("palette", 0, STORAGE, (VERTEX,), "mat4", "readonly", set=1, member="joints",
                      instance="palette"),
              # crowd_pull.vert / crowd_skin_pull.vert: this slot's output range of a crowd primitive whose instances
              # have their own vertices (compute-skinned: STATIC_VERTEX, PULLED_VERTEX_VEC4 vec4s each; morphing
              # rigid: the morph output, STATIC_VERTEX; morphing vertex-shader skinned: the morph output,
              # SKINNED_VERTEX, PULLED_SKINNED_VEC4 vec4s, joints as uint bits); written only in those items' sets
              Binding("crowd_vertices", 1, STORAGE, (VERTEX,), "vec4", "readonly", set=1, member="values",
                      block="CrowdVertices", instance="pulled"),
              Binding("material", 0, UNIFORM, _F, Struct("Material", MATERIAL_UBO, "MATERIAL_UBO", notes=(
                  ("base_color", "linear RGBA factor"), ("emissive", "rgb: emissive factor, a: normal scale"),
                  ("params", "metallic, roughness, occlusion strength, alpha cutoff"),
                  ("modes", "alpha mode (ALPHA_*), bit i: texture slot i reads TEXCOORD_1, has normal map, "
                            "unlit (KHR_materials_unlit)"),
                  ("uv_xform0", "KHR_texture_transform: columns 2i, 2i + 1 of the three matrices are slot i's "
                                "affine rows (a, b, c) and (d, e, f)"),
                  ("uv_xform1", "slots 2, 3"), ("uv_xform2", "slot 4"))),
                      set=2, instance="material"),
              Binding("base_color_tex", 1, SAMPLER, _F, "sampler2D", set=2),           # sRGB
              Binding("metallic_roughness_tex", 2, SAMPLER, _F, "sampler2D", set=2),   # g roughness, b metallic
              Binding("normal_tex", 3, SAMPLER, _F, "sampler2D", set=2),               # tangent space
              Binding("occlusion_tex", 4, SAMPLER, _F, "sampler2D", set=2),            # r
              Binding("emissive_tex", 5, SAMPLER, _F, "sampler2D", set=2)),            # sRGB
    push=PushConstants(Struct("Item", ITEM_PUSH, "ITEM_PUSH", notes=(
        ("model", "node world matrix"),
        ("pass", "PASS_FORWARD, PASS_SHADOW (light's view) or PASS_OUTLINE (grown along the normal)"),
        ("heat_joint", ">= 0: show the weight of this joint as a heat map"),
        ("instance_matrices", "crowd_*.vert: mat4s per instance in set 1's buffer (instance i's first is "
                              "i x this; 0: every instance reads matrix 0)"),
        ("matrix_first", "crowd_*.vert: the item's first mat4 within an instance's matrices (GPU crowd animation: "
                         "the skin's palette block or the node's model column; else 0)"),
        ("instance_vec4", "crowd_pull.vert, crowd_skin_pull.vert: vec4s between instances' ranges in crowd_vertices "
                          "(instance i's vertex v starts at vec4 i x this + v x the vertex's vec4s; "
                          "gl_InstanceIndex includes firstInstance)"))),
        _VF, instance="item"),
    constants=(("float", "SHADOW_BIAS", SHADOW_BIAS), ("uint", "PULLED_VERTEX_VEC4", PULLED_VERTEX_VEC4),
               ("uint", "PULLED_SKINNED_VEC4", PULLED_SKINNED_VEC4),
               ("int", "PASS_FORWARD", 0), ("int", "PASS_SHADOW", 1),
               ("int", "PASS_OUTLINE", 2), ("int", "ALPHA_OPAQUE", 0), ("int", "ALPHA_MASK", 1),
               ("int", "ALPHA_BLEND", 2)))

STATIC_INPUT = ShaderInterface("static_vertex", ("static.vert", "crowd_static.vert"),
                               "vertex inputs of unskinned items",
                               vertex=STATIC_VERTEX)
SKINNED_INPUT = ShaderInterface("skinned_vertex", ("skin.vert", "crowd_skin.vert"),
                                "vertex inputs of skinned items",
                                vertex=SKINNED_VERTEX)
EXTRA_INPUT = ShaderInterface("extra_vertex", ("skin.vert", "static.vert", "crowd_skin.vert",
                                               "crowd_static.vert", "crowd_pull.vert", "crowd_skin_pull.vert"),
                              "vertex binding 1 of every graphics pipeline (COLOR_0, TEXCOORD_1; not morphed)",
                              vertex=EXTRA_VERTEX, vertex_location=EXTRA_VERTEX_LOCATION)

UI_PUSH = np.dtype([("scale", "<f4", 2), ("translate", "<f4", 2)])
UI_VERTEX = np.dtype([("pos", "<f4", 2), ("uv", "<f4", 2), ("color", "u1", 4)])   # Dear ImGui's ImDrawVert
UI = ShaderInterface(
    "ui", ("ui.vert", "ui.frag"), "Dear ImGui overlay (app/ui_renderer.py): one texture, pixels -> NDC",
    bindings=(Binding("atlas", 0, SAMPLER, (FRAGMENT,), "sampler2D"),),
    push=PushConstants(Struct("Push", UI_PUSH, notes=(("scale", "NDC = pixel position * scale + translate"),)),
                       (VERTEX,)))
UI_INPUT = ShaderInterface("ui_vertex", ("ui.vert",), "vertex inputs of the ImGui overlay (ImDrawVert)",
                           vertex=UI_VERTEX)



# ---------------------------------------------------------------------------------------------------- varyings
@dataclass(frozen=True)
class Varying:
    """One location between two stages: ``out<Name>`` in the producing shader, ``in<Name>`` in the consuming one
    (``texcoords`` -> ``outTexcoords`` / ``inTexcoords``)."""

    location: int
    name: str
    glsl: str          # GLSL type
    note: str = ""


@dataclass(frozen=True)
class StageLink:
    """The varyings between stages, declared once: gen/<name>_out.glsl declares them ``out`` for ``producers``,
    gen/<name>_in.glsl ``in`` for ``consumers``. No consumers: fragment outputs (the colour attachments)."""

    name: str
    producers: tuple[str, ...]
    consumers: tuple[str, ...]
    varyings: tuple[Varying, ...]
    doc: str = ""

    def headers(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """gen/ file name -> (direction, the shaders that include it)."""
        out = {f"{self.name}_out.glsl": ("out", self.producers)}
        if self.consumers:
            out[f"{self.name}_in.glsl"] = ("in", self.consumers)
        return out


SCENE_VARYINGS = StageLink(
    "scene_varyings", ("skin.vert", "static.vert", "crowd_skin.vert", "crowd_static.vert",
                       "crowd_pull.vert", "crowd_skin_pull.vert"), (
        "forward.frag", "ground.frag", "outline.frag", "shadow_mask.frag"), (
        Varying(0, "world", "vec3", "world-space position"),
        Varying(1, "normal", "vec3", "world-space normal (not normalized)"),
        Varying(2, "tangent", "vec4", "xyz: world-space tangent, w: handedness"),
        Varying(3, "texcoords", "vec4", "xy: TEXCOORD_0, zw: TEXCOORD_1"),
        Varying(4, "color", "vec4", "COLOR_0 (white when the file has none)"),
        Varying(5, "heat", "float", "weight of the heat-map joint (item.heatJoint)")),
    "scene vertex shaders (glsl/vertex_out.glsl emitVertex) -> fragment shaders")
SCENE_TARGET = StageLink(
    "scene_target", ("forward.frag", "ground.frag", "outline.frag"), (),
    (Varying(0, "color", "vec4", "colour attachment 0 (sRGB: linear values, encoded on write)"),),
    "fragment output of the scene's colour passes")
UI_VARYINGS = StageLink(
    "ui_varyings", ("ui.vert",), ("ui.frag",), (
        Varying(0, "color", "vec4", "linear RGBA (ImGui's sRGB colour decoded)"),
        Varying(1, "uv", "vec2", "font/texture atlas coordinates")),
    "Dear ImGui overlay: ui.vert -> ui.frag")
UI_TARGET = StageLink("ui_target", ("ui.frag",), (),
                      (Varying(0, "color", "vec4", "colour attachment 0 (the swapchain image)"),),
                      "fragment output of the ImGui overlay")
STAGE_LINKS: tuple[StageLink, ...] = (SCENE_VARYINGS, SCENE_TARGET, UI_VARYINGS, UI_TARGET)

INTERFACES: tuple[ShaderInterface, ...] = (MORPH, MORPH_COMPACT, MORPH_VERTEX, MORPH_COMPACT_VERTEX, NORMALS,
                                           SKIN_CAPTURE, CROWD_SKIN, COPY, SCENE, STATIC_INPUT, SKINNED_INPUT,
                                           EXTRA_INPUT, UI, UI_INPUT, BAKE, BAKE_UBO, BAKE_WIDE,
                                           CROWD_ANIM)


# ---------------------------------------------------------------------------------------------------- GLSL
def _block(qual: str, kind: str, block: str, body: list[str], instance: str | None) -> list[str]:
    return [f"layout({qual}) {kind} {block} {{", *body, f"}}{' ' + instance if instance else ''};"]


def _preamble(name: str, doc: str, shaders: tuple[str, ...]) -> list[str]:
    return [f"// GENERATED by tools/compile_shaders.py from vkmorph/gpu/interface.py ({name}): do not edit;",
            "// change the declaration there and run `python tools/compile_shaders.py`.",
            *([f"// {doc}"] if doc else []), f"// Included by: {', '.join(shaders)}", ""]


def glsl_header(iface: ShaderInterface) -> str:
    """The text of glsl/gen/<name>.glsl."""
    out = _preamble(iface.name, iface.doc, iface.shaders)
    if iface.local_size is not None:
        spec = f", local_size_x_id = {iface.local_size_id}" if iface.local_size_id is not None else ""
        out += [f"layout(local_size_x = {iface.local_size}{spec}) in;", ""]
    if iface.constants:
        out += [f"const {t} {n} = {v!r};" for t, n, v in iface.constants] + [""]
    for s in iface.structs():
        out += [f"struct {s.name} {{{'  // ' + str(s.dtype.itemsize) + ' bytes, ' + s.source if s.source else ''}",
                *s.body(), "};", ""]
    if any(b.pairs for b in iface.bindings):
        out += ["struct Pair {  // 24 bytes (scalar layout): two consecutive vertices' xyz, x0 y0 | z0 x1 | y1 z1",
                "    u64vec2 a;", "    uint64_t b;", "};", ""]
    for b in iface.bindings:
        where = f"set = {b.set}, binding = {b.binding}"
        if b.kind in (SAMPLER, TEXEL):
            out.append(f"layout({where}) uniform {b.element} {b.glsl_name};")
        elif b.kind == UNIFORM:
            out += _block(f"std140, {where}", "uniform", b.block_name, b.element.body(), b.instance)
        elif b.kind == UNIFORM_ARRAY:
            out += _block(f"std140, {where}", "uniform", b.block_name, [f"    {b.element} {b.glsl_name}[{b.count}];"],
                          b.instance)
        else:
            elem = b.element.name if isinstance(b.element, Struct) else b.element
            access = f"{b.access} " if b.access else ""
            inst = f" {b.instance}" if b.instance else ""
            out.append(f"layout(std430, {where}) {access}buffer {b.block_name} {{ {elem} {b.glsl_name}[]; }}{inst};")
            if b.pairs:             # the same bytes as vertex pairs (an alias of the binding)
                out.append(f"layout(scalar, {where}) {access}buffer {b.block_name}Pairs {{ Pair pairs[]; }}"
                           f"{inst + 'p' if inst else ''};")
    if iface.bindings:
        out.append("")
    if iface.push is not None:
        out += _block("push_constant", "uniform", iface.push.struct.name, iface.push.struct.body(),
                      iface.push.instance) + [""]
    for a in iface.vertex_attributes():
        out.append(f"layout(location = {a.location}) in {a.glsl} in{pascal(a.name)};")
    if iface.vertex is not None:
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def glsl_varyings(link: StageLink, direction: str) -> str:
    """The text of glsl/gen/<link>_out.glsl (``direction`` "out") or <link>_in.glsl ("in")."""
    shaders = link.producers if direction == "out" else link.consumers
    out = _preamble(link.name, link.doc, shaders)
    for v in link.varyings:
        line = f"layout(location = {v.location}) {direction} {v.glsl} {direction}{pascal(v.name)};"
        out.append(f"{line:<52}// {v.note}" if v.note else line)
    return "\n".join(out) + "\n"
