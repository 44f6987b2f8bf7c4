"""The named limits on what one input file may ask for, and how to raise them.

Each limit is far above what a real character needs and below what makes a crafted file cost minutes or
gigabytes. They are checked from the glTF JSON (``gltf_validate``) or an image's header (``images``) *before* any
work that scales with them, and a file over one gets one ``AssetError`` line naming the place, the figure, the
limit and how to raise it, e.g.
``file a.gltf: nodes: 1000000 nodes, limit 100000 (raise it with VKMORPH_MAX_NODES=N)``.

Raise a limit with its environment variable (read at each check, so a forked or spawned importer child sees it
too), or in code with ``with limits.override(nodes=2_000_000): load_scene(...)``. ``limits.table()`` lists them
(the README's "Untrusted files" shows the same table).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import UsageError


@dataclass(frozen=True)
class Limit:
    name: str          # the key used by value() / override()
    env: str           # the environment variable that raises it
    default: int
    counts: str        # what is counted, for the table and messages


LIMITS = {lim.name: lim for lim in (
    Limit("nodes", "VKMORPH_MAX_NODES", 20_000, "nodes in a glTF file"),
    Limit("node_depth", "VKMORPH_MAX_NODE_DEPTH", 1_000, "levels of the node hierarchy"),
    Limit("morph_targets", "VKMORPH_MAX_MORPH_TARGETS", 4_096, "morph targets of one primitive"),
    Limit("primitives", "VKMORPH_MAX_PRIMITIVES", 2_000, "mesh primitives in a glTF file"),
    Limit("vertices", "VKMORPH_MAX_VERTICES", 2_000_000,
          "vertices over all primitives (a POSITION accessor counts once per primitive that uses it)"),
    Limit("target_vertices", "VKMORPH_MAX_TARGET_VERTICES", 4_000_000,
          "morph target vertices over all primitives (targets x vertices)"),
    Limit("skin_joints", "VKMORPH_MAX_SKIN_JOINTS", 50_000,
          "skin joints over all skinned mesh nodes (a skin counts once per node and primitive using it)"),
    Limit("decoded_bytes", "VKMORPH_MAX_DECODED_BYTES", 256 << 20,
          "bytes of accessor data decoded, each accessor once per use (attributes, targets, samplers, skins)"),
    Limit("channels", "VKMORPH_MAX_ANIMATION_CHANNELS", 20_000, "animation channels in a glTF file"),
    Limit("json_values", "VKMORPH_MAX_JSON_VALUES", 2_000_000,
          "JSON values (commas, colons and opening brackets) in a glTF file's JSON"),
    Limit("image_pixels", "VKMORPH_MAX_IMAGE_PIXELS", 8192 * 8192,
          "pixels of one texture image as decoded (JPEG is decoded reduced when that fits)"),
)}


def value(name: str) -> int:
    """The limit's current value: its environment variable when set (a positive integer), else the default."""
    lim = LIMITS[name]
    raw = os.environ.get(lim.env, "").strip().replace("_", "")
    if not raw:
        return lim.default
    try:
        v = int(raw)
    except ValueError:
        v = 0
    if v < 1:
        raise UsageError(f"{lim.env}={os.environ[lim.env]!r} is not a positive integer")
    return v


def exceeded(name: str, count: int, what: str | None = None) -> str | None:
    """None when ``count`` is within limit ``name``, else the message: figure, limit and how to raise it."""
    limit = value(name)
    if count <= limit:
        return None
    lim = LIMITS[name]
    return f"{count} {what or lim.counts}, limit {limit} (raise it with {lim.env}=N)"


def json_values(text: bytes) -> int:
    """An upper bound on the number of values a JSON text parses into, counted in C before parsing: every value
    after the first follows a comma, a colon or an opening bracket (those inside strings count too, which only
    errs on the safe side). Whitespace and long strings cost nothing here; ``[{},{},...]`` costs ~24x its size
    once parsed, which this bounds."""
    return 1 + text.count(b",") + text.count(b":") + text.count(b"[") + text.count(b"{")


@contextmanager
def override(**values: int):
    """Raise (or lower) limits for the block: ``with override(nodes=2_000_000, node_depth=5000): ...``.

    Sets the environment variables, so an isolated importer child (forked or a fresh interpreter) sees them."""
    old = {}
    for name, v in values.items():
        if name not in LIMITS:
            raise UsageError(f"unknown limit {name!r} (limits: {', '.join(LIMITS)})")
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise UsageError(f"limit {name} must be a positive integer, not {v!r}")
        env = LIMITS[name].env
        old[env] = os.environ.get(env)
        os.environ[env] = str(v)
    try:
        yield
    finally:
        for env, v in old.items():
            if v is None:
                os.environ.pop(env, None)
            else:
                os.environ[env] = v


def table() -> list[tuple[str, int, str, str]]:
    """(name, current value, environment variable, what is counted) for every limit."""
    return [(lim.name, value(lim.name), lim.env, lim.counts) for lim in LIMITS.values()]
