#!/usr/bin/env bash
# stdout.sh - under vocl-run the application's standard output is its own:
# MPI's diagnostics go to standard error.  UCX (MPICH's ch4:ucx) writes its
# log to stdout unless UCX_LOG_FILE says otherwise, and mpiexec merges the
# proxies' stdout into the application's; with UCX_LOG_LEVEL=info every
# rank writes some.  A UCX_LOG_FILE of the user's is kept.
#   stdout.sh VOCL_RUN
set -euo pipefail
vocl_run=$1
command -v clinfo >/dev/null || { echo "clinfo not installed (apt-get install clinfo)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

UCX_LOG_LEVEL=info timeout 120 "$vocl_run" -n 2 -d 1 -- clinfo -l >"$tmp/out" 2>"$tmp/err" || {
    cat "$tmp/out" "$tmp/err"; echo "vocl-run failed"; exit 1; }
# clinfo -l prints its platform and its devices, nothing else.
if grep -v -E '^Platform #0: VOCL$|^ [`+]-- Device #[01]: ' "$tmp/out" >"$tmp/extra"; then
    echo "standard output has lines the application did not print:"
    head -5 "$tmp/extra"
    exit 1
fi
[ "$(grep -c 'Device #' "$tmp/out")" -eq 2 ] || { cat "$tmp/out"; echo "not 2 devices"; exit 1; }
echo "stdout: $(wc -l <"$tmp/out") lines, all clinfo's; UCX log lines on stderr: $(grep -c 'UCX ' "$tmp/err" || true)"

# Where MPI uses UCX, its log went to stderr (and was not lost), and the
# user's UCX_LOG_FILE is kept.
proxyd=$("$vocl_run" --dry-run -n 1 -- true | grep -o '[^ ]*/voclproxyd' | tail -1)
if ldd "$proxyd" | grep -q libucp; then
    grep -q 'UCX  INFO' "$tmp/err" || { echo "MPI uses UCX, and no UCX log on stderr"; exit 1; }
    UCX_LOG_LEVEL=info UCX_LOG_FILE="$tmp/ucx.%p" timeout 120 "$vocl_run" -n 1 -d 1 -- clinfo -l \
        >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; echo "vocl-run failed"; exit 1; }
    n=$(find "$tmp" -name 'ucx.*' | wc -l)
    [ "$n" -ge 2 ] || { echo "UCX_LOG_FILE of the user's not kept: $n log files, 2 ranks"; exit 1; }
    echo "UCX_LOG_FILE of the user's kept: $n files"
fi
