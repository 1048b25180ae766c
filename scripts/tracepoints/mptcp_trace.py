#!/usr/bin/env python3
"""Reads a trace recorded by kernel-mptcp-trace.sh and prints what the
kernel's MPTCP sender did, in the terms the simulator's debug output uses
(docs/validation.md, "The kernel's scheduler and receive window, traced").

Times are seconds from the first scheduling call (the application's first
write). Subflows are numbered in the connection's list order, the order
`mptcp_subflow_get_send` visits them (and mplab's subflow index).

  mptcp_trace.py sched   FILE [--from S] [--to S]
      per subflow over the scheduling calls: how often it was the least
      lingering and had room (picked), the least lingering but full
      (the kernel then waits), its mean pacing rate and linger time
  mptcp_trace.py window  FILE [--to S] [--step S]
      the data level: DATA_ACK, highest data handed to a subflow, the
      peer's right edge, and how far the right edge moved while the
      DATA_ACK stood still
  mptcp_trace.py cwnd    FILE [--from S] [--to S] [--step S] [--src P1,P2]
      per TCP subflow (from tcp_probe at the sending host): cwnd,
      ssthresh, packets out, peer's window (KB), srtt (ms)
  mptcp_trace.py pushes  FILE [--from S] [--to S]
      the scheduling calls, the data pushed and the DATA_ACKs in order

The tracepoints' `pace` is the subflow's current sk_pacing_rate and their
`ratio` its sk_wmem_queued << 32 / pace; the scheduler itself divides by
a smoothed rate (`avg_pacing_rate`), which no tracepoint shows.
"""

import argparse
import re
import sys
from collections import defaultdict

LINE = re.compile(r"\s(\d+\.\d+): (\w+): (.*)")


def fields(text):
    return dict(kv.split("=", 1) for kv in text.split() if "=" in kv)


def events(path):
    """(time, name, fields, from the writer's context) in file order."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.search(line)
            if m:
                out.append((float(m.group(1)), m.group(2), fields(m.group(3)), "cli-" in line))
    t0 = next((t for t, n, _, _ in out if n == "mptcp_subflow_get_send"), None)
    if t0 is None:
        sys.exit("no mptcp_subflow_get_send events: was an MPTCP connection traced?")
    return [(t - t0, n, kv, w) for t, n, kv, w in out]


def periodic(run, k):
    return len(run) % k == 0 and all(run[i] == run[i + k] for i in range(len(run) - k))


def split(run, width):
    """A run of get_send events may hold several calls in a row (nothing
    happened between them), one event per subflow each: cut it at the last
    call's width when the run repeats with it, else at the shortest period
    that repeats the run's values."""
    k = width if width and periodic(run, width) else next(k for k in range(1, len(run) + 1) if periodic(run, k))
    return [run[j:j + k] for j in range(0, len(run), k)]


def calls(evs):
    """Scheduling calls: (time, one get_send event per subflow)."""
    run, width = [], 0
    for t, n, kv, _ in evs + [(evs[-1][0], "end", {}, False)]:
        if n == "mptcp_subflow_get_send":
            run.append(kv)
            continue
        if run:
            for c in split(run, width):
                width = len(c)
                yield t, c
            run = []


def linger_ms(kv):
    return int(kv["ratio"]) / 2**32 * 1000


def cmd_sched(a, evs):
    picked, full, total = defaultdict(int), defaultdict(int), 0
    stats = defaultdict(list)
    for t, run in calls(evs):
        if not a.start <= t <= a.to:
            continue
        total += 1
        active = [(linger_ms(kv), i, kv["free"] == "1") for i, kv in enumerate(run) if kv["active"] == "1"]
        for i, kv in enumerate(run):
            if kv["active"] == "1":
                stats[i].append((int(kv["pace"]), linger_ms(kv), kv["free"] == "1"))
        if active:
            _, i, free = min(active)
            (picked if free else full)[i] += 1
    print(f"{total} scheduling calls from {a.start} s" + (f" to {a.to} s" if a.to < 1e9 else ""))
    print("subflow  picked  best-but-full  pace KB/s  linger ms  has room")
    for i in sorted(stats):
        s = stats[i]
        n = len(s)
        print(f"{i:7d} {picked[i]:7d} {full[i]:14d} {sum(x[0] for x in s) / n / 1000:10.0f} "
              f"{sum(x[1] for x in s) / n:10.0f} {sum(x[2] for x in s) / n:9.2f}")


