"""What moves the scene in the demo: seed 003's sine drivers on the default scene, or the file's clips, plus
the user's manual weight overrides (applied last, so a raised weight stays raised while the rest animates)."""

from __future__ import annotations

import math

import numpy as np

from ..anim.player import AnimationPlayer, SineDriver
from ..anim.skeleton import Skeleton
from ..asset.model import SceneAsset
from ..morph.state import SceneMorphPose


def _quat_z(deg: float) -> np.ndarray:
    a = math.radians(deg) / 2
    return np.array([0.0, 0.0, math.sin(a), math.cos(a)])


SINE_PERIOD = 30.0   # seconds: the least common multiple of the sine drivers' periods (2, 3 and 2.5 s)


class ModeClock:
    """The demo's clock and modes, shared by ``SceneDriver`` and the crowd's ``CrowdDriver``: the modes (the sine
    drivers ``SINE`` first where the scene has them, then the file's clips), the time, pausing, cycling and the
    held weight overrides; a subclass poses in ``apply()`` and names its pose's weight range in
    ``_weight_range``. ``WRAPS``: keep ``time`` within the loop (a crowd does not: its instances play at their
    own speeds from one clock, which a wrap would make jump)."""

    SINE = "built-in sine animation"
    WRAPS = True

    def _init_modes(self, scene: SceneAsset, sine: bool) -> None:
        self.scene = scene
        self.modes: list[str] = ([self.SINE] if sine else []) + [a.name for a in scene.animations]
        self.mode = 0
        self.time = 0.0
        self.paused = False
        self.overrides: dict[tuple[int, int], float] = {}    # (node, target) -> weight held

    @property
    def mode_name(self) -> str:
        return self.modes[self.mode] if self.modes else "static"

    def cycle(self) -> str:
        if self.modes:
            self.mode = (self.mode + 1) % len(self.modes)
            self.time = 0.0
            self.apply()
        return self.mode_name

    @property
    def loop_length(self) -> float:
        """Seconds after which the current mode repeats: the clip's duration, or the sine drivers' common period
        (0 for a static scene or a clip of no length). With ``WRAPS`` ``time`` is kept within it, so what a
        timeline shows is the time the pose is sampled at."""
        name = self.mode_name
        if name == self.SINE:
            return SINE_PERIOD
        if name == "static":
            return 0.0
        return float(self.scene.clip(name).duration)

    def _wrap(self) -> None:
        length = self.loop_length
        if self.WRAPS and length > 0:
            self.time %= length

    def advance(self, dt: float) -> None:
        if not self.paused:
            self.time += dt
            self._wrap()
            self.apply()

    def step(self, dt: float = 1.0 / 30.0) -> None:
        self.time += dt
        self._wrap()
        self.apply()

    def set_override(self, node: int, target: int, value: float) -> float:
        """Hold ``target`` of ``node`` at ``value`` (the panel's sliders, UP / DOWN), clamped to the pose's weight
        range (the file's, at least [0, 1]: a file whose clips reach -1 or 2 can be set there); returns the value
        held."""
        lo, hi = self._weight_range()
        self.overrides[(node, target)] = min(max(value, lo), hi)
        self.apply()
        return self.overrides[(node, target)]

    def _weight_range(self) -> tuple[float, float]:
        raise NotImplementedError

    def apply(self) -> None:
        raise NotImplementedError


class SceneDriver(ModeClock):
    def __init__(self, scene: SceneAsset, pose: SceneMorphPose, skeleton: Skeleton, sine: bool):
        self._init_modes(scene, sine)
        self.pose, self.skeleton = pose, skeleton
        self.player = AnimationPlayer(scene, pose, skeleton)
        self._weight_drivers: dict[int, list[SineDriver]] = {}
        self._bone_drivers: dict[int, SineDriver] = {}
        if sine:
            for k, node in enumerate(pose.morph_nodes):
                self._weight_drivers[node] = [SineDriver(0.0, 1.0, phase=2.0, offset=0.25 * k),
                                              SineDriver(0.0, 1.0, phase=3.0, offset=0.5 + 0.25 * k)]
            for k, n in enumerate(scene.nodes):
                if n.name.endswith("Bone1"):
                    self._bone_drivers[k] = SineDriver(_quat_z(-40), _quat_z(40), phase=2.5, offset=0.3 * k)
        self.apply()

    def _weight_range(self) -> tuple[float, float]:
        return self.pose.weight_range

    def apply(self) -> None:
        name = self.mode_name
        if name == self.SINE:
            for node, drivers in self._weight_drivers.items():
                w = np.array(self.pose.weights(node), np.float32)
                for i, d in enumerate(drivers[: len(w)]):
                    w[i] = float(d.value(self.time))
                self.pose.set_weights(node, w)
            for node, d in self._bone_drivers.items():
                self.skeleton.set_trs(node, "rotation", d.rotation(self.time))
        elif name != "static":
            self.player.clip = self.scene.clip(name)
            self.player.time = self.time
            self.player.loop = True
            self.player.apply()
        by_node: dict[int, list[tuple[int, float]]] = {}
        for (node, t), v in self.overrides.items():
            by_node.setdefault(node, []).append((t, v))
        for node, pairs in by_node.items():
            w = np.array(self.pose.weights(node), np.float32)
            for t, v in pairs:
                w[t] = v
            self.pose.set_weights(node, w)
