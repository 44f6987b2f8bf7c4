"""What moves a crowd in ``vkmorph demo --crowd N``: N instances on a grid on the ground, each at its own phase
and speed of the same animation (the built-in scene's sine drivers, or the file's clip).

Two ways (``--crowd-anim``): "gpu" (default) plays the clip on the GPU (``render/crowd_anim.CrowdAnimation``,
the renderer's ``animation``): ``play`` once per mode change, then per frame only the clock
(``renderer.animation_time``) and the morph weights, sampled on the CPU vectorized (``sample_weights``), so the
CPU cost per frame no longer grows with the skeleton work of every instance. The sine mode is baked once into a
clip (``sine_clip``: LINEAR keys every ``SINE_KEY_DT`` s over its 30 s loop) for the GPU. "cpu" poses every
instance here (``CrowdState.play`` / ``set_all_weights`` / ``set_local``: vectorized numpy, ~70 us of CPU per
instance per frame for a skinned character)."""

from __future__ import annotations

import math

import numpy as np

from ..anim.crowd import CrowdState
from ..asset.model import AnimationClip, MorphWeightChannel, NodeChannel, SceneAsset
from .driver import SINE_PERIOD, ModeClock

GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0     # phases spread evenly over the loop, never repeating a neighbour's
SPACING = 1.6                             # grid pitch in units of one instance's footprint (x, z extent)
MAX_CROWD = 100_000
SINE_CLIP = "sine"
SINE_KEY_DT = 1.0 / 32.0                  # key spacing of the baked sine clip (linear: < 1e-3 off the sine)


def _sine_rotations(t: np.ndarray, k: int) -> np.ndarray:
    a = 0.5 * (np.sin(2 * np.pi * (t / 2.5 + 0.3 * k)) + 1.0)
    ang = np.radians(-40 + 80 * a) / 2               # z rotation from -40 to 40 degrees
    return np.stack([np.zeros_like(ang), np.zeros_like(ang), np.sin(ang), np.cos(ang)], -1)


def sine_clip(scene: SceneAsset, morph_nodes, slot_counts) -> AnimationClip:
    """The sine drivers as a clip for the GPU animation: per morph node its first two weights, per "...Bone1"
    node its z rotation, LINEAR keys every SINE_KEY_DT over SINE_PERIOD."""
    t = np.arange(int(round(SINE_PERIOD / SINE_KEY_DT)) + 1) * SINE_KEY_DT
    morph = []
    for k, (node, n) in enumerate(zip(morph_nodes, slot_counts)):
        m = min(n, 2)
        if m:
            w = np.stack([0.5 * (np.sin(2 * np.pi * (t / period + offset)) + 1.0)
                          for period, offset in ((2.0, 0.25 * k), (3.0, 0.5 + 0.25 * k))[:m]], -1)
            morph.append(MorphWeightChannel(node, t.astype(np.float32), w.astype(np.float32)))
    bones = [NodeChannel(k, "rotation", t.astype(np.float32), _sine_rotations(t, k).astype(np.float32))
             for k, n in enumerate(scene.nodes) if n.name.endswith("Bone1")]
    return AnimationClip(SINE_CLIP, float(SINE_PERIOD), morph, bones)


def grid_transforms(count: int, footprint: float) -> np.ndarray:
    """(count, 4, 4) translations on a square grid in the x-z plane, centred on the origin."""
    k = int(math.ceil(math.sqrt(count)))
    i = np.arange(count)
    pitch = SPACING * max(footprint, 1e-3)
    m = np.repeat(np.eye(4)[None], count, 0)
    m[:, 0, 3] = (i % k - (k - 1) / 2) * pitch
    m[:, 2, 3] = (i // k - (k - 1) / 2) * pitch
    return m


class CrowdDriver(ModeClock):
    """Animates every instance of ``crowd``: mode "sine" (the built-in scene's drivers of app/driver.py, each
    instance shifted by its own phase) or a clip name, instance i at ``phase[i] x loop + speed[i] x time``.
    ``renderer``: a ``SceneRenderer`` with ``animation="gpu"`` whose ``CrowdAnimation`` has the file's clips (and
    ``sine_clip`` first with ``sine``): the skeletons are then posed on the GPU (module docstring)."""

    SINE, WRAPS = "sine", False     # one clock for every instance's own speed: no wrap (ModeClock)

    def __init__(self, scene: SceneAsset, crowd: CrowdState, footprint: float, *, sine: bool, renderer=None):
        self._init_modes(scene, sine)
        self.crowd = crowd
        self.renderer = renderer
        self.animation = renderer.animation if renderer is not None else None
        self._playing: str | None = None       # GPU: the mode the instances were last told to play
        crowd.set_transforms(grid_transforms(crowd.count, footprint))
        self.phase = (np.arange(crowd.count) * GOLDEN) % 1.0          # fraction of the loop
        self.speed = 0.8 + 0.4 * ((np.arange(crowd.count) * GOLDEN * GOLDEN) % 1.0)   # 0.8 .. 1.2
        pose = crowd.pose
        self._weight_nodes = [(pose.slice_of(n), k) for k, n in enumerate(pose.morph_nodes)]
        self._bones = [k for k, n in enumerate(scene.nodes) if n.name.endswith("Bone1")]
        self.apply()

    def _weight_range(self) -> tuple[float, float]:
        return self.crowd.pose.weight_range     # overrides hold on every instance

    @property
    def on_gpu(self) -> bool:
        return self.animation is not None

    def _apply_gpu(self, name: str, length: float) -> None:
        anim = self.animation
        if name != self._playing:
            if name == "static":
                anim.stop()
            else:
                anim.play(name, phase=self.phase * length, speed=self.speed)
            self._playing = name
        self.renderer.animation_time = self.time
        anim.sample_weights(self.time)

    def apply(self) -> None:
        name, crowd = self.mode_name, self.crowd
        length = self.loop_length
        t = self.speed * self.time + self.phase * length
        if self.animation is not None:
            self._apply_gpu(name, length)
        elif name == "sine":
            W = np.array(crowd.weights, np.float64)
            for sl, k in self._weight_nodes:     # the same drivers as SceneDriver's, per instance time
                n = sl.stop - sl.start
                for j, (period, offset) in enumerate(((2.0, 0.25 * k), (3.0, 0.5 + 0.25 * k))[:n]):
                    W[:, sl.start + j] = 0.5 * (np.sin(2 * np.pi * (t / period + offset)) + 1.0)
            crowd.set_all_weights(W)
            if self._bones:
                R = np.array(crowd.local[1])
                for k in self._bones:
                    a = 0.5 * (np.sin(2 * np.pi * (t / 2.5 + 0.3 * k)) + 1.0)
                    ang = np.radians(-40 + 80 * a) / 2               # z rotation from -40 to 40 degrees
                    R[:, k] = np.stack([np.zeros_like(ang), np.zeros_like(ang), np.sin(ang), np.cos(ang)], -1)
                crowd.set_local(rotation=R)
        elif name != "static":
            crowd.play(self.scene.clip(name), t % length if length > 0 else t)
        if self.overrides:
            W = np.array(crowd.weights, np.float64)
            for (node, k), v in self.overrides.items():
                W[:, crowd.pose.slice_of(node).start + k] = v
            crowd.set_all_weights(W)


__all__ = ["CrowdDriver", "grid_transforms", "sine_clip", "MAX_CROWD", "SINE_CLIP"]
