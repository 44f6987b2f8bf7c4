"""Keyframe sampling: STEP, LINEAR (seed 000) and glTF CUBICSPLINE, for vectors and quaternions (slerp).

Times before the first key hold the first value; after the last, the last value (the player wraps time first
when looping).
"""

from __future__ import annotations

import numpy as np


def _locate(times: np.ndarray, t: float) -> tuple[int, float]:
    """Index i of the segment [times[i], times[i+1]] holding t and the fraction within it."""
    k = len(times)
    if k == 1 or t <= times[0]:
        return 0, 0.0
    if t >= times[-1]:
        return k - 1, 0.0
    i = int(np.searchsorted(times, t, side="right")) - 1
    span = times[i + 1] - times[i]
    return i, float((t - times[i]) / span) if span > 0 else 0.0


def slerp(q0: np.ndarray, q1: np.ndarray, a: float) -> np.ndarray:
    """Shortest-path spherical interpolation of unit quaternions (x, y, z, w)."""
    d = float(np.dot(q0, q1))
    if d < 0.0:
        q1, d = -q1, -d
    if d > 1.0 - 1e-9:  # nearly identical: lerp avoids dividing by sin(~0)
        q = q0 + a * (q1 - q0)
    else:
        th = np.arccos(d)
        q = (np.sin((1 - a) * th) * q0 + np.sin(a * th) * q1) / np.sin(th)
    return q / np.linalg.norm(q)


def sample(times: np.ndarray, values: np.ndarray, t: float, interpolation: str = "LINEAR",
           quaternion: bool = False) -> np.ndarray:
    """Value at time ``t``. For CUBICSPLINE ``values`` holds (in-tangent, value, out-tangent) per key."""
    times = np.asarray(times)
    i, a = _locate(times, t)
    cubic = interpolation == "CUBICSPLINE"
    val = (lambda k: values[3 * k + 1]) if cubic else (lambda k: values[k])
    last = len(times) - 1
    if interpolation == "STEP" or a == 0.0 or i >= last:
        out = np.array(val(i), np.float64)
    elif cubic:
        dt = times[i + 1] - times[i]
        p0, m0 = values[3 * i + 1], values[3 * i + 2] * dt
        p1, m1 = values[3 * (i + 1) + 1], values[3 * (i + 1)] * dt
        a2, a3 = a * a, a * a * a
        out = ((2 * a3 - 3 * a2 + 1) * p0 + (a3 - 2 * a2 + a) * m0 + (-2 * a3 + 3 * a2) * p1 + (a3 - a2) * m1)
    elif quaternion:
        out = slerp(np.asarray(val(i), np.float64), np.asarray(val(i + 1), np.float64), a)
    else:
        out = (1 - a) * np.asarray(val(i), np.float64) + a * np.asarray(val(i + 1), np.float64)
    if quaternion:
        n = np.linalg.norm(out)
        out = out / n if n > 0 else np.array([0.0, 0.0, 0.0, 1.0])
    return out
