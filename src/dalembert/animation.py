"""Animation of a rolling ball: the contact path on the table and the ball's orientation.

``animate_rolling_ball(x, R, path)`` writes a GIF (Pillow, always available with matplotlib) or an
MP4 (needs ``ffmpeg`` on the PATH). Left panel: the contact point's path in the inertial plane,
the table centre (the rotation axis, cross) and the current position; right panel: the ball seen
in 3-D with its body axes R e₁, R e₂, R e₃ and three body-fixed great circles, so that rolling and
spinning are both visible. Used by ``dalembert run rolling-ball --animate``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import InputError

#: default number of frames (the trajectory is strided to this many)
FRAMES = 120


def _great_circles(n: int = 60) -> np.ndarray:
    """(3, n, 3): body-fixed unit circles in the planes ⊥ e₁, e₂, e₃."""
    s = np.linspace(0.0, 2.0 * np.pi, n)
    c, d, z = np.cos(s), np.sin(s), np.zeros_like(s)
    return np.stack([np.stack([z, c, d], -1), np.stack([c, z, d], -1), np.stack([c, d, z], -1)])


def frame_indices(n_nodes: int, frames: int = FRAMES) -> np.ndarray:
    """Indices of the nodes drawn: at most ``frames``, evenly spaced, first and last included."""
    if n_nodes < 1:
        raise InputError("nothing to animate: the trajectory has no nodes")
    return np.unique(np.linspace(0, n_nodes - 1, min(frames, n_nodes)).round().astype(int))


def animate_rolling_ball(x, R, path, *, t=None, radius: float = 1.0, frames: int = FRAMES,
                         fps: int = 25, title: str = "") -> Path:
    """Write an animation of a rolling ball and return its path.

    Parameters
    ----------
    x : (N, 2) contact point (= centre projected on the table) in the inertial frame (length unit).
    R : (N, 3, 3) orientation (body → space).
    path : output file; ``.gif`` (Pillow) or ``.mp4`` (ffmpeg).
    t : optional (N,) times for the frame label.
    radius : ball radius r (length unit), for the drawing.
    frames, fps : number of frames (the trajectory is strided) and frame rate.

    Raises
    ------
    InputError : wrong shapes, non-finite values, an unknown suffix, or ``.mp4`` without ffmpeg.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import animation

    x = np.asarray(x, float)
    R = np.asarray(R, float)
    if x.ndim != 2 or x.shape[1] != 2 or R.shape != (x.shape[0], 3, 3):
        raise InputError(f"animate_rolling_ball needs x (N, 2) and R (N, 3, 3); got {x.shape}, {R.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(R))):
        raise InputError("animate_rolling_ball: x and R must be finite")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".gif":
        writer = animation.PillowWriter(fps=fps)
    elif suffix == ".mp4":
        if not animation.writers.is_available("ffmpeg"):
            raise InputError("writing MP4 needs ffmpeg on the PATH; install it or write a .gif")
        writer = animation.FFMpegWriter(fps=fps)
    else:
        raise InputError(f"unknown animation format {suffix!r}; use .gif or .mp4")

    idx = frame_indices(x.shape[0], frames)
    circles = _great_circles()
    fig = plt.figure(figsize=(9.5, 4.6))
    ax = fig.add_subplot(1, 2, 1)
    ax.plot(x[:, 0], x[:, 1], lw=0.6, color="0.75")
    ax.plot([0.0], [0.0], "k+", ms=12, mew=1.5, label="table centre")
    trail, = ax.plot([], [], lw=1.2, color="tab:blue")
    dot, = ax.plot([], [], "o", color="tab:red", ms=6)
    pad = 0.05 * max(np.ptp(x[:, 0]), np.ptp(x[:, 1]), 1.0)
    ax.set_xlim(min(x[:, 0].min(), 0.0) - pad, max(x[:, 0].max(), 0.0) + pad)
    ax.set_ylim(min(x[:, 1].min(), 0.0) - pad, max(x[:, 1].max(), 0.0) + pad)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(fontsize=7, loc="upper right")
    label = ax.set_title(title, fontsize=9)

    ax3 = fig.add_subplot(1, 2, 2, projection="3d")
    colors = ("tab:red", "tab:green", "tab:blue")
    axis_lines = [ax3.plot([], [], [], lw=2.5, color=c)[0] for c in colors]
    circle_lines = [ax3.plot([], [], [], lw=0.9, color=c, alpha=0.7)[0] for c in colors]
    lim = 1.1 * radius
    ax3.set_xlim(-lim, lim)
    ax3.set_ylim(-lim, lim)
    ax3.set_zlim(-lim, lim)
    ax3.set_box_aspect((1, 1, 1))
    ax3.set_xticks([])
    ax3.set_yticks([])
    ax3.set_zticks([])
    ax3.set_title("orientation: body axes R e₁, R e₂, R e₃", fontsize=9)

    def draw(i):
        k = idx[i]
        trail.set_data(x[: k + 1, 0], x[: k + 1, 1])
        dot.set_data([x[k, 0]], [x[k, 1]])
        Rk = R[k]
        for j in range(3):
            a = radius * Rk[:, j]
            axis_lines[j].set_data_3d([0.0, a[0]], [0.0, a[1]], [0.0, a[2]])
            pts = radius * circles[j] @ Rk.T
            circle_lines[j].set_data_3d(pts[:, 0], pts[:, 1], pts[:, 2])
        if t is not None:
            label.set_text(f"{title}  t = {float(np.asarray(t)[k]):.2f}".strip())
        return [trail, dot, *axis_lines, *circle_lines, label]

    anim = animation.FuncAnimation(fig, draw, frames=len(idx), blit=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    anim.save(str(path), writer=writer, dpi=80)
    plt.close(fig)
    return path
