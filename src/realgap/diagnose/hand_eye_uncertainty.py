"""The hand-eye fit's uncertainties: a bootstrap over poses, a resolution floor chosen
on random arms, the cube's placement and its size
(see :mod:`realgap.diagnose.hand_eye`, whose silhouette model they linearize)."""

from __future__ import annotations

import numpy as np

PLACEMENT_SIGMA_M = 0.0005
"""How well a cube is set on a printed mark by hand (one standard deviation per axis)."""

RESOLUTION_FLOOR_PX = np.array([0.080] * 5 + [0.094] * 3 + [0.058] * 3 + [0.112, 0.068])
"""What silhouettes cannot resolve however many poses: a camera's masks and the
twin's differ at the edges by a fraction of a pixel (tone, exposure, noise, JPEG,
resampling). The floor is this much edge motion (analysis pixels) carried through the
fit's whole normal matrix, so values that trade against each other (the lift/elbow
valley, the mount's depth against the field of view) share it; per group: joints,
mount offset, mount rotation, field of view, lens k1. Sized for a real camera: chosen
on 30 random arms with webcams (``benchmarks/bench_calibration.py --random 30
--first-seed 210 --measured-cube --appearance``, the sweep's poses chosen for what
they tell), each the floor whose one-sigma coverage there is nearest 68% with two
sigmas covering 90% or more with one value to spare (a share over 30 arms moves 1-3
points per value), and checked on nine other webcam arms and 30 arms drawn by the
twin's own renderer (``tests/data/hand_eye_errors.json``,
docs/results/2026-12-05-calibration.md). With poses drawn at random the floors had to
be a third wider (0.104 px on the joints) and still covered the twin's renders 70-97%
within one sigma; a floor from each value's own column alone (the fit's diagonal) put
the elbow's truth within one sigma 37% of the time and the pan's 87%."""

CUBE_SIZE_DEG_PER_MM = np.array([0.06, 0.66, 0.10, 0.24, 0.09])
"""How far each joint offset moves per millimetre of cube edge the fit gets wrong
(pan, lift, elbow, wrist flex, wrist roll): the slopes of the errors against the
arms' cube edges over 32 random-arm fits that drew the nominal cube (lift -0.66,
correlation -0.84; wrist flex +0.24, +0.82). The fit's linearization at its minimum
saw a quarter of that: the size decides which point along the lift/elbow valley the
fit reaches, which the final silhouettes barely move."""


def uncertainty(model, x: np.ndarray, step: float, draws: int, seed: int) -> np.ndarray:
    """One standard deviation per value: the pose bootstrap's spread, the silhouettes'
    resolution floor (see :data:`RESOLUTION_FLOOR_PX`), the cube's placement and its
    size, combined by :func:`combined`."""
    base = model.per_pose(x)
    columns = []
    for k in range(len(x)):
        shifted = x.copy()
        shifted[k] += step
        columns.append([(s - b) / step for s, b in zip(model.per_pose(shifted), base)])
    jacobians = [np.stack([columns[k][i] for k in range(len(x))], axis=1) for i in range(len(base))]
    spread = _pose_bootstrap(jacobians, base, draws, seed)
    placement = _placement_spread(model, x, base, jacobians)
    size = _cube_size_spread(model, x)
    return combined(spread, floor_per_pixel(model, jacobians), placement, size)


def floor_per_pixel(model, jacobians) -> np.ndarray:
    """Each value's standard deviation if every edge pixel of the masks were one pixel
    off at random: a shift of d pixels along an edge of L pixels changes coverage by
    about d per edge pixel, so the information per edge pixel is J^T J / L, summed over
    the jaws' and the cube's regions; its inverse carries the values' trade-offs."""
    split = model.jaw_targets[0].size
    jaw_edge, cube_edge = model.edge_pixels()
    information = sum(j[:split].T @ j[:split] for j in jacobians) / jaw_edge
    information = information + sum(j[split:].T @ j[split:] for j in jacobians) / cube_edge
    return np.sqrt(np.maximum(np.diag(np.linalg.pinv(information)), 0.0))


def combined(spread, floor_per_px, placement, size, floor_px=RESOLUTION_FLOOR_PX) -> np.ndarray:
    """The stated sigmas from their parts (independent, so in quadrature): the floor at
    ``floor_px`` pixels (default :data:`RESOLUTION_FLOOR_PX`), the others as measured."""
    floor = np.asarray(floor_px) * np.asarray(floor_per_px)
    return np.sqrt(np.square(spread) + floor**2 + np.square(placement) + np.square(size))


def _cube_size_spread(model, x: np.ndarray) -> np.ndarray:
    """How far the joint offsets move if the cube's edge is ``cube_size_sigma_m`` off:
    :data:`CUBE_SIZE_DEG_PER_MM` times the size's sigma (the mount barely moves)."""
    out = np.zeros(len(x))
    out[: len(CUBE_SIZE_DEG_PER_MM)] = CUBE_SIZE_DEG_PER_MM * model.cube_size_sigma_m * 1000
    return out


def _placement_spread(model, x: np.ndarray, base, jacobians) -> np.ndarray:
    """How much the fit moves if the cube sat ``PLACEMENT_SIGMA_M`` off its mark (each
    way): the solution's sensitivity to the cube's position, -(J^T J)^-1 J^T dr/dcube.
    Lift and elbow offsets of opposite sign move the camera mostly along its view, so
    a fraction of a millimetre of cube placement trades for about a degree of them."""
    normal = sum(j.T @ j for j in jacobians)
    inverse = np.linalg.pinv(normal)
    cube = model.cube_positions.copy()
    variance = np.zeros(len(x))
    # Each mark is set by hand on its own: its error moves only the poses that saw it.
    for mark in np.unique(cube, axis=0):
        on_mark = np.all(cube == mark, axis=1)
        for axis in range(2):
            shifted = cube.copy()
            shifted[on_mark, axis] += PLACEMENT_SIGMA_M
            model.cube_positions = shifted
            moved = model.per_pose(x)
            model.cube_positions = cube
            gradient = sum(j.T @ (m - b) for j, m, b in zip(jacobians, moved, base))
            variance += (inverse @ gradient) ** 2
    return np.sqrt(variance)


def _pose_bootstrap(jacobians, residuals, draws: int, seed: int) -> np.ndarray:
    """Standard deviations of one Gauss-Newton step over poses resampled with
    replacement: the fit's spread had the arm visited other poses like these."""
    normals = np.array([j.T @ j for j in jacobians])
    gradients = np.array([j.T @ r for j, r in zip(jacobians, residuals)])
    rng = np.random.default_rng(seed)
    poses, size = len(residuals), normals.shape[1]
    steps = []
    for _ in range(draws):
        pick = rng.integers(0, poses, poses)
        normal = normals[pick].sum(axis=0)
        ridge = 1e-9 * np.trace(normal) * np.eye(size)
        steps.append(np.linalg.solve(normal + ridge, -gradients[pick].sum(axis=0)))
    return np.std(np.array(steps), axis=0)
