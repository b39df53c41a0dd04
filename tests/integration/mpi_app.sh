#!/usr/bin/env bash
# mpi_app.sh VOCL_RUN PROGRAM PMPI_TOOL - an MPI program that calls plain
# MPI_Init: under vocl-run it gets MPI_THREAD_MULTIPLE and works, preloaded
# and as an ICD; with an MPI profiling tool preloaded too, the tool's
# MPI_Finalize still runs; made to run below MPI_THREAD_MULTIPLE, libvocl
# ends the job at once and says why.
set -euo pipefail
vocl_run=$1 prog=$2 tool=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for mode in "" --icd; do
    for i in 1 2 3; do
        rc=0
        timeout 120 "$vocl_run" $mode -n 1 -d 1 -- "$prog" >"$tmp/out" 2>"$tmp/err" || rc=$?
        [ "$rc" -eq 0 ] || fail "vocl-run $mode, run $i: exit $rc: $(tail -5 "$tmp/err")"
        grep -q 'MPI thread level multiple' "$tmp/out" || fail "not MPI_THREAD_MULTIPLE: $(cat "$tmp/out")"
        grep -q 'rounds verified' "$tmp/out" || fail "vocl-run $mode, run $i: $(cat "$tmp/out")"
    done
    echo "vocl-run ${mode:-(preload)}: 3 runs: $(grep verified "$tmp/out")"
done

# The tool preloaded before libvocl (VOCL_PRELOAD), or into the ranks of an
# ICD run; after a sanitizer's runtime, which must come first.
pre=${VOCL_PRELOAD:+$VOCL_PRELOAD:}$tool
for mode in "" --icd; do
    rc=0
    if [ -z "$mode" ]; then
        VOCL_PRELOAD=$pre timeout 120 "$vocl_run" -v -n 1 -d 1 -- "$prog" >"$tmp/out" 2>"$tmp/err" || rc=$?
    else
        timeout 120 "$vocl_run" --icd -genv LD_PRELOAD "$pre" -v -n 1 -d 1 -- "$prog" \
            >"$tmp/out" 2>"$tmp/err" || rc=$?
    fi
    [ "$rc" -eq 0 ] || fail "with the tool, vocl-run $mode: exit $rc: $(tail -5 "$tmp/err")"
    grep -q 'rounds verified' "$tmp/out" || fail "with the tool, vocl-run $mode: $(cat "$tmp/out")"
    grep -q '^pmpi_tool: MPI_Finalize$' "$tmp/out" || fail "with the tool, vocl-run $mode: the tool's MPI_Finalize did not run"
    grep -q "MPI_Finalize redirected to libvocl's, which then calls .*pmpi_tool" "$tmp/err" ||
        fail "with the tool, vocl-run $mode: no redirect: $(grep libvocl "$tmp/err")"
    echo "with a profiling tool, vocl-run ${mode:-(preload)}: the tool's MPI_Finalize ran after libvocl's"
done

start=$(date +%s)
rc=0
MPIR_CVAR_DEFAULT_THREAD_LEVEL=MPI_THREAD_SINGLE timeout 60 "$vocl_run" -n 1 -d 1 -- "$prog" \
    >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -ne 124 ] || fail "hangs below MPI_THREAD_MULTIPLE"
[ "$rc" -ne 0 ] || fail "succeeds below MPI_THREAD_MULTIPLE"
grep -q 'libvocl: error: the application initialised MPI below MPI_THREAD_MULTIPLE' "$tmp/err" ||
    fail "no message below MPI_THREAD_MULTIPLE (exit $rc): $(cat "$tmp/err" "$tmp/out")"
! grep -q 'rounds verified' "$tmp/out" || fail "ran on below MPI_THREAD_MULTIPLE"
echo "below MPI_THREAD_MULTIPLE: exit $rc after $(( $(date +%s) - start )) s: $(grep 'libvocl: error' "$tmp/err" | cut -c1-90)..."
