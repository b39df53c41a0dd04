#!/usr/bin/env bash
# kprintf_blocked.sh - kprintf_blocked under vocl-run -n 1 -d 2: another
# thread's reads on the same proxy go on while the printing thread waits
# for a stdout pipe that nobody reads for 2 s, and every line arrives.
#   kprintf_blocked.sh VOCL_RUN PROGRAM
set -euo pipefail
vocl_run=$1 prog=$2
timeout 120 "$vocl_run" -n 1 -d 2 -- "$prog"
