"""Camera and light matrices for Vulkan clip space (y down, depth 0..1), column-vector convention."""

from __future__ import annotations

import numpy as np


def look_at(eye, target, up=(0.0, 1.0, 0.0)) -> np.ndarray:
    eye, target, up = (np.asarray(x, np.float64) for x in (eye, target, up))
    f = target - eye
    f /= np.linalg.norm(f)
    if abs(np.dot(f, up / np.linalg.norm(up))) > 0.999:
        up = np.array([0.0, 0.0, 1.0])
    s = np.cross(f, up)
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


def perspective(fovy_rad: float, aspect: float, near: float, far: float) -> np.ndarray:
    f = 1.0 / np.tan(fovy_rad / 2)
    m = np.zeros((4, 4))
    m[0, 0] = f / aspect
    m[1, 1] = -f                      # Vulkan: +y points down in clip space
    m[2, 2] = far / (near - far)      # depth 0..1
    m[2, 3] = near * far / (near - far)
    m[3, 2] = -1.0
    return m


def orthographic(half: float, near: float, far: float) -> np.ndarray:
    m = np.eye(4)
    m[0, 0] = 1.0 / half
    m[1, 1] = -1.0 / half
    m[2, 2] = 1.0 / (near - far)
    m[2, 3] = near / (near - far)
    return m


MAX_PITCH = 1.4                 # radians: the orbit never goes over the pole
FLOOR_CLEARANCE = 0.02          # the eye stays this far above ``floor``, as a fraction of the orbit distance


class OrbitCamera:
    """Orbits ``target`` at ``distance``; yaw/pitch in radians. Framed from scene bounds by ``frame``.

    ``floor`` (world y of the ground plane, or None): the pitch is clamped so the eye stays above it, whatever
    the distance (zooming out raises the lowest pitch). ``extent``: the scene's radius, so the far plane keeps
    the ground's faded rim in view when zoomed in."""

    def __init__(self, target, distance: float, yaw: float = 0.35, pitch: float = 0.3,
                 fovy: float = np.radians(45.0), floor: float | None = None, extent: float = 0.0):
        self.target = np.asarray(target, np.float64)
        self.distance = float(distance)
        self.yaw, self.fovy, self.floor, self.extent = float(yaw), float(fovy), floor, float(extent)
        self._pitch = float(pitch)

    @classmethod
    def frame(cls, lo: np.ndarray, hi: np.ndarray, **kw) -> OrbitCamera:
        """The camera that fits the box [lo, hi] (its bounding sphere) in the 45-degree field of view."""
        center = (np.asarray(lo, np.float64) + hi) / 2
        radius = max(float(np.linalg.norm(np.asarray(hi, np.float64) - lo)) / 2, 1e-3)
        return cls(target=center, distance=radius / np.sin(np.radians(45.0) / 2) * 1.05, extent=radius, **kw)

    @property
    def min_pitch(self) -> float:
        """The lowest pitch that keeps the eye ``FLOOR_CLEARANCE * distance`` above ``floor``."""
        if self.floor is None:
            return -MAX_PITCH
        s = (self.floor - self.target[1]) / max(self.distance, 1e-12) + FLOOR_CLEARANCE
        return float(np.clip(np.arcsin(np.clip(s, -1.0, 1.0)), -MAX_PITCH, MAX_PITCH))

    @property
    def pitch(self) -> float:
        return max(self._pitch, self.min_pitch)

    @pitch.setter
    def pitch(self, value: float) -> None:
        self._pitch = float(np.clip(value, self.min_pitch, MAX_PITCH))

    @property
    def eye(self) -> np.ndarray:
        p = self.pitch
        d = np.array([np.cos(p) * np.sin(self.yaw), np.sin(p), np.cos(p) * np.cos(self.yaw)])
        return self.target + self.distance * d

    def view_proj(self, aspect: float) -> np.ndarray:
        near = max(self.distance * 0.01, 1e-4)
        far = self.distance * 10 + self.extent * 20
        return perspective(self.fovy, aspect, near, far) @ look_at(self.eye, self.target)


def light_view_proj(direction: np.ndarray, center: np.ndarray, radius: float) -> np.ndarray:
    """Orthographic directional light covering a sphere of ``radius`` around ``center``."""
    d = np.asarray(direction, np.float64)
    d = d / np.linalg.norm(d)
    eye = center - d * radius * 2.0
    return orthographic(radius, radius * 0.5, radius * 3.5) @ look_at(eye, center)
