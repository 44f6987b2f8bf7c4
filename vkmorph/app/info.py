"""``vkmorph info FILE [--json]``: what the importer found, after validation (keys in docs/architecture.md).

CPU only (no Vulkan device): per primitive also the nodes that instance its mesh, its material's name and its
rest-pose bounds (``rest_bounds``: [min, max] of the base positions, mesh space, before morphing and skinning)."""

from __future__ import annotations

import json

from ..asset.importer import load_scene
from ..asset.model import SceneAsset
from ..outputs import printable as _p
from .cli import external_uris


def scene_summary(scene: SceneAsset, *, lod: bool = False) -> dict:
    """What ``info`` prints; ``lod``: also each primitive's triangles per level of detail (``lod_triangles``,
    asset/lod.py; costs the simplification, ~0.5 s for RobotExpressive)."""
    from ..morph.gpu_data import count_deltas
    from ..render.skin_cost import CROWD_PASSES, choose_path

    prims = []
    for m_i, m in enumerate(scene.meshes):
        nodes = [n.name for n in scene.nodes if n.mesh == m_i]
        for p in m.primitives:
            pos = p.vertices["position"]
            rest = [pos.min(axis=0).tolist(), pos.max(axis=0).tolist()] if len(pos) else None
            prims.append({"mesh": m.name, "nodes": nodes, "material": p.material.name if p.material else None,
                          "rest_bounds": rest, "skin": _skin(scene, p.skin),
                          "vertex_count": p.vertex_count, "index_count": int(len(p.indices)),
                          "target_names": p.target_names, "delta_count": count_deltas(p),
                          "target_normals_derived": [t.normals_derived for t in p.morph_targets],
                          "target_names_generated": [t.generated_name for t in p.morph_targets],
                          "duplicate_target_names": sorted({n for n in p.target_names
                                                            if p.target_names.count(n) > 1}),
                          "skinned": p.is_skinned, "truncated_influences": p.truncated_influences,
                          # crowds (render/crowd_skin.py): the byte model's path for shadow + forward + outline
                          "crowd_skinning": choose_path(p.vertices.dtype.itemsize, CROWD_PASSES)
                          if p.is_skinned else None,
                          "unweighted_vertices": p.unweighted_vertices})
            if lod:
                from ..asset.lod import primitive_lods

                prims[-1]["lod_triangles"] = [len(x) // 3 for x in primitive_lods(p)]
    anims = []
    for a in scene.animations:
        anims.append({"name": a.name, "duration_s": a.duration,
                      "morph_channels": sorted({scene.nodes[c.node].name for c in a.morph_channels}),
                      "node_channels": sorted({scene.nodes[c.node].name for c in a.node_channels})})
    return {"file": scene.source, "primitives": prims,
            "skins": scene.file_skins if scene.file_skins is not None else
                     [{"name": s.name, "joint_count": int(len(s.joints))} for s in scene.skins],
            "animations": anims, "node_count": len(scene.nodes), "extensions": scene.extensions or []}


def _skin(scene: SceneAsset, s: int | None) -> int | None:
    """A primitive's skin as an index into the listed skins: for glTF the file's ``skins`` (vkmorph makes one skin
    per (mesh, skin) pair, which is not what the file has)."""
    if s is None or scene.file_skins is None:
        return s
    return scene.skins[s].file_skin


def run_info(args) -> int:
    summary = scene_summary(load_scene(args.file, allow_external_uris=external_uris(args)),
                            lod=getattr(args, "lod", False))
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{_p(summary['file'])}: {summary['node_count']} nodes, {len(summary['primitives'])} primitives, "
          f"{len(summary['skins'])} skins, {len(summary['animations'])} animations")
    for i, p in enumerate(summary["primitives"]):
        print(f"  p{i} {p['mesh']!r}: {p['vertex_count']} vertices, {p['index_count']} indices, "
              f"{len(p['target_names'])} targets ({p['delta_count']} deltas)"
              f"{', skinned' if p['skinned'] else ''}"
              + (f" (crowds: {p['crowd_skinning']} skinning by the byte model)" if p["crowd_skinning"] else "")
              + (f", {p['truncated_influences']} vertices cut to 4 influences" if p['truncated_influences'] else "")
              + (f", {p['unweighted_vertices']} vertices without influence (rigid with the mesh node)"
                 if p['unweighted_vertices'] else ""))
        if "lod_triangles" in p:
            print("      LOD triangles: " + " / ".join(f"{t:,}" for t in p["lod_triangles"]))
        if p["nodes"] or p["material"]:
            print(f"      nodes: {_p(', '.join(p['nodes'])) or '(none)'}; material: {_p(p['material'] or '(none)')}")
        if p["target_names"]:
            print(f"      targets: {_p(', '.join(p['target_names']))}")
            generated = [n for n, g in zip(p["target_names"], p["target_names_generated"]) if g]
            if generated:
                print(f"      names generated (file has none): {_p(', '.join(generated))}")
            if p["duplicate_target_names"]:
                print(f"      duplicate names (set these by index): {_p(', '.join(p['duplicate_target_names']))}")
            derived = [n for n, d in zip(p["target_names"], p["target_normals_derived"]) if d]
            if derived:
                print(f"      normals derived from positions (file has none): {_p(', '.join(derived))}")
    for e in summary["extensions"]:
        print(f"  extension {e['name']} ({'required' if e['required'] else 'used'}): {e['status']}, {e['what']}")
    for s in summary["skins"]:
        print(f"  skin {_p(s['name'])}: {s['joint_count']} joints")
    for a in summary["animations"]:
        print(f"  clip {a['name']!r}: {a['duration_s']:.3f} s, morph {_p(a['morph_channels'])}, "
              f"nodes {len(a['node_channels'])}")
    return 0
