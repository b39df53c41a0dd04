#!/usr/bin/env bash
# location.sh - cl_vocl_device_location (CL/cl_ext_vocl.h) through vocl-run:
#   1. 2 proxies x 2 devices, each proxy told its node (VOCL_NODE_NAME):
#      devices 0-1 on node-a of proxy 0, 2-3 on node-b of proxy 1;
#   2. the same without VOCL_NODE_NAME: every device on this host;
#   3. a proxy and this node's own device (--local): the local device is
#      on this host, with a proxy number of its own;
#   4. natively: no such extension.
#   location.sh VOCL_RUN LOCATION_PROGRAM
set -euo pipefail
vocl_run=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
host=$(hostname)
fail() { echo "FAIL: $*"; cat "$tmp/out"; exit 1; }
expect() { # what the program must print, one line per device
    printf '%s\n' "$@" >"$tmp/want"
    diff "$tmp/want" "$tmp/out" >/dev/null || { diff "$tmp/want" "$tmp/out" || true; fail "$label"; }
    echo "ok: $label"
}

# The proxies are ranks 1 and 2 of the job: each names its node after its rank.
proxyd=$(VOCL_PROXYD= "$vocl_run" --dry-run -n 1 -- true | grep -o '[^ ]*/voclproxyd' | tail -1)
cat >"$tmp/proxyd" <<EOS
#!/bin/sh
VOCL_NODE_NAME=node-\$(echo "\$PMI_RANK" | tr 12 ab) exec "$proxyd" "\$@"
EOS
chmod +x "$tmp/proxyd"
label="2 proxies on 2 named nodes"
VOCL_PROXYD=$tmp/proxyd timeout 120 "$vocl_run" -n 2 -d 2 -- "$prog" >"$tmp/out" 2>&1 || fail "$label: the run failed"
expect "device 0: node node-a proxy 0" "device 1: node node-a proxy 0" \
    "device 2: node node-b proxy 1" "device 3: node node-b proxy 1"

label="2 proxies on this host"
timeout 120 "$vocl_run" -n 2 -d 1 -- "$prog" >"$tmp/out" 2>&1 || fail "$label: the run failed"
expect "device 0: node $host proxy 0" "device 1: node $host proxy 1"

label="this node's own device and a proxy"
POCL_DEVICES=pthread timeout 120 "$vocl_run" -n 1 -d 1 --local -- "$prog" >"$tmp/out" 2>&1 || fail "$label: the run failed"
[ "$(cut -d' ' -f3-4 "$tmp/out" | sort -u)" = "node $host" ] || fail "$label: not every device on $host"
[ "$(awk '{print $6}' "$tmp/out" | sort -u | wc -l)" -eq 2 ] || fail "$label: not two proxy numbers"
echo "ok: $label"

label="natively"
POCL_DEVICES=pthread timeout 60 "$prog" >"$tmp/out" 2>&1 || fail "$label: the run failed"
expect "device 0: no cl_vocl_device_location"
