"""The demo's camera when a panel covers the left of the window: the model is framed in the part left free."""

from __future__ import annotations

import numpy as np

from ..render.camera import OrbitCamera


class BesidePanelCamera(OrbitCamera):
    """An ``OrbitCamera`` whose image is centred in the window's free part, right of a panel covering the
    fraction ``covered`` (0..1) of the window's width, and shrunk to fit it when that part is taller than wide.

    Done after the projection (a shift and a uniform scale in clip space), so orbiting, zooming, framing and
    the eye position stay the plain orbit camera's, and with ``covered = 0`` it is exactly that camera."""

    covered = 0.0

    @classmethod
    def of(cls, cam: OrbitCamera) -> BesidePanelCamera:
        out = cls.__new__(cls)
        out.__dict__.update(cam.__dict__)
        out.covered = 0.0
        return out

    def view_proj(self, aspect: float) -> np.ndarray:
        m = super().view_proj(aspect)
        c = float(np.clip(self.covered, 0.0, 0.8))
        if c <= 0.0:
            return m
        free_aspect = aspect * (1.0 - c)       # width / height of the free part
        k = min(1.0, free_aspect)              # the framed sphere fits the height; fit the free width too
        post = np.eye(4)
        post[0, 0] = post[1, 1] = k
        post[0, 3] = c                         # NDC x of the free part's centre: (c + (1 - c) / 2) * 2 - 1 = c
        # clip-space x' = k x + c w: the shift is multiplied by w so it survives the perspective divide
        return post @ m
