"""Benchmark: the fake camera's image chain, milliseconds per frame.

Usage: python benchmarks/bench_fake_camera.py [--profiles white_desk_webcam ...] [--frames 60]

For each profile, the arm at the start pose sweeps a little every frame (so motion blur
renders its samples) and the camera develops one frame per 15 Hz step: the render in the
fake world's dressed model, the lens, the sensor and MJPEG. Prints the mean and 95th
percentile milliseconds per developed frame, the frame's size, and the share the
render takes. Physics is not counted. The target: at most 15 ms at 640x480 (webcam
profiles), so that fake-arm sessions stay fast.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

PROFILES = [
    "typical_so101",
    "white_desk_webcam",
    "wood_desk_lamp",
    "benchmarks/profiles/mat_desk_so101.toml",
    "benchmarks/profiles/grey_cloth_webcam.toml",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=PROFILES)
    parser.add_argument("--frames", type=int, default=60)
    args = parser.parse_args()

    from realgap.runtime import configure_rendering

    configure_rendering()
    from realgap.bridge.camera_lock import DEFAULT_SETTINGS
    from realgap.bridge.worlds import Spot, at_start_pose, open_fake_world
    from realgap.sim import robot

    print(f"{'profile':34s} {'frame':>9s} {'mean ms':>8s} {'p95 ms':>7s} {'render %':>9s}")
    for name in args.profiles:
        world = open_fake_world("Reach", name)
        camera = world.camera
        with at_start_pose(world) as arm:
            world.place_scene(Spot("bench", (0.2, 0.0)))
            camera.apply_settings(DEFAULT_SETTINGS)
            camera.read_fresh(world.clock.now())
            start = np.asarray(robot.KEYFRAMES["start"])
            develop, render = [], []
            renderer = camera.renderer
            raw = renderer.render_raw

            def timed_render(*call, raw=raw, render=render, **kwargs):
                began = time.perf_counter()
                out = raw(*call, **kwargs)
                render.append(time.perf_counter() - began)
                return out

            renderer.render_raw = timed_render
            for index in range(args.frames):
                swing = 0.02 * np.sin(index / 3.0)
                arm.command(start + swing * np.array([1.0, 1.0, -1.0, 1.0, 0.0, 0.0]))
                world.clock.sleep(1 / 15)
                world.extra["world"].advance()
                frames = list(camera.buffer)
                camera.buffer.clear()
                began = time.perf_counter()
                image = camera._develop(frames[-1]).image
                develop.append(time.perf_counter() - began)
        share = 100 * sum(render) / max(sum(develop), 1e-9)
        print(
            f"{name.split('/')[-1].removesuffix('.toml'):34s} "
            f"{image.shape[1]:>4d}x{image.shape[0]:<4d} {1e3 * np.mean(develop):8.1f} "
            f"{1e3 * np.percentile(develop, 95):7.1f} {share:8.0f}%"
        )


if __name__ == "__main__":
    main()
