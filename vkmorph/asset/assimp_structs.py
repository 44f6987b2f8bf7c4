"""ctypes views over libassimp 5.2.5's raw ``aiScene`` that pyassimp 5.2.5 gets wrong.

pyassimp's ``structs.Bone`` lacks the ``mArmature`` and ``mNode`` pointers that assimp 5.2.5's ``aiBone`` has
between ``mNumWeights`` and ``mWeights``, so ``pyassimp.load()`` dies with "NULL pointer access" on every skinned
file. We therefore never call ``pyassimp.load()``: we take the raw scene pointer from pyassimp's library handle
and read bones through the corrected ``Bone5`` below (other structs from pyassimp match 5.2.5 and are reused).

Animation keys (``aiVectorKey`` 24 bytes, ``aiQuatKey`` 24 bytes) match pyassimp and were checked on real files:
key times are increasing and finite. Interpolation modes are not carried by assimp 5.2.5 keys.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, Structure, c_float, c_uint, c_void_p

from pyassimp import structs as S


class Bone5(Structure):
    _fields_ = [
        ("mName", S.String),
        ("mNumWeights", c_uint),
        ("mArmature", c_void_p),  # aiNode*, missing in pyassimp 5.2.5
        ("mNode", c_void_p),      # aiNode*, missing in pyassimp 5.2.5
        ("mWeights", POINTER(S.VertexWeight)),
        ("mOffsetMatrix", S.Matrix4x4),
    ]


def bones_of(mesh: S.Mesh) -> list[Bone5]:
    if not mesh.mNumBones:
        return []
    arr = ctypes.cast(mesh.mBones, POINTER(POINTER(Bone5)))
    return [arr[i].contents for i in range(mesh.mNumBones)]


def node_anims_of(anim: S.Animation) -> list[S.NodeAnim]:
    if not anim.mNumChannels:
        return []
    return [anim.mChannels[i].contents for i in range(anim.mNumChannels)]


def string(s: S.String) -> str:
    return bytes(s.data[: s.length]).decode("utf-8", errors="replace")


def vec3_array(ptr, n: int):
    """(n, 3) float32 numpy copy of an ``aiVector3D*`` (None when the pointer is NULL)."""
    import numpy as np

    if not ptr or n == 0:
        return None
    buf = ctypes.cast(ptr, POINTER(c_float * (3 * n))).contents
    return np.frombuffer(buf, dtype=np.float32).reshape(n, 3).copy()


def matrix(m: S.Matrix4x4):
    import numpy as np

    return np.array([[m.a1, m.a2, m.a3, m.a4], [m.b1, m.b2, m.b3, m.b4], [m.c1, m.c2, m.c3, m.c4],
                     [m.d1, m.d2, m.d3, m.d4]], dtype=np.float64)
