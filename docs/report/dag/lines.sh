#!/bin/bash
# lines.sh: host code lines of each DAG application (examples/dag/dag-*.c)
# against the same application written directly on OpenCL for every device
# (multi-*.c) and for one device (plain-*.c), as a markdown table.
#
#   docs/report/dag/lines.sh
#
# A program's lines are those that are neither blank nor comments, from its
# first function (the first line that begins with "static" or "int main")
# to the end of the file: options, input, host code, check, RESULT line.
# The helpers each kind calls for its devices, kernels and errors are
# counted the same way, function by function, and given below the table.
set -euo pipefail
src=$(cd "$(dirname "$0")/../../../examples/dag" && pwd)

# count FILE [FUNCTION...]: the lines of FILE from its first function on,
# or of the named functions only (each from its first line to its "}").
count() {
    local file=$1
    shift
    awk -v names="$*" '
        BEGIN { n = split(names, want, " ") }
        {
            s = $0
            gsub(/^[ \t]+|[ \t]+$/, "", s)
            if (!on) {
                if (n == 0 && s ~ /^(static|int main)/)
                    on = 1
                for (i = 1; i <= n; i++)
                    if ($0 ~ "^[a-z][a-z_ ]*[ *]+" want[i] "\\(")
                        on = 2
                if (!on)
                    next
            }
            if (in_comment) {
                in_comment = index(s, "*/") == 0
            } else if (substr(s, 1, 2) == "/*") {
                in_comment = index(s, "*/") == 0
            } else if (s != "" && substr(s, 1, 2) != "//") {
                lines++
            }
            if (on == 2 && $0 ~ /^}/)
                on = 0
        }
        END { print lines + 0 }' "$file"
}

# span FILE: the lines of FILE (as count has them) from its dagapp_init( to
# its dag_shutdown(: the part of a DAG program that drives the devices.
span() {
    awk '/dagapp_init\(/ { on = 1 }
        on { s = $0; gsub(/^[ \t]+|[ \t]+$/, "", s)
             if (s != "" && substr(s, 1, 2) != "/*" && substr(s, 1, 1) != "*" &&
                 substr(s, 1, 2) != "//") n++ }
        /dag_shutdown\(/ { on = 0 }
        END { print n + 0 }' "$1"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

dag_help=$(count "$src/dagrun.c" dagapp_init dagapp_kernels dagapp_check)
multi_help=$(count "$src/dagapp.c" plain_open_all plain_kernel_all plain_close_all)
plain_help=$(count "$src/dagapp.c" plain_open plain_kernel plain_close)

echo "| application | DAG runtime, all devices | OpenCL, all devices (multi) | OpenCL, one device (plain) | DAG / multi | DAG / plain | with helpers: DAG / multi | DAG / plain |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for app in linreg matmul abcd nbody perlin knn floyd; do
    d=$(count "$src/dag-$app.c") m=$(count "$src/multi-$app.c") p=$(count "$src/plain-$app.c")
    echo "| $app | $d | $m | $p | $(ratio "$d" "$m") | $(ratio "$d" "$p") |" \
        "$(ratio $((d + dag_help)) $((m + multi_help))) |" \
        "$(ratio $((d + dag_help)) $((p + plain_help))) |"
done
echo
spans=""
for app in linreg matmul abcd nbody perlin knn floyd; do
    spans+="${spans:+, }$app $(span "$src/dag-$app.c")"
done
fmt -w 76 <<EOF
From dagapp_init to dag_shutdown (the part of a DAG program that drives the
devices, its CPU check included): $spans lines.
EOF
echo
fmt -w 76 <<EOF
Helpers, not in the counts above: the DAG versions' dagapp_init, dagapp_kernels
and dagapp_check (dagrun.c) are $dag_help lines; multi's plain_open_all,
plain_kernel_all and plain_close_all (dagapp.c) $multi_help; plain's plain_open,
plain_kernel and plain_close $plain_help. The last two columns add each
side's helpers (the RESULT-line printers are left out on both sides).
EOF
