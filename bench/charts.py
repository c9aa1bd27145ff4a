#!/usr/bin/env python3
"""Draws each load table of a benchmark run as an SVG chart, so that a reader sees duet against
its peers at a glance. bench.py runs it after each run with the python of the benchmark's own
virtual environment (matplotlib, pinned in bench/requirements.txt; bench/run.sh makes it):

    python charts.py RAW_JSON OUT_DIR PREFIX

reads the run's raw measurements (bench/.out/<run>.json), writes OUT_DIR/PREFIX-<case>.svg for
each table that has a chart, and prints their paths. The medians and titles are bench.py's own.
"""

import argparse
import json
import os
import textwrap

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is chosen
from matplotlib.ticker import StrMethodFormatter  # noqa: E402

from bench import LOAD_CASES, RANK, case_title, chart_name, summarize  # noqa: E402 - beside this file

# One colour per server, the same in every chart: duet's stands out, its baseline is a paler shade of it.
COLOURS = {
    "duet": "#d9480f",
    "duet-before": "#ffa94d",
    "duet-paged": "#e8590c",
    "duet-paged-before": "#ffc078",
    "duet-metrics": "#c2255c",
    "duet-otlp": "#862e9c",
    "duet-otlp-sampled": "#cc5de8",
    "ceiling": "#495057",
    "floor": "#adb5bd",
    "rmcp": "#1971c2",
    "rmcp-pipes": "#74c0fc",
    "tower": "#2f9e44",
}

plt.rcParams.update({
    "svg.fonttype": "none",  # text stays text: no glyphs embedded
    "svg.hashsalt": "duet",  # the same ids in every drawing of the same data
    "font.size": 9,
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],  # shorter than matplotlib's list in each text
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "axes.axisbelow": True,
    "grid.color": "#dee2e6",
})


def compact(v: float) -> str:
    return f"{v / 1000:.1f}k" if v >= 1000 else f"{v:.0f}"


def decimal(v: float) -> str:
    return f"{v:.1f}"


def series(summary: dict, case: str, field) -> tuple[list, list]:
    """(x values, [(server key, label, [field(median row) at each x])]) of one case, servers in table
    order; None where a measurement failed."""
    kinds = {server: s["kind"] for (c, server, _), s in summary.items() if c == case}
    xs = sorted({x for (c, _, x) in summary if c == case})  # connections, sessions, or [None] (stdio)
    servers = sorted(kinds, key=lambda server: (RANK[kinds[server]], server))
    out = []
    for server in servers:
        rows = [summary.get((case, server, x)) for x in xs]
        label = next(r["label"] for r in rows if r)
        out.append((server, label, [field(r) if r else None for r in rows]))
    return xs, out


def bars(ax, xs: list, ys: list, fmt, xlabel: str, ylabel: str):
    """Grouped bars: one group per x, one bar per server, each labelled with its value (a failed
    measurement: no bar, labelled "no result")."""
    width = 0.8 / len(ys)
    for i, (server, label, values) in enumerate(ys):
        at = [g + (i - (len(ys) - 1) / 2) * width for g in range(len(xs))]
        drawn = ax.bar(at, [v or 0 for v in values], width, label=label, color=COLOURS[server])
        ax.bar_label(drawn, labels=["no result" if v is None else fmt(v) for v in values], padding=2, fontsize=7,
                     rotation=90 if len(ys) * len(xs) > 8 else 0)
    ax.set_xticks(range(len(xs)), [f"{x:,}" if isinstance(x, int) else "" for x in xs])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    ax.margins(y=0.18)  # room for the labels above the tallest bar


def figure(title: str, panels: int):
    fig, axes = plt.subplots(panels, 1, figsize=(8, 3.2 * panels + 1), squeeze=False, layout="constrained")
    fig.suptitle("\n".join(textwrap.wrap(title.replace("`", ""), 90)), fontsize=10)
    return fig, [row[0] for row in axes]


def save(fig, ax, path: str):
    """Writes the figure, with one legend (ax's servers) below its panels."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 3), frameon=False)
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def draw(summary: dict, case: str, args, path: str):
    title = case_title(case, args)
    if case in LOAD_CASES and case != "tools-list":
        fig, (top, bottom) = figure(title, 2)
        xs, ys = series(summary, case, lambda s: s["rps"])
        bars(top, xs, ys, compact, "connections", "requests/s (higher is better)")
        xs, ys = series(summary, case, lambda s: s["cpu_us"])
        bars(bottom, xs, ys, decimal, "connections", "server CPU µs per request (lower is better)")
        save(fig, top, path)
    elif case == "tools-list":
        fig, (ax,) = figure(title, 1)
        xs, ys = series(summary, case, lambda s: s["rps"] / s["pages"] if s["rps"] and s["pages"] else None)
        bars(ax, xs, ys, compact, "connections", "whole listings/s (higher is better)")
        save(fig, ax, path)
    elif case == "sessions":
        fig, (ax,) = figure(title, 1)
        xs, ys = series(summary, case, lambda s: s["per_session"])
        bars(ax, xs, ys, decimal, "idle sessions open", "RSS KiB per session (lower is better)")
        save(fig, ax, path)
    else:  # stdio
        fig, (ax,) = figure(title, 1)
        xs, ys = series(summary, case, lambda s: s["rps"])
        bars(ax, xs, ys, compact, f"{args.stdio_window} requests in flight through one process",
             "requests/s (higher is better)")
        save(fig, ax, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("raw", help="a run's raw measurements (bench/.out/<run>.json)")
    ap.add_argument("out_dir")
    ap.add_argument("prefix", help="the start of each chart's file name")
    a = ap.parse_args()
    with open(a.raw) as f:
        run = json.load(f)
    args = argparse.Namespace(**run["args"])
    summary = summarize(run["rows"])
    os.makedirs(a.out_dir, exist_ok=True)
    for case in (*LOAD_CASES, "sessions", "stdio"):
        if any(c == case for c, _, _ in summary):
            path = os.path.join(a.out_dir, chart_name(a.prefix, case))
            draw(summary, case, args, path)
            print(path)


if __name__ == "__main__":
    main()
