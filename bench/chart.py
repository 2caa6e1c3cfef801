"""Draws events/s per query from stoatflow-bench's own output lines.

    bench/.venv/bin/python bench/chart.py bench/results/latest.txt BENCHMARKS.png

Reads lines ``query=… events=… events_per_s_per_core=…`` and draws one bar
per query (events/s per core), with the goal (2x Feldera's published
per-core figure) marked where one exists.
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Feldera's 16-core Nexmark run, events/s per core; the goal is twice these.
FELDERA_PER_CORE = {"q0": 436_000, "q5": 412_000, "q7": 196_000, "q8": 415_000}


def parse(path):
    rows = []
    with open(path) as f:
        for line in f:
            if not line.startswith("query="):
                continue
            fields = dict(tok.split("=", 1) for tok in line.split())
            if fields.get("changelog") == "off":
                continue  # the headline is the changelog-on figure
            rows.append((fields["query"], float(fields["events_per_s_per_core"]), fields["events"]))
    return rows


def main():
    src, dst = sys.argv[1], sys.argv[2]
    rows = [r for r in parse(src) if r[0] != "gen"]
    names = [r[0] for r in rows]
    rates = [r[1] / 1e6 for r in rows]
    fig, ax = plt.subplots(figsize=(10, 4.8))
    bars = ax.bar(names, rates, color="#3b6ea5", label="stoatflow, one core")
    for bar, rate in zip(bars, rates):
        ax.annotate(f"{rate:.2f}", (bar.get_x() + bar.get_width() / 2, rate),
                    ha="center", va="bottom", fontsize=9)
    first_goal = True
    for i, name in enumerate(names):
        if name in FELDERA_PER_CORE:
            goal = 2 * FELDERA_PER_CORE[name] / 1e6
            ax.hlines(goal, i - 0.4, i + 0.4, colors="#c0392b", linestyles="dashed",
                      label="goal: 2x Feldera per core" if first_goal else None)
            first_goal = False
    ax.tick_params(axis="x", labelrotation=30)
    ax.set_ylabel("million events/s per core")
    ax.set_title(f"stoatflow-bench, {rows[0][2] if rows else 0} events per run (task path)")
    ax.set_ylim(0, max(rates + [0.1]) * 1.2)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main()
