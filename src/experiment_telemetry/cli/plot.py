"""``telemetry plot RUN_DIR -o FILE.png``: a run's stats over episodes (matplotlib, lazily).

The figure is titled with the run's name and id (a PNG passed around still says which run it
is), and a mode's line is broken where its episodes stop: train and eval alternate in blocks,
and a straight line across the other mode's block would draw values nobody logged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from experiment_telemetry.cli.args import run_directory

__all__ = ["add_parser", "broken_at_gaps", "run", "run_title"]


def broken_at_gaps(
    episodes: list[int], values: list[float | None]
) -> tuple[list[float], list[float]]:
    """``episodes`` and ``values`` with a NaN point wherever the episode count jumps by more
    than one (another mode's block came between): matplotlib lifts its pen at NaN. A missing
    value (``None``) is a NaN too."""
    xs: list[float] = []
    ys: list[float] = []
    for i, (episode, value) in enumerate(zip(episodes, values, strict=True)):
        if i and episode - episodes[i - 1] > 1:
            xs.append(float("nan"))
            ys.append(float("nan"))
        xs.append(float(episode))
        ys.append(float("nan") if value is None else float(value))
    return xs, ys


def run_title(run_dir: str) -> str:
    """``"<name> · <run id>"`` from ``run.kv`` (the folder name without one)."""
    from goggles_io.runs import describe_run

    info = describe_run(run_dir, with_last_step=False)
    run_id = str(info.get("run_id") or Path(run_dir).name)
    name = str(info.get("name") or info.get("slug") or "")
    return f"{name} · {run_id}" if name and name != run_id else run_id


def run(args: argparse.Namespace) -> int:
    """Draw percent correct per mode and steps per episode; exit 2 on bad input (a run
    directory that is not one, an output folder that does not exist, a format matplotlib cannot
    write), with one line on stderr."""
    from experiment_telemetry.exceptions import ReplayError
    from experiment_telemetry.replay import read_stats
    from experiment_telemetry.stats import EpisodeStats, OverallStats

    problem = run_directory("telemetry plot", args.run_dir) or _output_problem(args.output)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    try:
        stats = read_stats(args.run_dir)
    except ReplayError as exc:
        print(f"telemetry plot: {exc}", file=sys.stderr)
        return 2
    plt = _pyplot()
    if plt is None:
        return 2
    supported = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if Path(args.output).suffix.lstrip(".").lower() not in supported:
        known = ", ".join(sorted(supported))
        print(
            f"telemetry plot: cannot write {args.output!r}: give the file one of the endings "
            f"{known} (e.g. {Path(args.output).with_suffix('.png').name})",
            file=sys.stderr,
        )
        return 2
    overall = [s for s in stats if isinstance(s, OverallStats)]
    episodes = [s for s in stats if isinstance(s, EpisodeStats)]
    if not episodes:
        print(f"telemetry plot: {args.run_dir!r} has no episode stats yet", file=sys.stderr)
        return 2
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    fig.suptitle(run_title(args.run_dir), fontsize="medium")
    modes = sorted({s.mode for s in overall} | {s.mode for s in episodes})
    colour = {mode: f"C{i}" for i, mode in enumerate(modes)}  # one per mode in both plots
    for mode in sorted({s.mode for s in overall}):
        rows = [s for s in overall if s.mode == mode]
        numbers = [s.episode for s in rows]
        for field, style in (
            ("percent_correct", {"marker": "."}),
            ("percent_confused", {"ls": "--"}),
        ):
            xs, ys = broken_at_gaps(numbers, [getattr(s, field) for s in rows])
            label = f"{mode} {field.replace('percent_', '% ')}"
            (line,) = top.plot(xs, ys, color=colour[mode], label=label, **style)
            line.set_gid(f"{mode}-{field}")  # the SVG names each line (a reader can find it)
    top.set_ylabel("percent of episodes")
    top.legend(fontsize="small")
    for mode in sorted({s.mode for s in episodes}):
        of_mode = [s for s in episodes if s.mode == mode]
        steps = [s.lm_steps for s in of_mode]
        bottom.scatter([s.episode for s in of_mode], steps, s=12, color=colour[mode], label=mode)
    bottom.set_xlabel("episode")
    bottom.set_ylabel("most steps of a module")
    bottom.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    plt.close(fig)
    print(f"wrote {args.output}")
    return 0


def _output_problem(output: str) -> str | None:
    """Why ``output`` cannot be written: its folder is missing, or it is a folder."""
    target = Path(output)
    if target.is_dir():
        return f"telemetry plot: {output!r} is a directory; give a file name such as run.png"
    if not target.parent.is_dir():
        return f"telemetry plot: cannot write {output!r}: the folder {str(target.parent)!r} does not exist"
    return None


def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend, or ``None`` after saying what to install."""
    try:
        import matplotlib
    except ImportError:
        print(
            "telemetry plot needs matplotlib: pip install 'split-telemetry[plot]'", file=sys.stderr
        )
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``plot`` on the top-level subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "plot", help="plot a run's stats over episodes to a PNG"
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by the harness")
    parser.add_argument("-o", "--output", required=True, metavar="FILE.png", help="image to write")
    parser.set_defaults(handler=run)
    return parser
