#!/usr/bin/env python3
"""Per-point summary of a sweep directory, with the receiver's out-of-order
queue next to runs.csv's metrics (docs/mobile-schedulers.md).

    python3 scripts/ooo-summary.py results/mobile-blest-sweep [--markdown] [--share NODE:IFACE]

For every run (runs/POINT/seed-S/flows.csv) it reads the connection rows
(`subflow = all`) that have an `ooo_bytes` value and takes, over the rows
in which the receiver read data (`goodput_bps > 0`, so the idle gaps
between a request flow's objects do not dilute it):

  ooo_mean_kb  mean out-of-order queue (data-level bytes held beyond a hole)
  ooo_max_kb   its largest sample
  hol_mean_ms  mean head-of-line delay (how long the oldest held byte waited)
  hol_max_ms   its largest sample

(probe samples, every `probes.interval`: a peak between two samples is not
seen). The columns are the receiver's of the flow's `from` -> `to` data
direction as flows.csv records it: a `download` flow's (the `from` host
receives), but for a `request` flow the request direction's (the server),
so they are empty of meaning there (0) and left out with --no-ooo.
From runs.csv (row `flow = all`; a metric empty there, like the request
flows' mean latency, from the run's single flow row) it takes goodput
(Mbit/s), retransmitted segments, completion time and the mean latency (a
request flow: one object's download time, request to complete response).
`--share NODE:IFACE` adds that interface's share (%) of the bytes NODE's
interfaces received (summary.json), e.g. phone:rmnet0 for what LTE
carried of a download. Each point's values are the mean over
its seeds. Output: CSV on stdout (or a Markdown table with --markdown),
one row per point, the swept parameters first. Standard library only.
"""

import csv
import json
import os
import sys
from collections import OrderedDict


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def ooo_of(flows_csv):
    """(ooo mean, ooo max, hol mean, hol max) over the active `all` rows."""
    ooo, hol = [], []
    with open(flows_csv, newline="") as f:
        for r in csv.DictReader(f):
            if r["subflow"] != "all" or r.get("ooo_bytes", "") == "":
                continue
            if (num(r["goodput_bps"]) or 0) <= 0:
                continue
            ooo.append(float(r["ooo_bytes"]))
            hol.append(num(r.get("hol_ms")) or 0.0)
    if not ooo:
        return (None, None, None, None)
    return (sum(ooo) / len(ooo) / 1e3, max(ooo) / 1e3, sum(hol) / len(hol), max(hol))


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    d = argv[1]
    markdown = "--markdown" in argv[2:]
    no_ooo = "--no-ooo" in argv[2:]
    share = argv[argv.index("--share") + 1].split(":", 1) if "--share" in argv[2:] else None
    with open(os.path.join(d, "runs.csv"), newline="") as f:
        every = list(csv.DictReader(f))
    rows = [r for r in every if r["flow"] == "all"]
    single = {}
    for r in every:
        if r["flow"] != "all":
            key = (r["point"], r["seed"])
            single[key] = None if key in single else r
    for r in rows:
        one = single.get((r["point"], r["seed"]))
        for k, v in r.items():
            if v == "" and one is not None and one.get(k, "") != "":
                r[k] = one[k]
    if not rows:
        print(f"{d}/runs.csv: no runs", file=sys.stderr)
        return 1
    cols = list(rows[0].keys())
    params = cols[cols.index("point") + 1 : cols.index("seed")]
    points = OrderedDict()
    for r in rows:
        run = os.path.join(d, "runs", r["point"], f"seed-{r['seed']}", "flows.csv")
        o = ooo_of(run) if os.path.exists(run) else (None,) * 4
        goodput = num(r["goodput_bps"])
        pct = None
        summary = os.path.join(d, "runs", r["point"], f"seed-{r['seed']}", "summary.json")
        if share and os.path.exists(summary):
            with open(summary) as f:
                ifs = [i for i in json.load(f)["interfaces"] if i["node"] == share[0]]
            total = sum(i["rx_bytes"] for i in ifs)
            mine = sum(i["rx_bytes"] for i in ifs if i["iface"] == share[1])
            pct = 100.0 * mine / total if total else None
        p = points.setdefault(r["point"], {"params": [r[c] for c in params], "runs": []})
        p["runs"].append(
            {
                "goodput_mbps": goodput / 1e6 if goodput is not None else None,
                "completion_s": num(r.get("completion_time_s")),
                "latency_ms": num(r.get("mean_latency_ms")),
                "retx": num(r.get("retransmitted_segments")),
                "ooo_mean_kb": o[0],
                "ooo_max_kb": o[1],
                "hol_mean_ms": o[2],
                "hol_max_ms": o[3],
                "share_pct": pct,
            }
        )
    metrics = ["goodput_mbps", "completion_s", "latency_ms", "retx"]
    if not no_ooo:
        metrics += ["ooo_mean_kb", "ooo_max_kb", "hol_mean_ms", "hol_max_ms"]
    if share:
        metrics.append("share_pct")
    header = params + ["seeds"] + [m if m != "share_pct" else f"{share[1]}_rx_pct" for m in metrics]
    out = []
    for p in points.values():
        row = p["params"] + [str(len(p["runs"]))]
        for m in metrics:
            v = mean([r[m] for r in p["runs"]])
            row.append("" if v is None else f"{v:.2f}" if m != "retx" else f"{v:.1f}")
        out.append(row)
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in out:
            print("| " + " | ".join(x if x != "" else "–" for x in row) + " |")
    else:
        w = csv.writer(sys.stdout)
        w.writerow(header)
        w.writerows(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
