#!/usr/bin/env bash
# run.sh - the fuzz tests of suite 'reliability' (tests/fuzz/meson.build).
#
#   run.sh fuzz FUZZER CORPUS ARTIFACTS
#       fuzzes for VOCL_FUZZ_SECONDS seconds (default 60) from a copy of the
#       committed corpus CORPUS (which is left as it is); a crashing input is
#       kept in ARTIFACTS
#   run.sh regress DIR FUZZER...
#       runs every file of DIR (but README*) once through each FUZZER
#
# Fails on any crash, leak, timeout or sanitizer report.
set -euo pipefail

# Leak detection on; the first sanitizer report ends the run.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:abort_on_error=0:allocator_may_return_null=1
export UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:print_stacktrace=1
common=(-detect_leaks=1 -timeout=30 -rss_limit_mb=2048 -print_final_stats=1)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A report that did not make the process fail still fails the test.
check_log() {
    if grep -E -q 'ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|runtime error:|^==[0-9]+== ERROR' "$1"; then
        echo "run.sh: a sanitizer report in the output above"
        return 1
    fi
}

case "${1:-}" in
fuzz)
    fuzzer=$2 corpus=$3 artifacts=$4
    secs=${VOCL_FUZZ_SECONDS:-60}
    mkdir -p "$tmp/corpus" "$artifacts"
    cp -r "$corpus"/. "$tmp/corpus/"
    echo "run.sh: $(basename "$fuzzer") for ${secs}s from $(find "$corpus" -type f | wc -l) seeds"
    rc=0
    "$fuzzer" "${common[@]}" -max_total_time="$secs" -artifact_prefix="$artifacts/" \
        "$tmp/corpus" >"$tmp/log" 2>&1 || rc=$?
    # The seeds' coverage (INITED), the final figures (DONE, stat::), or the crash.
    grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::|^INFO: (Seed|Loaded)' "$tmp/log" || true
    if [ "$rc" -ne 0 ]; then
        tail -n 80 "$tmp/log"
        echo "run.sh: $(basename "$fuzzer") failed ($rc); reproducers in $artifacts:"
        ls -l "$artifacts"
        exit 1
    fi
    check_log "$tmp/log"
    ;;
regress)
    dir=$2
    shift 2
    files=()
    while IFS= read -r -d '' f; do files+=("$f"); done < <(
        find "$dir" -type f ! -name 'README*' -print0 | sort -z)
    if [ ${#files[@]} -eq 0 ]; then
        echo "run.sh: no reproducers in $dir"
        exit 0
    fi
    for fuzzer in "$@"; do
        echo "run.sh: ${#files[@]} reproducers through $(basename "$fuzzer")"
        "$fuzzer" "${common[@]}" "${files[@]}" >"$tmp/log" 2>&1 || {
            cat "$tmp/log"; echo "run.sh: $(basename "$fuzzer") failed"; exit 1; }
        check_log "$tmp/log" || { cat "$tmp/log"; exit 1; }
        grep -c '^Executed ' "$tmp/log" | sed 's/^/run.sh: executed: /'
    done
    ;;
*)
    echo "usage: run.sh fuzz FUZZER CORPUS ARTIFACTS | run.sh regress DIR FUZZER..." >&2
    exit 2
    ;;
esac
