#!/usr/bin/env bash
# record.sh - remakes the seed corpora of tests/fuzz from real traffic.
#
#   tests/fuzz/record.sh BUILD FUZZ_BUILD
#
# BUILD: a build (gcc or clang, any options) whose vocl-run and programs
# are used; FUZZ_BUILD: one configured with -Dfuzz=true, whose fuzzers
# minimise what was recorded into tests/fuzz/corpus (libFuzzer -merge=1:
# only inputs that add coverage are kept, the smaller first).
#
# request      The examples and the integration programs run under vocl-run
#              with VOCL_RECORD_REQUESTS (executor/record.c): every request a
#              proxy executed is a file.  One process's files, in order, are
#              one session: one seed (make-sessions.py leaves repeats out).
#              Recorded with VOCL_POOL_SIZE=64K, the chunk size the fuzzer's
#              node takes (fuzz_request.c).  Plus a seed per codec message
#              of cl_api.def, written by the generated encoders (test_msg
#              --seeds DIR; the files msg-NAME in corpus/request).
# kernelparse  The OpenCL C sources the repository's tests and examples
#              hold: C string literals, and Python strings, that contain a
#              kernel (extract-kernels.py).
#
# Needs PoCL, MPICH and clinfo, as the integration tests do.  Adds to the
# corpora (run with the corpus directories emptied to start afresh).
set -euo pipefail
build=$(realpath "$1") fuzzbuild=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
export HYDRA_LAUNCHER=fork HWLOC_COMPONENTS=-opencl POCL_DEVICES="pthread pthread"
export VOCL_POOL_SIZE=64K
tmp=$(mktemp -d)
# VOCL_RECORD_KEEP=1: keep the recordings and sessions (to look into a failed merge).
[ -n "${VOCL_RECORD_KEEP:-}" ] && echo "record.sh: keeping $tmp" || trap 'rm -rf "$tmp"' EXIT

run=0
record() { # OPTIONS -- PROGRAM ARGS: one run under vocl-run, recorded
    run=$((run + 1))
    mkdir -p "$tmp/rec/$run"
    echo "record.sh: [$run] vocl-run $*"
    VOCL_RECORD_REQUESTS=$tmp/rec/$run timeout 300 "$build/tools/vocl-run" "$@" \
        >"$tmp/out" 2>&1 || { echo "record.sh: failed (kept what was recorded):"; tail -n 5 "$tmp/out"; }
}

ex=$build/examples it=$build/tests/integration
record -n 1 -d 1 -- "$ex/vecadd_reduce" --devices 1
record -n 1 -d 2 -- "$ex/vecadd_reduce" --devices 2
record -n 2 -d 1 -- "$ex/vecadd_reduce" -n 100003 --seed 9
record -n 1 -d 1 --local -- "$ex/vecadd_reduce"
for app in gemm nbody transpose smithwaterman; do
    record -n 1 -d 1 -- "$ex/$app"
done
record -n 2 -d 1 -- "$it/api_check"
record -n 2 -d 1 -- "$it/threads"
record -n 2 -d 1 -- "$it/spanning"
record -n 2 -d 2 -- "$it/spanning"
record -n 2 -d 1 -- "$it/memory"
record -n 2 -d 1 -- "$it/kprintf"
record -n 1 -d 1 -- "$it/native_kernel"
record -n 1 -d 2 -- "$it/transfers"
record -n 2 -d 1 -- "$it/transfers"
# deferred takes the native error codes first (tests/integration/deferred.sh).
read -r -a codes < <(POCL_DEVICES=pthread "$it/deferred" --native)
record -n 2 -d 1 -- "$it/deferred" "${codes[@]}"
record -n 2 -d 2 -- clinfo

# Sessions: one process's messages, in the order executed, repeats left out.
python3 "$here/make-sessions.py" "$tmp/sessions" "$tmp"/rec/*/
# And one per message of cl_api.def's codec entries, from the generated
# encoders (HELLO, the request, BYE): every decoder has a seed of its own.
"$build/tests/test_msg" --seeds "$tmp/sessions"
echo "record.sh: $(ls "$tmp/sessions" | wc -l) sessions, $(du -sh "$tmp/sessions" | cut -f1)"

python3 "$here/extract-kernels.py" "$src" "$tmp/kernels"
echo "record.sh: $(ls "$tmp/kernels" | wc -l) kernel sources"

mkdir -p "$here/corpus/request" "$here/corpus/kernelparse"
# -max_len: every session is kept whole.
"$fuzzbuild/tests/fuzz/fuzz_request" -merge=1 -max_len=1048576 -artifact_prefix="$tmp/" \
    "$here/corpus/request" "$tmp/sessions" 2>&1 | grep -E '^MERGE-OUTER: [0-9]+ new' || true
"$fuzzbuild/tests/fuzz/fuzz_kernelparse" -merge=1 -artifact_prefix="$tmp/" \
    "$here/corpus/kernelparse" "$tmp/kernels" 2>&1 | grep -E '^MERGE-OUTER: [0-9]+ new' || true
for c in request kernelparse; do
    echo "record.sh: corpus/$c: $(ls "$here/corpus/$c" | wc -l) files, $(du -sh "$here/corpus/$c" | cut -f1)"
done
