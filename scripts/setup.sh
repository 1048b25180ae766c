#!/usr/bin/env bash
# System packages mplab's tests use: kernel-MPTCP captures (tcpdump, iproute2,
# python3), wire checks against tshark, middleboxes (iptables, nftables),
# offload control (ethtool), SCTP hosts on the kernel backend (libusrsctp2), the HTML report's browser test (chromium) and the
# Parquet check with pandas/pyarrow (pip). Installs only what is missing; needs
# root for apt.
set -euo pipefail
need=()
for pair in tshark:tshark tcpdump:tcpdump ip:iproute2 python3:python3 iptables:iptables nft:nftables ethtool:ethtool chromium:chromium; do
  cmd=${pair%%:*}; pkg=${pair#*:}
  command -v "$cmd" >/dev/null 2>&1 || need+=("$pkg")
done
# usrsctp (the FreeBSD SCTP stack as a library): the kernel backend's SCTP
# hosts load libusrsctp.so.2 at run time (this kernel has no SCTP).
ldconfig -p 2>/dev/null | grep 'libusrsctp\.so\.2 ' >/dev/null || need+=(libusrsctp2)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing ${need[*]}; run as root or install them" >&2
    exit 0
  fi
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# pandas + pyarrow read mplab's Parquet files in crates/lab/tests/sweep_cli.rs.
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import pandas, pyarrow' >/dev/null 2>&1; then
  if ! python3 -m pip --version >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pip >/dev/null 2>&1 || true
  fi
  if python3 -m pip --version >/dev/null 2>&1; then
    python3 -m pip install -q pandas pyarrow >/dev/null 2>&1 \
      || python3 -m pip install -q --break-system-packages pandas pyarrow >/dev/null 2>&1 \
      || echo "setup: could not pip install pandas pyarrow" >&2
  else
    echo "setup: python3 has no pip; install pandas and pyarrow for the Parquet test" >&2
  fi
fi
