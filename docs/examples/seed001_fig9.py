"""Seed 001, fig. 9 from Python: total throughput against the per-path
capacity, one line per number of subflows, from mplab's simulator.

    bash scripts/python.sh                      # builds mplab into target/py-venv
    target/py-venv/bin/pip install matplotlib
    target/py-venv/bin/python docs/examples/seed001_fig9.py

Writes docs/figures/python-seed001-fig9.png and prints the table it plots.
"""

import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import mplab

REPO = pathlib.Path(__file__).resolve().parents[2]

# The bundled sweep spec (6 rates x 6 subflow counts x 3 seeds, 20 s each);
# 10 s runs are enough for the figure.
s = mplab.sweep(REPO / "scenarios" / "seed001-fig9.sweep.toml", set={"duration": "10s"}, out=REPO / "results" / "python-fig9")
print(f"{len(s.runs[s.runs.flow == 'all'])} runs, {len(s.failed)} failed")

agg = s.aggregate[s.aggregate.flow == "all"].copy()
agg["rate_mbps"] = agg["topology.rate"].str.replace("Mbit", "").astype(float)
agg["subflows"] = agg["topology.paths+transport.mptcp.subflows"].astype(int)
agg["goodput_mbps"] = agg["goodput_bps_mean"] / 1e6
agg["ci_mbps"] = agg["goodput_bps_ci95"].fillna(0) / 1e6

table = agg.pivot(index="rate_mbps", columns="subflows", values="goodput_mbps").round(1)
print(table.to_string())

fig, ax = plt.subplots(figsize=(6.4, 4.2))
for n, g in agg.sort_values("rate_mbps").groupby("subflows"):
    ax.errorbar(g["rate_mbps"], g["goodput_mbps"], yerr=g["ci_mbps"], marker="o", capsize=3, label=f"{n} subflow{'s' if n > 1 else ''}")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("per-path capacity (Mbit/s)")
ax.set_ylabel("total goodput (Mbit/s), mean of 3 seeds, 95 % CI")
ax.set_title("Seed 001, fig. 9: throughput vs capacity (mplab simulator)")
ax.legend(fontsize=8)
ax.grid(True, which="both", alpha=0.3)
out = REPO / "docs" / "figures" / "python-seed001-fig9.png"
fig.tight_layout()
fig.savefig(out, dpi=110)
print(f"wrote {out}")
