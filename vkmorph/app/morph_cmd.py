"""``vkmorph morph FILE [--weights W,..|--clip NAME --time T] [--skinned] --out OUT.npz`` (docs/architecture.md).

Runs the real compute pass and reads the output vertex buffer back; for primitive i in import order it writes
p{i}/position, p{i}/normal, p{i}/tangent (float32, V x 3) as instanced by the first node (file order) that uses
its mesh. Arguments are checked before any GPU work; the file is written atomically (temp file + rename).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from ..asset.importer import load_scene
from ..errors import UsageError
from ..morph.state import file_weight_range


def parse_weights(text: str) -> np.ndarray:
    try:
        w = np.array([float(x) for x in text.split(",") if x.strip() != ""], np.float64)
    except ValueError:
        raise UsageError(f"--weights must be comma-separated numbers, got {text!r}") from None
    if not np.isfinite(w).all():
        raise UsageError(f"--weights has a non-finite value: {text!r}")
    return w


def first_instances(scene) -> list[tuple[int, int]]:
    """(node, primitive-in-mesh) of the first node instancing each primitive, in import order."""
    out = []
    for m_i, mesh in enumerate(scene.meshes):
        node = next((i for i, n in enumerate(scene.nodes) if n.mesh == m_i), None)
        for p_i in range(len(mesh.primitives)):
            out.append((node, p_i))
    return out


def write_npz_atomic(path: str, arrays: dict[str, np.ndarray]) -> None:
    out = Path(path)
    if out.parent and not out.parent.exists():
        raise UsageError(f"output folder {out.parent} does not exist")
    fd, tmp = tempfile.mkstemp(suffix=".npz", dir=out.parent or ".")
    os.close(fd)
    try:
        np.savez(tmp, **arrays)
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise


def run_morph(args) -> int:
    scene = load_scene(args.file)
    weights = parse_weights(args.weights) if args.weights is not None else None
    clip = scene.clip(args.clip) if args.clip is not None else None
    if args.clip is not None and not np.isfinite(args.time):
        raise UsageError(f"--time must be finite, got {args.time}")
    if weights is not None:
        for p in scene.primitives:
            if p.morph_targets and len(p.morph_targets) != len(weights):
                raise UsageError(f"--weights has {len(weights)} values but primitive {p.name!r} has "
                                 f"{len(p.morph_targets)} targets")
    if args.skinned and not any(p.is_skinned for p in scene.primitives):
        raise UsageError("--skinned: the file has no skinned primitive")

    from ..anim.player import AnimationPlayer
    from ..anim.skeleton import Skeleton
    from ..gpu.context import Context
    from ..render.morph_pass import MorphRuntime

    ctx = Context.create(echo_messages=True)
    try:
        rt = MorphRuntime(ctx, scene, file_weight_range(scene, () if weights is None else weights))
        skeleton = Skeleton(scene)
        if weights is not None:
            for node in rt.pose.morph_nodes:
                rt.set_weights(node, weights[: len(rt.pose.weights(node))])
        elif clip is not None:
            player = AnimationPlayer(scene, rt.pose, skeleton)
            player.clip = clip
            player.apply(min(max(args.time, 0.0), clip.duration))
        ctx.submit_and_wait(rt.record)
        arrays: dict[str, np.ndarray] = {}
        skinner = None
        if args.skinned:
            from ..render.skin_capture import SkinCapture

            skinner = SkinCapture(ctx, max_runs=len(scene.primitives))
        for i, (node, p_i) in enumerate(first_instances(scene)):
            if node is None:
                continue
            inst = rt.instance(node, p_i)
            v = rt.read_vertices(inst)
            pos, nrm, tan = v["position"], v["normal"], v["tangent"][:, :3]
            if skinner is not None and inst.prim.is_skinned:
                mats = skeleton.skin_matrices(inst.prim.skin, node)
                pos, nrm, tan = skinner.run(inst.vertex_buffer, inst.vertex_offset, inst.prim.vertices.dtype,
                                            inst.prim.vertex_count, mats)
            arrays[f"p{i}/position"] = np.ascontiguousarray(pos, np.float32)
            arrays[f"p{i}/normal"] = np.ascontiguousarray(nrm, np.float32)
            arrays[f"p{i}/tangent"] = np.ascontiguousarray(tan, np.float32)
        if skinner is not None:
            skinner.destroy()
        rt.destroy()
    finally:
        ctx.destroy()
    if ctx.errors_and_warnings():
        return 3
    write_npz_atomic(args.out, arrays)
    print(f"wrote {args.out}: {len(arrays) // 3} primitives")
    return 0
