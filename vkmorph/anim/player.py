"""AnimationPlayer (seed 000): advances time, samples clips, writes the scene's state (weights and node
transforms) through its setters.

It never touches the GPU; the render layer picks up changes through version numbers. Give it the state the
renderer draws: ``AnimationPlayer(scene, rt.state)`` (or ``rt`` itself, or ``rt.pose, rt.skeleton``), so the
runtime's draws and bounds follow the animation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..asset.model import AnimationClip, SceneAsset
from ..errors import UsageError
from ..morph.state import SceneMorphPose
from .sampler import sample
from .skeleton import Skeleton


class AnimationPlayer:
    def __init__(self, scene: SceneAsset, pose, skeleton: Skeleton | None = None):
        """``pose``: a ``SceneMorphPose``, or anything holding one with its skeleton (``SceneState``,
        ``MorphRuntime``: ``.pose`` and ``.skeleton``); ``skeleton``: the node transforms to animate (None with a
        bare pose: morph channels only)."""
        if not isinstance(pose, SceneMorphPose) and isinstance(getattr(pose, "pose", None), SceneMorphPose):
            skeleton = pose.skeleton if skeleton is None else skeleton
            pose = pose.pose
        if not isinstance(pose, SceneMorphPose):
            raise UsageError(f"AnimationPlayer needs a SceneMorphPose or a SceneState, got {type(pose).__name__}")
        self.scene, self.pose, self.skeleton = scene, pose, skeleton
        self.clip: AnimationClip | None = scene.animations[0] if scene.animations else None
        self.time = 0.0
        self.speed = 1.0
        self.loop = True
        self.playing = True

    @property
    def clip_names(self) -> list[str]:
        return [a.name for a in self.scene.animations]

    def play(self, clip: str | int | None = None, *, loop: bool = True, speed: float = 1.0,
             time: float = 0.0) -> None:
        if clip is not None:
            self.clip = self.scene.clip(clip)
        if self.clip is None:
            raise UsageError("the scene has no animations")
        self.loop, self.speed, self.time, self.playing = loop, speed, time, True
        self.apply()

    def pause(self) -> None:
        self.playing = False

    def resume(self) -> None:
        self.playing = True

    def advance(self, dt: float) -> None:
        """Move time by ``dt * speed`` seconds (when playing) and apply the clip at the new time."""
        if self.clip is None:
            return
        if self.playing:
            self.time += dt * self.speed
        self.apply()

    def local_time(self) -> float:
        d = self.clip.duration if self.clip else 0.0
        if self.loop and d > 0:
            return math.fmod(self.time, d) + (d if self.time < 0 else 0.0)
        return min(max(self.time, 0.0), d)

    def apply(self, t: float | None = None) -> None:
        """Sample every channel at ``t`` (default: current local time) into the pose and skeleton."""
        clip = self.clip
        if clip is None:
            return
        t = self.local_time() if t is None else t
        for ch in clip.morph_channels:
            if self.pose.has_targets(ch.node):
                w = sample(ch.times, ch.values, t, ch.interpolation)
                cur = self.pose.weights(ch.node)
                full = np.array(cur, np.float32)
                n = min(len(full), len(w))
                full[:n] = w[:n]
                self.pose.set_weights(ch.node, full)
        if self.skeleton is not None:
            for ch in clip.node_channels:
                v = sample(ch.times, ch.values, t, ch.interpolation, quaternion=ch.path == "rotation")
                self.skeleton.set_trs(ch.node, ch.path, v)


@dataclass
class SineDriver:
    """Seed 003's simple animation: ``lerp(From, To, 0.5 * (sin(2 pi f (t + shift)) + 1))``.

    ``phase`` is the period in seconds (f = 1 / phase) and ``offset`` a fraction of that period.
    """

    start: np.ndarray | float
    end: np.ndarray | float
    phase: float = 1.0
    offset: float = 0.0

    def value(self, t: float):
        f = 1.0 / self.phase
        shift = self.offset * self.phase
        a = 0.5 * (math.sin(2.0 * math.pi * f * (t + shift)) + 1.0)
        return (1 - a) * np.asarray(self.start, np.float64) + a * np.asarray(self.end, np.float64)

    def rotation(self, t: float) -> np.ndarray:
        """Quaternion slerp between ``start`` and ``end`` quaternions (x, y, z, w)."""
        from .sampler import slerp

        a = 0.5 * (math.sin(2.0 * math.pi * (t + self.offset * self.phase) / self.phase) + 1.0)
        return slerp(np.asarray(self.start, np.float64), np.asarray(self.end, np.float64), a)
