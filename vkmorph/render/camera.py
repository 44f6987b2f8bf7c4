"""Camera and light matrices for Vulkan clip space (y down, depth 0..1), column-vector convention."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass
class OrbitCamera:
    """Orbits ``target`` at ``distance``; yaw/pitch in radians. Framed from scene bounds by ``frame``."""

    target: np.ndarray
    distance: float
    yaw: float = 0.35
    pitch: float = 0.3
    fovy: float = np.radians(45.0)

    @classmethod
    def frame(cls, lo: np.ndarray, hi: np.ndarray) -> OrbitCamera:
        center = (lo + hi) / 2
        radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3)
        return cls(target=center, distance=radius / np.sin(np.radians(45.0) / 2) * 1.05)

    @property
    def eye(self) -> np.ndarray:
        d = np.array([np.cos(self.pitch) * np.sin(self.yaw), np.sin(self.pitch),
                      np.cos(self.pitch) * np.cos(self.yaw)])
        return self.target + self.distance * d

    def view_proj(self, aspect: float) -> np.ndarray:
        near = max(self.distance * 0.01, 1e-4)
        return perspective(self.fovy, aspect, near, self.distance * 10) @ look_at(self.eye, self.target)


def light_view_proj(direction: np.ndarray, center: np.ndarray, radius: float) -> np.ndarray:
    """Orthographic directional light covering a sphere of ``radius`` around ``center``."""
    d = np.asarray(direction, np.float64)
    d = d / np.linalg.norm(d)
    eye = center - d * radius * 2.0
    return orthographic(radius, radius * 0.5, radius * 3.5) @ look_at(eye, center)
