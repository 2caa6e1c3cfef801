"""A flame graph from ``perf script`` output: stacks folded, drawn as an SVG.

    perf record -e cpu-clock -F 999 --call-graph dwarf -o q5.data \\
        target/release/stoatflow-bench --query q5 --events 1000000
    perf script -i q5.data | python3 bench/flamegraph.py --title q5 > q5.svg
    perf script -i q5.data | python3 bench/flamegraph.py --top 25   # a text top-N instead

Each sample's stack (root first) adds one to every frame on it; a frame's
width is its share of the samples. Frames are merged by name under the same
parent, so a box is a call path. Frame names keep the symbol only (no
addresses, no offsets); Rust's generic arguments are shortened to ``<..>``.
"""

import argparse
import html
import re
import sys
from collections import defaultdict

GENERICS = re.compile(r"<[^<>]*>")


def short(name):
    """A frame's symbol with generic arguments collapsed."""
    name = name.split("+0x")[0]
    for _ in range(6):
        reduced = GENERICS.sub("<..>", name)
        if reduced == name:
            break
        name = reduced
    return name


def stacks(lines):
    """Yields one stack per sample, root first."""
    frames = []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if frames:
                yield list(reversed(frames))
            frames = []
            continue
        if line[0] not in " \t":
            continue  # the sample header: command, pid, time, event
        parts = line.strip().split(" ", 1)
        sym = parts[1].rsplit(" (", 1)[0] if len(parts) > 1 else parts[0]
        frames.append(short(sym))
    if frames:
        yield list(reversed(frames))


def tree(samples):
    root = {"name": "all", "n": 0, "kids": {}}
    for stack in samples:
        node = root
        node["n"] += 1
        for f in stack:
            node = node["kids"].setdefault(f, {"name": f, "n": 0, "kids": {}})
            node["n"] += 1
    return root


def svg(root, title, width=1600, row=16):
    total = max(root["n"], 1)
    boxes = []

    def walk(node, x, depth):
        boxes.append((x, depth, node))
        cx = x
        for kid in sorted(node["kids"].values(), key=lambda k: -k["n"]):
            walk(kid, cx, depth + 1)
            cx += kid["n"]

    walk(root, 0, 0)
    depth = max(d for _, d, _ in boxes) + 1
    height = (depth + 3) * row
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="monospace" font-size="11">',
        f'<text x="4" y="{row}">{html.escape(title)} ({total} samples; width = share of samples)</text>',
    ]
    scale = (width - 8) / total
    for x, d, node in boxes:
        w = node["n"] * scale
        if w < 0.5:
            continue
        y = height - (d + 1) * row
        share = 100.0 * node["n"] / total
        hue = 20 + (hash(node["name"]) % 40)
        label = f'{node["name"]} ({share:.1f}%)'
        out.append(
            f'<g><title>{html.escape(label)}</title>'
            f'<rect x="{4 + x * scale:.1f}" y="{y}" width="{w:.1f}" height="{row - 1}" '
            f'fill="hsl({hue},80%,60%)"/>'
        )
        chars = int(w / 6.5)
        if chars >= 4:
            text = label if len(label) <= chars else label[: chars - 2] + ".."
            out.append(f'<text x="{6 + x * scale:.1f}" y="{y + row - 4}">{html.escape(text)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def top(root, n):
    """Self and total shares per frame name, the n largest by total."""
    total = max(root["n"], 1)
    incl, excl = defaultdict(int), defaultdict(int)

    def walk(node, on_path):
        name = node["name"]
        if name not in on_path:
            incl[name] += node["n"]
        excl[name] += node["n"] - sum(k["n"] for k in node["kids"].values())
        for kid in node["kids"].values():
            walk(kid, on_path | {name})

    walk(root, frozenset())
    rows = sorted(incl, key=lambda k: -incl[k])[:n]
    lines = [f"{'total%':>7} {'self%':>7}  frame"]
    for name in rows:
        lines.append(f"{100 * incl[name] / total:7.1f} {100 * excl[name] / total:7.1f}  {name}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--title", default="stoatflow-bench")
    ap.add_argument("--top", type=int, help="print a text top-N instead of an SVG")
    a = ap.parse_args()
    root = tree(stacks(sys.stdin))
    print(top(root, a.top) if a.top else svg(root, a.title))


if __name__ == "__main__":
    main()
