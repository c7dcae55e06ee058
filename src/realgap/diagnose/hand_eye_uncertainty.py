"""The hand-eye fit's uncertainties: a bootstrap over poses, a resolution floor, the
cube's placement and its size, scaled to what they turned out to be on random arms
(see :mod:`realgap.diagnose.hand_eye`, whose silhouette model they linearize)."""

from __future__ import annotations

import numpy as np

PLACEMENT_SIGMA_M = 0.0005
"""How well a cube is set on a printed mark by hand (one standard deviation per axis)."""

RESOLUTION_FLOOR_PX = 0.3
"""What silhouettes cannot resolve however many poses: a camera's masks and the
twin's differ at the edges by a fraction of a pixel (tone, exposure, anti-aliasing).
The floor is this many analysis pixels of edge motion, converted to each value."""

CUBE_SIZE_DEG_PER_MM = np.array([0.06, 0.66, 0.10, 0.24, 0.09])
"""How far each joint offset moves per millimetre of cube edge the fit gets wrong
(pan, lift, elbow, wrist flex, wrist roll): the slopes of the errors against the
arms' cube edges over 32 random-arm fits that drew the nominal cube (lift -0.66,
correlation -0.84; wrist flex +0.24, +0.82). The fit's linearization at its minimum
saw a quarter of that: the size decides which point along the lift/elbow valley the
coarse stages reach, which the final silhouettes barely move."""

SIGMA_SCALE = np.array([1.0] * 5 + [0.98] * 3 + [0.61] * 3 + [0.72, 1.0])
"""The stated uncertainties scaled to what they turned out to be: joints, mount offset,
mount rotation, field of view, lens. Chosen on 30 random arms (``benchmarks/
bench_calibration.py --random 30 --measured-cube``, 22 hand-eye fits with the lens), each
the scale whose one-sigma coverage there is nearest 68% with two sigmas covering 90% or
more: mount 67% / 92%, rotation 67% / 94%, field of view 68% / 91%. Checked on arms not
used to choose them: eight plain ones (seeds 100-107) 83% / 96%, 83% / 92%, 75% / 100%,
and nine webcams (200-208, noise, MJPEG, a lens) 63% / 89%, 52% / 81%, 56% / 100%; all
39 together 69% / 92%, 67% / 91%, 67% / 95% (``tests/data/hand_eye_errors.json``). The
joints keep their own: 78% / 97% there, 74% / 94% over all; the lift/elbow valley's 0.5
degrees and a 0.3-degree model floor, once needed, were the unmeasured cube's bias,
which the cube-size term now states."""


def uncertainty(model, x: np.ndarray, step: float, draws: int, seed: int) -> np.ndarray:
    """One standard deviation per value: the pose bootstrap's spread combined with the
    silhouettes' resolution floor (see :data:`RESOLUTION_FLOOR_PX`), the cube's placement
    and its size, scaled by :data:`SIGMA_SCALE`."""
    base = model.per_pose(x)
    columns = []
    for k in range(len(x)):
        shifted = x.copy()
        shifted[k] += step
        columns.append([(s - b) / step for s, b in zip(model.per_pose(shifted), base)])
    jacobians = [np.stack([columns[k][i] for k in range(len(x))], axis=1) for i in range(len(base))]
    spread = _pose_bootstrap(jacobians, base, draws, seed)
    # How far one unit of each value moves the silhouettes' edges, in pixels: a shift
    # of d pixels along an edge of L pixels changes coverage by about d per edge pixel,
    # so the Jacobian column's norm is d * sqrt(L).
    split = model.jaw_targets[0].size
    jaw_edge, cube_edge = model.edge_pixels()
    motion = np.zeros(len(x))
    for k in range(len(x)):
        jaw_part = sum(float(np.sum(j[:split, k] ** 2)) for j in jacobians)
        cube_part = sum(float(np.sum(j[split:, k] ** 2)) for j in jacobians)
        # Each value is located by the region it moves most.
        motion[k] = max(np.sqrt(jaw_part / jaw_edge), np.sqrt(cube_part / cube_edge))
    floor = RESOLUTION_FLOOR_PX / np.maximum(motion, 1e-9)
    placement = _placement_spread(model, x, base, jacobians)
    size = _cube_size_spread(model, x)
    return np.sqrt(spread**2 + floor**2 + placement**2 + size**2) * SIGMA_SCALE


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
