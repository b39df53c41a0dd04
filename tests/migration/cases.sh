#!/usr/bin/env bash
# cases.sh - cases.c under vocl-run, proxy 2 its spare, with a control
# directory of its own.
#   cases.sh VOCL_RUN CASES
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export VOCL_CTL_DIR=$tmp/ctl
mkdir -m 700 "$VOCL_CTL_DIR"
timeout 300 "$1" -n 3 -d 1 --spare 1 -- "$2"
