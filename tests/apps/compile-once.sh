#!/bin/bash
# compile-once.sh COMMAND... [';' COMMAND...]: a runtime's launches name
# their work-group size, so PoCL compiles each kernel once per run.
#
# Left to the driver (a NULL local size), the group size follows each
# launch's global size, and PoCL compiles every kernel again for each
# group size it meets, inside the timed part of the run: kmer-assemble met
# 61 sizes of its lookup on a 2,000,000-base genome, 8 s of compiling in a
# run that takes 0.4 s without.
#
# Runs the commands (separated by lone ';' words) in turn, with PoCL's
# kernel cache (POCL_CACHE_DIR) empty at the start; a word beginning with
# '@/' names a file in a scratch directory (the input one command makes
# for the next, the outputs).  Passes when every command exits 0, the last
# one's last RESULT line says verified=yes, and the cache then holds
# kernels, each built for one work-group size.
set -u
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/cache"
export POCL_CACHE_DIR=$dir/cache

run() {
    "$@" >"$dir/out" 2>&1
    local rc=$?
    cat "$dir/out"
    [[ $rc == 0 ]] || { echo "FAIL: exit status $rc: $*"; exit 1; }
}
command=()
for word in "$@"; do
    if [[ $word == ';' ]]; then
        run "${command[@]}"
        command=()
    else
        command+=("${word/#@\//$dir/}")
    fi
done
run "${command[@]}"
[[ $(grep '^RESULT ' "$dir/out" | tail -n 1) == *\ verified=yes ]] || { echo "FAIL: not verified"; exit 1; }

# PoCL's layout: cache/XX/PROGRAM_HASH/KERNEL/GROUP-SIZE-AND-FLAGS/KERNEL.so
builds=$(cd "$dir/cache" && find . -mindepth 5 -maxdepth 5 -name '*.so' | cut -d/ -f2-5 | sort)
[[ -n $builds ]] || { echo "FAIL: no compiled kernel under POCL_CACHE_DIR (is the driver PoCL?)"; exit 1; }
echo "compiled, by kernel and work-group size:"
sed 's/^/  /' <<<"$builds"
again=$(cut -d/ -f1-3 <<<"$builds" | uniq -d | tr '\n' ' ')
[[ -z $again ]] || { echo "FAIL: compiled for more than one work-group size: $again"; exit 1; }
echo "ok: $(wc -l <<<"$builds") kernel(s), each compiled once"
