#!/usr/bin/env python3
"""hep-plot.py HISTS PREFIX: one PNG per histogram of a hep(3) histogram
file (NAME-hists.txt), written as PREFIX + NAME + ".png"."""
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    # hep(3) then tries the next interpreter (Debian's /usr/bin/python3),
    # and says what is missing if none has it.
    sys.exit(3)


def main():
    hists, prefix = sys.argv[1], sys.argv[2]
    cur = None
    found = []
    with open(hists) as f:
        for line in f:
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            if w[0] == "histogram":
                meta = dict(x.split("=", 1) for x in w[2:] if "=" in x)
                title = line.split("title=", 1)[1].strip() if "title=" in line else w[1]
                cur = {"name": w[1], "title": title, "lo": [], "hi": [], "n": []}
                found.append(cur)
            elif w[0] in ("underflow", "overflow"):
                cur[w[0]] = int(w[1])
            else:
                cur["lo"].append(float(w[0]))
                cur["hi"].append(float(w[1]))
                cur["n"].append(int(w[2]))
    for h in found:
        fig, ax = plt.subplots(figsize=(6, 4))
        widths = [b - a for a, b in zip(h["lo"], h["hi"])]
        ax.bar(h["lo"], h["n"], width=widths, align="edge", color="#4477aa")
        ax.set_xlabel(h["title"])
        ax.set_ylabel("selected events")
        ax.set_title("%s (underflow %d, overflow %d)"
                     % (h["name"], h.get("underflow", 0), h.get("overflow", 0)))
        fig.tight_layout()
        fig.savefig(prefix + h["name"] + ".png", dpi=100)
        plt.close(fig)


if __name__ == "__main__":
    main()
