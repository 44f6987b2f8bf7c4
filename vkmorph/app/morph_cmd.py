"""``vkmorph morph FILE [--weights W,..] [--weight NAME=W]... [--clip NAME [--time T]] [--skinned] [--world]
[--names] --out OUT.npz`` (contract: docs/architecture.md), on top of the Python API (`vkmorph.api.Model.pose`).

For primitive i in import order, as instanced by the first node (file order) that uses its mesh, it writes
``p{i}/position``, ``p{i}/normal``, ``p{i}/tangent`` (float32, V x 3), ``p{i}/indices`` (uint32) and
``p{i}/bounds`` (float32, 2 x 3: min, max containing every written position, in the same space; from
`MorphRuntime.bounds` at the pose, no readback: `vkmorph.api.Model.pose`); with
``--names`` the keys are ``<node>/<k>/...`` for every instance instead. Arguments and the output path are
checked before any GPU work; the file is written atomically (vkmorph.outputs), nothing on error.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import UsageError
from ..outputs import atomic_write, check_output
from .cli import external_uris


def parse_weights(text: str) -> np.ndarray:
    try:
        w = np.array([float(x) for x in text.split(",") if x.strip() != ""], np.float64)
    except ValueError:
        raise UsageError(f"--weights must be comma-separated numbers, got {text!r}") from None
    if not np.isfinite(w).all():
        raise UsageError(f"--weights has a non-finite value: {text!r}")
    return w


def parse_named_weights(items: list[str] | None) -> dict[str, float]:
    """``--weight NAME=W`` (repeatable) -> {NAME: W}; the last one wins for a repeated name."""
    out: dict[str, float] = {}
    for item in items or ():
        name, sep, value = item.rpartition("=")
        if not sep or not name:
            raise UsageError(f"--weight must look like NAME=W, got {item!r}")
        try:
            w = float(value)
        except ValueError:
            raise UsageError(f"--weight {name}: {value!r} is not a number") from None
        if not math.isfinite(w):
            raise UsageError(f"--weight {name}: {value!r} is not finite")
        out[name] = w
    return out


def first_instances(scene) -> list[tuple[int, int]]:
    """(node, primitive-in-mesh) of the first node instancing each primitive, in import order."""
    out = []
    for m_i, mesh in enumerate(scene.meshes):
        node = next((i for i, n in enumerate(scene.nodes) if n.mesh == m_i), None)
        for p_i in range(len(mesh.primitives)):
            out.append((node, p_i))
    return out


def run_morph(args) -> int:
    out = check_output(args.out, suffixes=(".npz",))
    if args.time is not None and args.clip is None:
        raise UsageError("--time needs --clip (the file's default weights have no time)")
    if args.time is not None and not math.isfinite(args.time):
        raise UsageError(f"--time must be finite, got {args.time}")
    named = parse_named_weights(args.weight)
    listed = parse_weights(args.weights) if args.weights is not None else None
    if named and listed is not None:
        raise UsageError("use --weights (one list) or --weight NAME=W, not both")

    from ..api import Model

    given = list(named.values()) if named else ([] if listed is None else list(listed))
    model = Model(args.file, echo_messages=True, extra_weights=given,
                  allow_external_uris=external_uris(args))
    try:
        scene = model.scene
        clip = scene.clip(args.clip).name if args.clip is not None else None
        if args.skinned and not any(p.is_skinned for p in scene.primitives):
            raise UsageError("--skinned: the file has no skinned primitive")
        weights = named or listed
        if weights is not None and not any(p.morph_targets for p in scene.primitives):
            flag = "--weight" if named else "--weights"
            raise UsageError(f"{flag}: {scene.source} has no morph targets (vkmorph info shows what it has)")
        if listed is not None:  # the historical message: count against each primitive's targets
            for p in scene.primitives:
                if p.morph_targets and len(p.morph_targets) != len(listed):
                    raise UsageError(f"--weights has {len(listed)} values but primitive {p.name!r} has "
                                     f"{len(p.morph_targets)} targets")
        pose = model.pose(weights=weights, clip=clip, time=args.time, space="world" if args.world else "mesh",
                          skinning=args.skinned)
        arrays: dict[str, np.ndarray] = {}
        if args.names:
            for prim in pose:
                _put(arrays, prim.name, prim)
        else:
            by_key = {(p.node, p.primitive): p for p in pose}
            for i, key in enumerate(first_instances(scene)):
                if key in by_key:
                    _put(arrays, f"p{i}", by_key[key])
    finally:
        model.close()
    if model.messages:
        return 3

    def write(f):
        np.savez(f, **arrays)

    atomic_write(out, write)
    print(f"wrote {args.out}: {len(arrays) // len(KEYS)} primitives")
    return 0


KEYS = ("position", "normal", "tangent", "indices", "bounds")


def _put(arrays: dict[str, np.ndarray], key: str, prim) -> None:
    arrays[f"{key}/position"] = np.ascontiguousarray(prim.positions, np.float32)
    arrays[f"{key}/normal"] = np.ascontiguousarray(prim.normals, np.float32)
    arrays[f"{key}/tangent"] = np.ascontiguousarray(prim.tangents, np.float32)
    arrays[f"{key}/indices"] = np.ascontiguousarray(prim.indices, np.uint32)
    arrays[f"{key}/bounds"] = np.ascontiguousarray(prim.bounds, np.float32)
