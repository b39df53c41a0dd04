#!/usr/bin/env bash
# clblast.sh - Debian's CLBlast correctness tests (clblast_test_*, package
# clblast-tests), unmodified, under vocl-run: each one runs its routine in
# every precision (S, D, C, Z; H is unsupported on PoCL) over many sizes,
# options and strides, and checks each result against the CPU reference BLAS
# (-cblas 1: Debian builds them with a CPU BLAS, without clBLAS).  The
# passed / skipped / failed counts under VOCL must equal the native ones,
# with no failure and a zero exit status.
#
#   clblast.sh VOCL_RUN PROXIES DEVICES_PER_PROXY [ROUTINE...]
#
# Each routine runs on the last VOCL device (the last proxy's), xaxpy on
# every device; the native runs use one PoCL device.  The tests' default
# (not -full_test) coverage is kept.  CLBlast makes a single-device context.
# The first run of xgemm on a machine compiles about 3000 kernels (minutes);
# PoCL caches them (~/.cache/pocl), and the proxies, run by the same user,
# share that cache.
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
ext_check_args "$@"
vocl_run=$(realpath "$1") np=$2 dp=$3
shift 3
routines=("$@")
[ ${#routines[@]} -gt 0 ] ||
    routines=(xaxpy xscal xcopy xswap xdot xnrm2 xasum xamax xgemv xger xtrsv xsymv xgemm)
ext_tmpdir
n=$((np * dp))
for r in "${routines[@]}"; do
    ext_need "clblast_test_$r" clblast-tests
done

# counts FILE: "passed skipped failed", summed over the precisions.
counts() {
    sed 's/\x1b\[[0-9;]*m//g' "$1" |
        awk '/^   [0-9]+ test\(s\) (passed|skipped|failed)$/ { c[$3] += $1 }
             END { printf "%d %d %d\n", c["passed"], c["skipped"], c["failed"] }'
}

status=0
printf '%-8s %-6s %-22s %-8s %-22s %-8s %s\n' routine device "native pass/skip/fail" time "vocl pass/skip/fail" time verdict
for r in "${routines[@]}"; do
    devices=("$((n - 1))")
    [ "$r" = xaxpy ] && mapfile -t devices < <(seq 0 $((n - 1)))
    rc_n=0
    # shellcheck disable=SC2046
    ext_time env $(ext_native_env) POCL_DEVICES=pthread timeout 900 "clblast_test_$r" -cblas 1 \
        >"$tmp/$r.native" 2>&1 || rc_n=$?
    t_n=$ext_secs
    c_n=$(counts "$tmp/$r.native")
    for d in "${devices[@]}"; do
        rc_v=0
        ext_time timeout 900 env VOCL_PROFILE=1 "$vocl_run" "${vocl_opts[@]}" -n "$np" -d "$dp" -- "clblast_test_$r" -cblas 1 -device "$d" \
            >"$tmp/$r.$d.vocl" 2>&1 || rc_v=$?
        t_v=$ext_secs
        c_v=$(counts "$tmp/$r.$d.vocl")
        read -r p_n _ f_n <<<"$c_n"
        read -r _ _ f_v <<<"$c_v"
        why=()
        [ "$rc_n" = 0 ] || why+=("native exit $rc_n")
        [ "$rc_v" = 0 ] || why+=("vocl exit $rc_v")
        [ "$f_n" = 0 ] || why+=("$f_n native failures")
        [ "$f_v" = 0 ] || why+=("$f_v vocl failures")
        [ "$p_n" -gt 0 ] || why+=("nothing passed natively")
        [ "$c_n" = "$c_v" ] || why+=("counts differ")
        ext_vocl_used "$tmp/$r.$d.vocl" || why+=("no VOCL profile table: not run through libvocl")
        verdict=PASS
        [ ${#why[@]} -eq 0 ] || { verdict="FAIL (${why[*]})"; status=1; }
        printf '%-8s %-6s %-22s %-8s %-22s %-8s %s\n' "$r" "$d/$n" "${c_n// //}" "${t_n}s" "${c_v// //}" "${t_v}s" "$verdict"
        if [ "$verdict" != PASS ]; then
            echo "  reproduce: $vocl_run ${vocl_opts[*]}${vocl_opts[*]:+ }-n $np -d $dp -- clblast_test_$r -cblas 1 -device $d"
            sed 's/\x1b\[[0-9;]*m//g' "$tmp/$r.$d.vocl" |
                grep -E 'rror|FAIL|MPI|libvocl|abort|xception|terminate|[1-9][0-9]* test\(s\) failed' |
                grep -vE 'error margins|Pass rate| -> Test ' | sort | uniq -c | head -8 | sed 's/^/    /'
        fi
    done
done
exit $status