def data_level(evs):
    """(time, snd_una, highest pushed, right edge) after each ack_update_msk,
    relative to the first data byte."""
    base, nxt, out = None, 0, []
    for t, n, kv, _ in evs:
        if n == "mptcp_sendmsg_frag":
            seq = int(kv["data_seq"])
            if base is None:
                base = seq
            if 0 <= seq - base < 1 << 40:
                nxt = max(nxt, seq - base + int(kv["data_len"]))
        elif n == "ack_update_msk" and base is not None:
            una, edge = int(kv["new_snd_una"]) - base, int(kv["msk_wnd_end"]) - base
            if 0 <= una < 1 << 40:  # another connection's (the reverse one's)
                out.append((t, una, nxt, edge))
    return out


def cmd_window(a, evs):
    rows = data_level(evs)
    last = None
    print("   time    DATA_ACK   pushed  right edge  outstanding  room")
    for t, una, nxt, edge in rows:
        if t > a.to:
            break
        slot = int(t / a.step)
        if slot != last:
            last = slot
            print(f"{t:7.2f} {una:10d} {nxt:8d} {edge:11d} {nxt - una:12d} {edge - nxt:5d}")
    stuck = moved = 0
    for (_, u0, _, e0), (_, u1, _, e1) in zip(rows, rows[1:]):
        if u1 == u0:
            stuck += e1 - e0
        else:
            moved += e1 - e0
    print(f"right edge moved {stuck // 1000} KB while the DATA_ACK stood still, "
          f"{moved // 1000} KB with it")


def cmd_cwnd(a, evs):
    rows = defaultdict(list)
    for t, n, kv, _ in evs:
        if n != "tcp_probe" or not kv.get("src", "").startswith(tuple(a.src.split(","))) or not a.start <= t <= a.to:
            continue
        out = (int(kv["snd_nxt"], 16) - int(kv["snd_una"], 16)) % (1 << 32)
        rows[f"{kv['src']} > {kv['dest']}"].append((t, kv, out))
    for key, samples in rows.items():
        print(f"== {key}   (cwnd, ssthresh, segments out, peer window KB, srtt ms)")
        last, line = None, []
        for t, kv, out in samples:
            slot = int(t / a.step)
            if slot == last:
                continue
            last = slot
            ssthresh = int(kv["ssthresh"])
            line.append(f"{t:.2f} c{kv['snd_cwnd']} s{'-' if ssthresh > 1 << 30 else ssthresh} "
                        f"o{out // 1448} w{int(kv['snd_wnd']) // 1000} r{int(kv['srtt']) / 1000:.0f}")
        print(" | ".join(line))


def cmd_pushes(a, evs):
    base, run = None, []
    for t, n, kv, w in evs:
        if n == "mptcp_sendmsg_frag" and base is None:
            base = int(kv["data_seq"])
        if n == "mptcp_subflow_get_send":
            run.append(kv)
            continue
        shown = a.start <= t <= a.to
        if run and shown:
            who = "writer" if w else "softirq"
            print(f"{t:8.4f} call ({who}) " + " | ".join(
                f"{i}:{'a' if s['active'] == '1' else '-'}{'r' if s['free'] == '1' else 'F'} "
                f"{linger_ms(s):.0f}ms {int(s['pace']) // 1000}KB/s" for i, s in enumerate(run)))
        run = []
        if not shown or base is None:
            continue
        if n == "mptcp_sendmsg_frag":
            print(f"{t:8.4f}   push data {int(kv['data_seq']) - base} mapping {kv['data_len']} "
                  f"bytes at subflow seq {kv['subflow_seq']}")
        elif n == "ack_update_msk":
            una = int(kv["new_snd_una"]) - base
            if 0 <= una < 1 << 40:
                print(f"{t:8.4f}   DATA_ACK {una} right edge {int(kv['msk_wnd_end']) - base}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["sched", "window", "cwnd", "pushes"])
    p.add_argument("file")
    p.add_argument("--from", dest="start", type=float, default=0.0)
    p.add_argument("--to", type=float, default=1e9)
    p.add_argument("--step", type=float, default=0.1)
    p.add_argument("--src", default="", help="cwnd: only sockets whose source starts with one of these comma-separated prefixes (the sending host's addresses)")
    a = p.parse_args()
    evs = events(a.file)
    {"sched": cmd_sched, "window": cmd_window, "cwnd": cmd_cwnd, "pushes": cmd_pushes}[a.what](a, evs)


if __name__ == "__main__":
    main()
