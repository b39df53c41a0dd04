#!/usr/bin/env bash
# tenants.sh - CLIENTS application ranks share 2 proxies x 2 devices, each
# running the same example at once; every one must verify.
#   tenants.sh VOCL_RUN CLIENTS APP ARGS...
set -uo pipefail
vocl_run=$1 clients=$2
shift 2
. "$(dirname "$0")/common.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$vocl_run" -a "$clients" -n 2 -d 2 -- "$@" > "$out"
status=$?
cat "$out"
[ "$status" -eq 0 ] || { echo "tenants: the job failed ($status)" >&2; fail=1; }
expect "$out" '^RESULT .* devices=4 .*verified=yes$' "$clients"
exit $fail
