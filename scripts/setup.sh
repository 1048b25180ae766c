#!/usr/bin/env bash
# System packages mplab's tests use: kernel-MPTCP captures (tcpdump, iproute2,
# python3), wire checks against tshark, middleboxes (iptables, nftables),
# offload control (ethtool). Installs only what is missing; needs root for apt.
set -euo pipefail
need=()
for pair in tshark:tshark tcpdump:tcpdump ip:iproute2 python3:python3 iptables:iptables nft:nftables ethtool:ethtool; do
  cmd=${pair%%:*}; pkg=${pair#*:}
  command -v "$cmd" >/dev/null 2>&1 || need+=("$pkg")
done
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
