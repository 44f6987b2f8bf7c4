"""Command-line pose and camera options shared by ``render`` and ``demo``: ``--weight NAME=W`` / ``--weights``,
``--camera yaw,pitch[,distance]``, ``--fov``, ``--msaa``, ``--size``. Each is checked against the file before any
GPU work, and a mistake is one ``UsageError`` naming the flag (and what the file has instead)."""

from __future__ import annotations

import math

import numpy as np

from ..errors import UsageError, abridged, name_list
from ..morph.state import apply_named_weights
from .morph_cmd import parse_named_weights, parse_weights

MSAA_CHOICES = (1, 2, 4, 8)


def target_names_by_node(scene, morph_nodes) -> dict[int, list[str]]:
    """{node: its target names} for the nodes that morph (the names of the mesh's first morphing primitive)."""
    out = {}
    for node in morph_nodes:
        mesh = scene.meshes[scene.nodes[node].mesh]
        out[node] = next((p.target_names for p in mesh.primitives if p.morph_targets), [])
    return out


def check_weight_args(scene, args) -> tuple[dict[str, float], np.ndarray | None]:
    """(named, listed) weights from ``--weight`` / ``--weights``, checked against ``scene``: a file without
    targets, an unknown name (the file's names listed) or a list of the wrong length is one UsageError."""
    named = parse_named_weights(getattr(args, "weight", None))
    listed = parse_weights(args.weights) if getattr(args, "weights", None) is not None else None
    if named and listed is not None:
        raise UsageError("use --weights (one list) or --weight NAME=W, not both")
    if not named and listed is None:
        return named, listed
    flag = "--weight" if named else "--weights"
    prims = [p for p in scene.primitives if p.morph_targets]
    if not prims:
        raise UsageError(f"{flag}: {scene.source} has no morph targets (vkmorph info shows what it has)")
    if named:
        known = list(dict.fromkeys(n for p in prims for n in p.target_names))
        for name in named:
            if name not in known:
                raise UsageError(f"{flag} {abridged(name)}: no such morph target; the file has {name_list(known)}")
    else:
        for p in prims:
            if len(p.morph_targets) != len(listed):
                raise UsageError(f"--weights has {len(listed)} values but primitive {abridged(p.name)} has "
                                 f"{len(p.morph_targets)} targets")
    return named, listed


def apply_weights(scene, pose, named: dict[str, float], listed: np.ndarray | None) -> None:
    """Set the checked weights on ``pose`` (after any clip was applied): a name on every node that has it, a
    list on every morphing node."""
    if listed is not None:
        for node in pose.morph_nodes:
            pose.set_weights(node, listed)
        return
    if not named:
        return
    names = target_names_by_node(scene, pose.morph_nodes)
    apply_named_weights(pose, named, names.__getitem__)


def parse_camera(text: str | None) -> tuple[float, float, float | None] | None:
    """``--camera yaw,pitch[,distance]``: degrees, degrees, model units (None: keep the framed distance)."""
    if text is None:
        return None
    try:
        parts = [float(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"--camera must look like yaw,pitch[,distance] (degrees, model units), got {text!r}") from None
    if len(parts) not in (2, 3) or not all(math.isfinite(x) for x in parts):
        raise UsageError(f"--camera must be 2 or 3 finite numbers: yaw,pitch[,distance], got {text!r}")
    if len(parts) == 3 and parts[2] <= 0:
        raise UsageError(f"--camera distance must be > 0, got {parts[2]}")
    if not -89.0 <= parts[1] <= 89.0:
        raise UsageError(f"--camera pitch must be within -89..89 degrees, got {parts[1]}")
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


def check_fov(fov: float | None) -> float | None:
    if fov is not None and not (math.isfinite(fov) and 5.0 <= fov <= 150.0):
        raise UsageError(f"--fov must be within 5..150 degrees, got {fov}")
    return fov


def check_msaa(msaa: int | None) -> int | None:
    if msaa is not None and msaa not in MSAA_CHOICES:
        raise UsageError(f"--msaa must be one of {', '.join(map(str, MSAA_CHOICES))}, got {msaa}")
    return msaa


def apply_camera(renderer, camera: tuple[float, float, float | None] | None, fov: float | None) -> None:
    """After ``renderer.frame_camera()``: the field of view (the framed distance scaled so the model still fits)
    and the orbit angles / distance asked for. The pitch stays clamped above the ground."""
    cam = renderer.camera
    if fov is not None:
        old = cam.fovy
        cam.fovy = math.radians(fov)
        cam.distance *= math.sin(old / 2) / math.sin(cam.fovy / 2)
    if camera is not None:
        yaw, pitch, distance = camera
        if distance is not None:
            cam.distance = distance
        cam.yaw = math.radians(yaw)
        cam.pitch = math.radians(pitch)
