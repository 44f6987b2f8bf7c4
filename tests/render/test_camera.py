"""The orbit camera stays above the ground plane (CPU only: no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

from vkmorph.render.camera import FLOOR_CLEARANCE, MAX_PITCH, OrbitCamera
from vkmorph.render.renderer import GROUND_GAP, grid_cell, ground_placement


def test_pitch_is_clamped_so_the_eye_stays_above_the_floor():
    cam = OrbitCamera.frame(np.array([-1.0, 0.0, -1.0]), np.array([1.0, 2.0, 1.0]))
    cam.floor = -0.01
    for pitch in np.linspace(-3.0, 3.0, 25):
        cam.pitch = pitch                               # what a mouse drag does
        assert cam.eye[1] >= cam.floor + FLOOR_CLEARANCE * cam.distance - 1e-9
        assert cam.pitch <= MAX_PITCH
    cam.pitch = -1.0
    low = cam.pitch
    assert low > -0.5                                   # clamped, not -1.0
    assert cam.eye[1] == pytest.approx(cam.floor + FLOOR_CLEARANCE * cam.distance)
    for _ in range(30):                                 # zooming out at the lowest pitch: still above
        cam.distance *= 1.2
        assert cam.eye[1] >= cam.floor
    cam.floor = None                                    # no ground: free orbit down to -MAX_PITCH
    cam.pitch = -1.0
    assert cam.pitch == pytest.approx(-1.0) and cam.eye[1] < 0


def test_ground_goes_just_under_the_posed_box_on_grid_lines():
    lo, hi = np.array([7.3, -3.5, -0.5]), np.array([8.4, -2.5, 0.6])
    y, cell, m = ground_placement(lo, hi)
    assert y == pytest.approx(-3.5 - GROUND_GAP * 1.1)
    assert cell == 0.2                                  # 1-2-5 series, at most a quarter of the size
    assert m[1, 3] == y and m[0, 0] == m[2, 2] == cell
    assert np.allclose(np.array([m[0, 3], m[2, 3]]) / cell, np.round(np.array([m[0, 3], m[2, 3]]) / cell))
    assert abs(m[0, 3] - 7.85) <= cell / 2 and abs(m[2, 3] - 0.05) <= cell / 2
    assert [grid_cell(s) for s in (4.0, 3.9, 0.04, 250.0)] == [1.0, 0.5, 0.01, 50.0]
