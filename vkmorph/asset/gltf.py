"""The asset layer's one glTF 2.0 reader (.gltf JSON and .glb), written for hostile input.

``GltfDocument(path)`` reads the JSON and every buffer (GLB BIN chunk, ``data:`` URIs, files next to the model),
checking each length against what is really there before anything is allocated from it. ``accessor(i)`` decodes
one accessor to numpy, bounds-checked inside its buffer view and buffer. Animation helpers give each sampler's
keyframe times, output values and interpolation, and each channel's target, exactly as the file says (Assimp
drops the interpolation), so samplers can follow glTF interpolation exactly.

Every problem raises ``AssetError`` with one line naming the file and the JSON path, e.g.
``file a.gltf: accessors[3]: ends at byte 812 of bufferViews[1] (640 bytes)``.

Why not pygltflib: its dataclass model does no type or range checking of fields (a string ``count`` passes
through), so every check below would still be needed, it has no bounds-checked accessor decoding (the part that
matters for hostile input), and it brings dataclasses-json with it. This reader is ``json`` + ``numpy``.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import numpy as np

from ..errors import AssetError
from . import limits
from .files import FileProblem, open_regular, read_exact, read_regular
from .scene_cache import file_stat

COMPONENT_DTYPES = {5120: np.dtype("i1"), 5121: np.dtype("u1"), 5122: np.dtype("<i2"), 5123: np.dtype("<u2"),
                    5125: np.dtype("<u4"), 5126: np.dtype("<f4")}
TYPE_SHAPES = {"SCALAR": (), "VEC2": (2,), "VEC3": (3,), "VEC4": (4,), "MAT2": (2, 2), "MAT3": (3, 3),
               "MAT4": (4, 4)}
INTERPOLATIONS = ("LINEAR", "STEP", "CUBICSPLINE")
TARGET_PATHS = ("translation", "rotation", "scale", "weights")
GLB_MAGIC = b"glTF"
CHUNK_JSON = 0x4E4F534A
CHUNK_BIN = 0x004E4942
MAX_ZERO_FILL_BYTES = 1 << 28   # an accessor without a bufferView is zeros: refuse absurd counts
ALLOW_EXTERNAL_ENV = "VKMORPH_ALLOW_EXTERNAL_URIS"
MESHOPT = "EXT_meshopt_compression"
MESHOPT_MODES = ("ATTRIBUTES", "TRIANGLES", "INDICES")
MESHOPT_FILTERS = ("NONE", "OCTAHEDRAL", "QUATERNION", "EXPONENTIAL", "COLOR")


@dataclass(frozen=True)
class Sampler:
    """One animation sampler: ``input`` (K,) float64 seconds; ``output`` (K, n), or (3K, n) for CUBICSPLINE
    (in-tangent, value, out-tangent per key); for a weights channel n is the target count."""

    input: np.ndarray
    output: np.ndarray
    interpolation: str


@dataclass(frozen=True)
class Channel:
    """One animation channel: sampler index, target node (None when absent) and path."""

    sampler: int
    node: int | None
    path: str


def external_uris_allowed(flag: bool | None = None) -> bool:
    """The explicit flag, else ``VKMORPH_ALLOW_EXTERNAL_URIS=1`` in the environment; refused by default."""
    if flag is not None:
        return bool(flag)
    return os.environ.get(ALLOW_EXTERNAL_ENV, "") not in ("", "0")


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# ---------------------------------------------------------------------------------------- non-finite JSON numbers
# Python's json reads NaN, Infinity and -Infinity (not JSON) and numbers too large for a float (1e999) as
# non-finite floats; the canonical file handed to Assimp would then not parse ("No suitable reader found"). Each
# becomes a marker, in text order, and the first is reported with its line, column and JSON path.
_MAYBE_HUGE = re.compile(rb"[eE]\+?[0-9]{3,}|[0-9]{309}")     # a cheap test before the slow float hook
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)')


class _NonFiniteNumber(ValueError):
    pass


class _Marker:
    __slots__ = ("token", "ordinal")

    def __init__(self, token: str, ordinal: int) -> None:
        self.token, self.ordinal = token, ordinal


def _loads(text: bytes):
    found: list[_Marker] = []

    def constant(token: str) -> _Marker:
        found.append(_Marker(token, len(found)))
        return found[-1]

    def number(token: str):
        x = float(token)
        return x if math.isfinite(x) else constant(token)

    d = json.loads(text, parse_constant=constant,
                   **({"parse_float": number} if _MAYBE_HUGE.search(text) else {}))
    if found:
        raise _NonFiniteNumber(_where_non_finite(text, d))
    return d


def _where_non_finite(text: bytes, d) -> str:
    """'NaN at line L column C (nodes[0].extras.a): ...' for the first marker left in the parsed document."""
    best: tuple[int, str] | None = None
    stack = [(d, "")]
    while stack:
        v, path = stack.pop()
        if isinstance(v, _Marker):
            if best is None or v.ordinal < best[0]:
                best = (v.ordinal, path)
        elif isinstance(v, dict):
            stack.extend((x, f"{path}.{k}" if path else str(k)) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, f"{path}[{i}]") for i, x in enumerate(v))
    ordinal, path = best if best is not None else (0, "")
    s = text.decode("utf-8-sig", errors="replace")
    k = -1
    for m in _TOKENS.finditer(s):
        if m.group(1) or (m.group(2) and not math.isfinite(float(m.group(2)))):
            k += 1
            if k == ordinal:
                pos = m.start()
                line = s.count("\n", 0, pos) + 1
                column = pos - (s.rfind("\n", 0, pos) + 1) + 1
                where = f" ({path})" if path else ""
                return (f"{m.group(1) or m.group(2)} at line {line} column {column}{where}: glTF allows only "
                        "finite numbers")
    return f"a non-finite number{f' at {path}' if path else ''}: glTF allows only finite numbers"


class GltfDocument:
    """A parsed .gltf/.glb: ``json`` (the dict), ``buffers`` (one read-only memoryview each) and decoders."""

    def __init__(self, path: str | Path, *, allow_external_uris: bool | None = None):
        self.path = Path(path)
        self.file = str(path)
        self.allow_external_uris = external_uris_allowed(allow_external_uris)
        self.bin_chunk: memoryview | None = None
        # every local file a URI names, with its stat taken before it is read (scene_cache keys on them)
        self.local_files: list[tuple[Path, tuple | None]] = []
        self.json = self._parse_json(self._read_file())   # the JSON text is freed once parsed
        self._decoded_views: dict[int, memoryview] = {}   # EXT_meshopt_compression views, decoded once
        try:
            self.buffers = [self._buffer(i, b) for i, b in enumerate(self.array("buffers"))]
        except MemoryError:
            raise self.error("buffers", "not enough memory to read them") from None
        for i, img in enumerate(self.array("images")):
            if isinstance(img, dict) and "uri" in img:
                self._uri_path(img["uri"], f"images[{i}].uri")

    # ------------------------------------------------------------------ errors and typed JSON access
    def error(self, where: str, message: str) -> AssetError:
        return AssetError(f"{where}: {message}" if where else message, file=self.file)

    def array(self, key: str) -> list:
        """A top-level array (``[]`` when absent); anything but a list is an error."""
        v = self.json.get(key, [])
        if not isinstance(v, list):
            raise self.error(key, f"must be an array, not {type(v).__name__}")
        return v

    def item(self, key: str, i, where: str = "") -> dict:
        """``json[key][i]`` as a dict; an index out of range or of the wrong type names ``where``."""
        arr = self.array(key)
        if not is_int(i) or not 0 <= i < len(arr):
            raise self.error(where or key, f"{key} index {i!r} out of range ({len(arr)} {key})")
        v = arr[i]
        if not isinstance(v, dict):
            raise self.error(f"{key}[{i}]", f"must be an object, not {type(v).__name__}")
        return v

    def integer(self, obj: dict, key: str, where: str, *, default=None, minimum: int = 0, maximum=None) -> int:
        v = obj.get(key, default)
        if v is None:
            raise self.error(where, f"missing {key}")
        if not is_int(v) or v < minimum or (maximum is not None and v > maximum):
            hi = f", at most {maximum}" if maximum is not None else ""
            raise self.error(f"{where}.{key}", f"{v!r} is not an integer >= {minimum}{hi}")
        return v

    # ------------------------------------------------------------------ file, GLB, JSON, buffers
    def _read_file(self) -> bytes:
        """The JSON text: the whole file, or for a GLB its JSON chunk (chunks are read one by one, each only
        after its length was checked against the file size; only a regular file is opened, never blocking)."""
        try:
            fd, size = open_regular(self.path)
        except FileProblem as exc:
            raise self.error("", f"unreadable: {exc}") from None
        try:
            head = read_exact(fd, 0, min(size, 20))
            if head[:4] == GLB_MAGIC:
                return self._glb_chunks(fd, size, head)
            text = read_exact(fd, 0, size)
            if self.path.suffix.lower() == ".glb" and text.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] != b"{":
                # named .glb but neither binary glTF nor JSON: say that, not a JSON parse error at line 1
                raise self.error("GLB header", f"not a GLB file: no 'glTF' magic, it starts with {text[:12]!r}")
            return text
        except FileProblem as exc:
            raise self.error("", f"unreadable: {exc}") from None
        except OSError as exc:
            raise self.error("", f"unreadable: {exc.strerror or exc}") from None
        finally:
            os.close(fd)

    def _glb_chunks(self, fd: int, size: int, raw: bytes) -> bytes:
        if size < 20:
            raise self.error("GLB header", f"file has {size} bytes, a GLB needs at least 20")
        _, version, length = struct.unpack_from("<4sII", raw, 0)
        if version != 2:
            raise self.error("GLB header", f"version {version}, only glTF 2 is supported")
        if length != size:
            raise self.error("GLB header", f"length {length} != file size {size}")
        json_text = None
        off, k = 12, 0
        while off < size:
            if off + 8 > size:
                raise self.error(f"GLB chunk {k}", f"header at byte {off} runs past the end ({size} bytes)")
            n, kind = struct.unpack("<II", read_exact(fd, off, 8))
            if n > size - off - 8:
                raise self.error(f"GLB chunk {k}", f"length {n} at byte {off} runs past the end ({size} bytes)")
            if k == 0 and kind != CHUNK_JSON:
                raise self.error("GLB chunk 0", f"type 0x{kind:08x} is not JSON")
            if kind == CHUNK_JSON and k == 0:
                json_text = read_exact(fd, off + 8, n)
            elif kind == CHUNK_BIN and k == 1:
                self.bin_chunk = memoryview(read_exact(fd, off + 8, n)).toreadonly()
            off += 8 + n
            k += 1
        if json_text is None:
            raise self.error("GLB", "no JSON chunk")
        return json_text

    def _parse_json(self, text: bytes) -> dict:
        problem = limits.exceeded("json_values", limits.json_values(text))
        if problem:
            raise self.error("JSON", problem)
        try:
            d = _loads(text)
        except _NonFiniteNumber as exc:
            raise self.error("JSON", str(exc)) from None
        except MemoryError:
            raise self.error("JSON", f"not enough memory to parse {len(text)} bytes") from None
        except UnicodeDecodeError as exc:
            raise self.error("JSON", f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise self.error("JSON", f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
        except RecursionError:
            raise self.error("JSON", "nested too deeply") from None
        if not isinstance(d, dict):
            raise self.error("JSON", f"top level must be an object, not {type(d).__name__}")
        asset = d.get("asset")
        version = asset.get("version") if isinstance(asset, dict) else None
        if not isinstance(version, str) or not version.startswith("2."):
            raise self.error("asset.version", f"{version!r}: only glTF 2.x is supported")
        return d

    def _uri_path(self, uri, where: str) -> Path | None:
        """The local file a URI names (None for ``data:``); outside the model's folder is refused unless allowed."""
        if not isinstance(uri, str):
            raise self.error(where, f"must be a string, not {type(uri).__name__}")
        if uri.startswith("data:"):
            return None
        scheme = uri.split(":", 1)[0] if ":" in uri else ""
        if scheme and len(scheme) > 1 and "/" not in scheme:
            raise self.error(where, f"URI scheme {scheme!r} is not supported (only relative paths and data:)")
        rel = unquote(uri)
        if "\x00" in rel:
            raise self.error(where, "URI contains a NUL byte")
        folder = self.path.resolve().parent
        target = (folder / rel).resolve()
        inside = not Path(rel).is_absolute() and target.is_relative_to(folder)
        if not inside and not self.allow_external_uris:
            raise self.error(where, f"{uri!r} points outside the model's folder; refused (allow it with "
                                    f"allow_external_uris=True or {ALLOW_EXTERNAL_ENV}=1)")
        self.local_files.append((target, file_stat(target)))
        return target

    def _buffer(self, i: int, b) -> memoryview:
        where = f"buffers[{i}]"
        if not isinstance(b, dict):
            raise self.error(where, f"must be an object, not {type(b).__name__}")
        n = self.integer(b, "byteLength", where, minimum=1)
        if "uri" not in b and _meshopt_fallback(b):
            # EXT_meshopt_compression: a placeholder whose views are all compressed elsewhere (view_range decodes
            # them); its byteLength is never allocated, and a view that reads it uncompressed is an error there
            return memoryview(b"").toreadonly()
        if "uri" not in b:
            if self.bin_chunk is None or i != 0:
                raise self.error(where, "has no uri and there is no GLB BIN chunk for it")
            data = self.bin_chunk
            source = "the GLB BIN chunk"
        else:
            target = self._uri_path(b["uri"], f"{where}.uri")
            if target is None:
                head, _, payload = b["uri"].partition(",")
                if not head.endswith(";base64"):
                    raise self.error(f"{where}.uri", "data: URI is not base64")
                if len(payload) * 3 // 4 < n:
                    raise self.error(f"{where}.uri", f"data: URI holds at most {len(payload) * 3 // 4} bytes, "
                                                      f"byteLength says {n}")
                try:
                    data = memoryview(base64.b64decode(payload, validate=True))
                except (binascii.Error, ValueError):
                    raise self.error(f"{where}.uri", "data: URI is not valid base64") from None
                source = "its data: URI"
            else:
                try:
                    data = memoryview(read_regular(target, limit=n)[0])
                except FileProblem as exc:
                    raise self.error(f"{where}.uri", f"cannot read {b['uri']!r}: {exc}") from None
                source = repr(b["uri"])
        if len(data) < n:
            raise self.error(where, f"byteLength {n} but {source} has {len(data)} bytes")
        return data[:n].toreadonly()

    # ------------------------------------------------------------------ accessors
    def element_layout(self, acc: dict, where: str) -> tuple[np.dtype, tuple[int, ...], int, int]:
        """(component dtype, element shape, column stride, element size in bytes) of an accessor."""
        ct = acc.get("componentType")
        if not is_int(ct) or ct not in COMPONENT_DTYPES:
            raise self.error(f"{where}.componentType", f"unknown component type {ct!r}")
        tp = acc.get("type")
        if not isinstance(tp, str) or tp not in TYPE_SHAPES:
            raise self.error(f"{where}.type", f"unknown type {tp!r}")
        dt, shape = COMPONENT_DTYPES[ct], TYPE_SHAPES[tp]
        if len(shape) == 2:  # matrix columns start on 4-byte boundaries
            col = -(-shape[0] * dt.itemsize // 4) * 4
            return dt, shape, col, col * shape[1]
        n = shape[0] if shape else 1
        return dt, shape, n * dt.itemsize, n * dt.itemsize

    def view_range(self, v_i, where: str) -> tuple[memoryview, int | None]:
        """The bytes of buffer view ``v_i`` and its byteStride (None when absent), bounds-checked."""
        view = self.item("bufferViews", v_i, where)
        vw = f"bufferViews[{v_i}]"
        b_i = view.get("buffer")
        self.item("buffers", b_i, f"{vw}.buffer")
        off = self.integer(view, "byteOffset", vw, default=0)
        n = self.integer(view, "byteLength", vw, minimum=1)
        ext = view.get("extensions", {}).get(MESHOPT) if isinstance(view.get("extensions"), dict) else None
        buf = self.buffers[b_i]
        if ext is not None:   # the decoded bytes are the view's content; its byteStride applies as usual
            data = self._meshopt_view(v_i, ext, n)
        elif not len(buf) and _meshopt_fallback(self.json["buffers"][b_i]):
            raise self.error(vw, f"reads buffers[{b_i}], an {MESHOPT} fallback buffer, without being compressed")
        elif off + n > len(buf):
            raise self.error(vw, f"bytes {off}..{off + n} lie outside buffers[{b_i}] ({len(buf)} bytes)")
        else:
            data = buf[off:off + n]
        stride = None
        if "byteStride" in view:
            stride = self.integer(view, "byteStride", vw, minimum=4, maximum=252)
            if stride % 4:
                raise self.error(f"{vw}.byteStride", f"{stride} is not a multiple of 4")
        return data, stride

    def _meshopt_view(self, v_i: int, ext, n: int) -> memoryview:
        """The bytes of an ``EXT_meshopt_compression`` view, decoded by meshoptimizer (the ``meshopt`` package)
        once per view; every size is checked against the file before the decoder runs."""
        if v_i in self._decoded_views:
            return self._decoded_views[v_i]
        w = f"bufferViews[{v_i}].extensions.{MESHOPT}"
        if not isinstance(ext, dict):
            raise self.error(w, "must be an object")
        b_i = ext.get("buffer")
        self.item("buffers", b_i, f"{w}.buffer")
        off = self.integer(ext, "byteOffset", w, default=0)
        length = self.integer(ext, "byteLength", w, minimum=1)
        stride = self.integer(ext, "byteStride", w, minimum=1, maximum=256)
        count = self.integer(ext, "count", w, minimum=1)
        mode, filt = ext.get("mode"), ext.get("filter", "NONE")
        if mode not in MESHOPT_MODES:
            raise self.error(f"{w}.mode", f"{mode!r} is not one of {', '.join(MESHOPT_MODES)}")
        if filt not in MESHOPT_FILTERS:
            raise self.error(f"{w}.filter", f"{filt!r} is not one of {', '.join(MESHOPT_FILTERS)}")
        if (mode == "ATTRIBUTES" and stride % 4) or (mode != "ATTRIBUTES" and stride not in (2, 4)):
            raise self.error(f"{w}.byteStride", f"{stride} is not allowed for mode {mode}")
        if count * stride != n:
            raise self.error(w, f"count {count} x byteStride {stride} = {count * stride}, but the view's "
                                f"byteLength is {n}")
        if n > MAX_ZERO_FILL_BYTES:
            raise self.error(w, f"decodes to {n} bytes; refused (more than {MAX_ZERO_FILL_BYTES})")
        src = self.buffers[b_i]
        if off + length > len(src):
            raise self.error(w, f"bytes {off}..{off + length} lie outside buffers[{b_i}] ({len(src)} bytes)")
        try:
            import meshopt  # imported here: only files that use the extension need it
        except ImportError:
            raise self.error(w, "decoding it needs the meshopt package (pip install meshopt)") from None

        try:
            rows = meshopt.decode_gltf_buffer(bytes(src[off:off + length]), count, stride, mode,
                                              None if filt == "NONE" else filt)
        except Exception as exc:  # noqa: BLE001 - the decoder's own reason, in one line naming the view
            raise self.error(w, f"meshoptimizer cannot decode it: {str(exc).splitlines()[0][:120]}") from None
        raw = np.ascontiguousarray(rows)
        if mode != "ATTRIBUTES":   # the decoder gives indices back as numbers: lay them out as the view's bytes
            raw = raw.astype("<u4" if stride == 4 else "<u2")
        data = memoryview(raw.tobytes()).toreadonly()
        if len(data) != n:
            raise self.error(w, f"decoded to {len(data)} bytes, expected {n}")
        self._decoded_views[v_i] = data
        return data

    def accessor(self, i, where: str = "") -> np.ndarray:
        """Decode accessor ``i``: shape (count,) + element shape (MATn: (count, n, n) with M[:, c] = column c,
        i.e. M @ v), float32 for floats and normalized integers, the integer dtype otherwise. Sparse values
        are applied. ``where`` names the referencing place in errors (e.g. ``meshes[0].primitives[1].indices``).
        """
        acc = self.item("accessors", i, where)
        aw = f"{where} (accessors[{i}])" if where else f"accessors[{i}]"
        dt, shape, col, elem = self.element_layout(acc, aw)
        count = self.integer(acc, "count", aw, minimum=0)
        if "bufferView" in acc:
            data, stride = self.view_range(acc["bufferView"], f"{aw}.bufferView")
            off = self.integer(acc, "byteOffset", aw, default=0)
            stride = stride or elem
            if stride < elem:
                raise self.error(aw, f"byteStride {stride} is smaller than the element size {elem}")
            end = off + stride * (count - 1) + elem if count else off
            if end > len(data):
                raise self.error(aw, f"{count} elements end at byte {end} of bufferViews[{acc['bufferView']}] "
                                     f"({len(data)} bytes)")
            rows = np.ndarray((count, elem), np.uint8, data, off, (stride, 1)) if count else np.zeros((0, elem),
                                                                                                     np.uint8)
            out = _decode_rows(rows, dt, shape, col)
        else:
            if count * elem > MAX_ZERO_FILL_BYTES:
                raise self.error(aw, f"count {count} without a bufferView would need {count * elem} bytes")
            out = np.zeros((count,) + shape, dt)
        if "sparse" in acc:
            self._apply_sparse(acc["sparse"], out, dt, shape, col, elem, count, aw)
        if acc.get("normalized") is True and dt.kind in "iu":
            out = _normalize(out, dt)
        elif dt.kind == "f":
            out = out.astype(np.float32, copy=False)
        return out

    def _apply_sparse(self, sp, out, dt, shape, col, elem, count, aw) -> None:
        sw = f"{aw}.sparse"
        if not isinstance(sp, dict):
            raise self.error(sw, "must be an object")
        n = self.integer(sp, "count", sw, minimum=1, maximum=count)
        ind, val = sp.get("indices"), sp.get("values")
        if not isinstance(ind, dict) or not isinstance(val, dict):
            raise self.error(sw, "needs indices and values objects")
        ict = ind.get("componentType")
        if not is_int(ict) or ict not in (5121, 5123, 5125):
            raise self.error(f"{sw}.indices.componentType", f"{ict!r} is not an unsigned integer type")
        idt = COMPONENT_DTYPES[ict]
        idx = self._packed(ind, n, idt.itemsize, f"{sw}.indices").view(idt).reshape(n).astype(np.int64)
        if (idx >= count).any() or (np.diff(idx) <= 0).any():
            raise self.error(f"{sw}.indices", f"must be strictly increasing and < count {count}")
        rows = self._packed(val, n, elem, f"{sw}.values").reshape(n, elem)
        out[idx] = _decode_rows(rows, dt, shape, col)

    def _packed(self, part: dict, n: int, elem: int, where: str) -> np.ndarray:
        data, _ = self.view_range(part.get("bufferView"), f"{where}.bufferView")
        off = self.integer(part, "byteOffset", where, default=0)
        if off + n * elem > len(data):
            raise self.error(where, f"{n} elements end at byte {off + n * elem} of its bufferView "
                                    f"({len(data)} bytes)")
        return np.frombuffer(data, np.uint8, n * elem, off).copy()

    # ------------------------------------------------------------------ scene lookups
    def node(self, i) -> dict:
        return self.item("nodes", i)

    def mesh(self, i) -> dict:
        return self.item("meshes", i)

    def animation(self, i) -> dict:
        return self.item("animations", i)

    def mesh_target_count(self, m_i) -> int:
        """Morph target count of mesh ``m_i`` (of its first primitive; the validator checks they agree)."""
        prims = self.mesh(m_i).get("primitives")
        if not isinstance(prims, list) or not prims or not isinstance(prims[0], dict):
            return 0
        t = prims[0].get("targets", [])
        return len(t) if isinstance(t, list) else 0

    def assimp_node_name(self, n_i) -> str:
        """The name Assimp 5.2.5 gives node ``n_i``: its own name, or ``nodes[i]`` when it has none."""
        name = self.node(n_i).get("name")
        return name if isinstance(name, str) and name else f"nodes[{n_i}]"

    def node_target_count(self, n_i) -> int:
        m = self.node(n_i).get("mesh")
        return self.mesh_target_count(m) if m is not None else 0

    def channels(self, a_i) -> list[Channel]:
        """The channels of animation ``a_i`` (indices as the file has them; the validator range-checks)."""
        out = []
        for c_i, ch in enumerate(self.animation(a_i).get("channels", [])):
            cw = f"animations[{a_i}].channels[{c_i}]"
            if not isinstance(ch, dict) or not isinstance(ch.get("target"), dict):
                raise self.error(cw, "needs a target object")
            s = self.integer(ch, "sampler", cw)
            node = ch["target"].get("node")
            if node is not None and not is_int(node):
                raise self.error(f"{cw}.target.node", f"{node!r} is not an integer")
            path = ch["target"].get("path")
            if path == "pointer":   # KHR_animation_pointer: no node; gltf_animation skips it with a warning
                node = None
            elif path not in TARGET_PATHS:
                raise self.error(f"{cw}.target.path", f"unknown path {path!r}")
            out.append(Channel(sampler=s, node=node, path=path))
        return out

    def interpolation(self, sampler: dict, where: str) -> str:
        interp = sampler.get("interpolation", "LINEAR")
        if interp not in INTERPOLATIONS:
            raise self.error(f"{where}.interpolation", f"unknown interpolation {interp!r} "
                                                       f"(glTF has {', '.join(INTERPOLATIONS)})")
        return interp

    def sampler(self, a_i, s_i, width: int | None = None) -> Sampler:
        """Sampler ``s_i`` of animation ``a_i``. ``width`` reshapes scalar outputs (a weights channel: the
        target count); else the accessor's own element width is kept."""
        samplers = self.animation(a_i).get("samplers", [])
        sw = f"animations[{a_i}].samplers[{s_i}]"
        if not isinstance(samplers, list) or not is_int(s_i) or not 0 <= s_i < len(samplers):
            n = len(samplers) if isinstance(samplers, list) else 0
            raise self.error(sw, f"sampler index out of range ({n} samplers)")
        s = samplers[s_i]
        if not isinstance(s, dict):
            raise self.error(sw, "must be an object")
        interp = self.interpolation(s, sw)
        times = self.accessor(s.get("input"), f"{sw}.input")
        if times.ndim != 1 or times.dtype.kind != "f":
            raise self.error(f"{sw}.input", "must be a SCALAR float accessor")
        out = self.accessor(s.get("output"), f"{sw}.output")
        out = out.reshape(len(out), -1) if out.ndim != 1 else out.reshape(-1, width or 1)
        return Sampler(input=times.astype(np.float64), output=out.astype(np.float64), interpolation=interp)


def _meshopt_fallback(b) -> bool:
    ext = b.get("extensions") if isinstance(b, dict) else None
    ext = ext.get(MESHOPT) if isinstance(ext, dict) else None
    return isinstance(ext, dict) and ext.get("fallback") is True


def _decode_rows(rows: np.ndarray, dt: np.dtype, shape: tuple, col: int) -> np.ndarray:
    """(count, elem) raw bytes -> (count,) + shape values of dtype ``dt`` (matrices: columns padded to ``col``)."""
    count = len(rows)
    if len(shape) == 2:
        n = shape[0]
        cols = np.ascontiguousarray(rows).reshape(count, shape[1], col)[:, :, :n * dt.itemsize]
        vals = np.ascontiguousarray(cols).view(dt).reshape(count, shape[1], n)
        return vals.transpose(0, 2, 1).copy()   # (count, row, column)
    return np.ascontiguousarray(rows).view(dt).reshape((count,) + shape).copy()


def _normalize(a: np.ndarray, dt: np.dtype) -> np.ndarray:
    """glTF normalized integers: unsigned c / max; signed max(c / max, -1)."""
    f = a.astype(np.float32) / np.float32(np.iinfo(dt).max)
    return np.maximum(f, np.float32(-1.0)) if dt.kind == "i" else f
