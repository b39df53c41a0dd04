#!/bin/bash
# hep-test.sh: the integration tests of the HEP runtime (tests/apps/meson.build).
#
#   hep-test.sh native APP
#     generates a small events file, then runs APP on the PoCL devices of
#     POCL_DEVICES from the bad order (adaptive and fixed), the good order,
#     two random valid orders, one device, a fixed DS/DP split and small
#     batches: every run must say verified=yes with the same selected
#     events and histograms (ids_hash=, hist_hash=), the adaptive run must
#     move kin_reco off its bad position, and the output files (ids,
#     histograms, table, --plot's PNGs) must hold what the RESULT line says.
#     Then --analysis heavy (two heavy cuts written first) from its written
#     order, adaptive and fixed, from the good order and from the adaptive
#     run's final order given by name: verified, one selection, and the
#     heavy cuts moved off the front.  And --analysis light (no random
#     numbers): adaptive, from the good order and with fixed splits.
#   hep-test.sh vocl VOCL_RUN P D APP
#     the same file natively and under `VOCL_RUN -n P -d D --`: identical
#     selected events and histograms, for both analyses.
#   hep-test.sh bad-input APP
#     missing, foreign, truncated and damaged files and broken options: each
#     must end with exit status 2 and a message naming the problem, never a
#     crash or a RESULT line, and must leave earlier outputs as they were.
set -u
mode=$1
shift
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
failures=0
events=6000

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# field NAME LINE: the value of NAME= in a RESULT line.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# run LABEL COMMAND...: runs, checks verified=yes, keeps the RESULT line.
run() {
    local label=$1
    shift
    local out rc last
    out=$("$@" 2>"$dir/$label.err")
    rc=$?
    printf '%s\n' "$out" >"$dir/$label.out"
    last=$(tail -n 1 <<<"$out")
    echo "$label: $last"
    if [[ $rc != 0 || $last != RESULT\ *\ verified=yes ]]; then
        fail "$label: exit status $rc"
        tail -n 5 "$dir/$label.err"
    fi
    printf '%s\n' "$last" >"$dir/$label"
}

# same LABEL REF: LABEL selected the same events and filled the same histograms.
same() {
    local a b
    a=$(<"$dir/$1") b=$(<"$dir/$2")
    for f in selected ids_hash hist_hash; do
        [[ -n $(field $f "$a") && $(field $f "$a") == "$(field $f "$b")" ]] ||
            fail "$1: $f=$(field $f "$a"), $2 has $(field $f "$b")"
    done
}

generate() {
    "$1" -n $events --seed 7 --generate "$dir/events.h5" >/dev/null ||
        { fail "cannot generate the events"; exit 1; }
}

case $mode in
native)
    app=$1
    generate "$app"
    common=(--input "$dir/events.h5" --seed 7 --no-progress --batch 512 --out "$dir")
    mkdir "$dir/out"
    run bad "$app" "${common[@]}" --out "$dir/out" --plot
    mkdir "$dir/fixed-out"
    run fixed "$app" "${common[@]}" --no-adapt --out "$dir/fixed-out"
    run good "$app" "${common[@]}" --order good --no-adapt
    run shuffle3 "$app" "${common[@]}" --order shuffle:3
    run shuffle9 "$app" "${common[@]}" --order shuffle:9 --no-adapt
    run one-device "$app" "${common[@]}" --devices 1
    run split "$app" "${common[@]}" --threads 4 --ds-threads 1 --slots 1
    run batches "$app" --input "$dir/events.h5" --seed 7 --no-progress --batch 64 --checkpoint 1 \
        --out "$dir"
    for l in fixed good shuffle3 shuffle9 one-device split batches; do
        same $l bad
    done
    bad=$(<"$dir/bad")
    [[ $(field selected "$bad") -gt 0 ]] || fail "nothing selected: the test proves little"
    [[ $(field devices "$(<"$dir/one-device")") == 1 ]] || fail "--devices 1 used more"
    # Reordering happened: kin_reco (index 2, the heaviest) leaves position 2.
    order=$(field final_order "$bad")
    [[ $(cut -d, -f3 <<<"$order") != 2 && $(field checkpoints "$bad") -ge 1 ]] ||
        fail "the adaptive run kept kin_reco at position 2 (final_order=$order)"
    [[ $(field final_order "$(<"$dir/fixed")") == 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17 ]] ||
        fail "--no-adapt changed the order"
    # The outputs say what the RESULT line says.
    out=$dir/out
    [[ $(wc -l <"$out/hep-tth-ids.txt") == $(field selected "$bad") ]] ||
        fail "hep-tth-ids.txt does not hold the selected events"
    sort -c -n "$out/hep-tth-ids.txt" || fail "hep-tth-ids.txt is not sorted"
    [[ $(grep -c '^histogram ' "$out/hep-tth-hists.txt") == 5 ]] || fail "hep-tth-hists.txt"
    # Every histogram counts each selected event once (bins + under/overflow).
    awk -v want="$(field selected "$bad")" '
        /^histogram/ { if (n) { if (sum != want) bad = 1 } n++; sum = 0; next }
        /^#/ { next }
        /^(underflow|overflow)/ { sum += $2; next }
        { sum += $3 }
        END { if (sum != want) bad = 1; exit bad }' "$out/hep-tth-hists.txt" ||
        fail "a histogram does not sum to the selected events"
    [[ $(grep -c '^[a-z_]* *[0-9] ' "$out/hep-tth-props.txt") == 18 ]] ||
        fail "hep-tth-props.txt does not list 18 propositions"
    [[ $(awk 'NR == 2 { print $3 }' "$dir/fixed-out/hep-tth-props.txt") == "$events" ]] ||
        fail "the first proposition did not see every event"
    for h in m_higgs m_bb m_top ht reco_chi2; do
        [[ $(head -c 8 "$out/hep-tth-$h.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
            fail "no PNG for $h"
    done
    # The heavy analysis: met_sig and ht_smear (indices 0 and 1) written
    # first; reordering must take both off the front.
    heavy=(--analysis heavy --input "$dir/events.h5" --seed 7 --no-progress --batch 512)
    mkdir "$dir/heavy-out"
    run heavy "$app" "${heavy[@]}" --out "$dir/heavy-out"
    run heavy-fixed "$app" "${heavy[@]}" --no-adapt --out "$dir"
    run heavy-good "$app" "${heavy[@]}" --order good --no-adapt --out "$dir"
    names=$(awk 'NR > 1 { print $1 }' "$dir/heavy-out/hep-tth-heavy-props.txt" | paste -sd,)
    run heavy-named "$app" "${heavy[@]}" --order "$names" --no-adapt --out "$dir"
    for l in heavy-fixed heavy-good heavy-named; do
        same $l heavy
    done
    h=$(<"$dir/heavy")
    [[ $(field analysis "$h") == heavy && $(grep -c '^[a-z_]* *[0-9] ' \
        "$dir/heavy-out/hep-tth-heavy-props.txt") == 20 ]] || fail "--analysis heavy: not 20 propositions"
    order=$(field final_order "$h")
    [[ $(cut -d, -f1 <<<"$order") != 0 && $(cut -d, -f1 <<<"$order") != 1 &&
        $(cut -d, -f2 <<<"$order") != 0 && $(cut -d, -f2 <<<"$order") != 1 ]] ||
        fail "the adaptive heavy run kept a heavy cut in front (final_order=$order)"
    # heavy-named was the last to write $dir: its table is in the order it ran.
    [[ $(awk 'NR > 1 { print $1 }' "$dir/hep-tth-heavy-props.txt" | paste -sd,) == "$names" ]] ||
        fail "--order NAMES: the run did not follow the named order"
    light=(--analysis light --input "$dir/events.h5" --seed 7 --no-progress --batch 512 --out "$dir")
    run light "$app" "${light[@]}"
    run light-good "$app" "${light[@]}" --order good --no-adapt
    run light-ds1 "$app" "${light[@]}" --threads 4 --ds-threads 1
    run light-ds3 "$app" "${light[@]}" --threads 4 --ds-threads 3
    for l in light-good light-ds1 light-ds3; do
        same $l light
    done
    [[ $(field selected "$(<"$dir/light")") -gt $(field selected "$bad") ]] ||
        fail "--analysis light selects no more events than tth"
    ;;
vocl)
    vocl_run=$1 p=$2 d=$3 app=$4
    generate "$app"
    common=(--input "$dir/events.h5" --seed 7 --no-progress --batch 512 --out "$dir")
    run native env POCL_DEVICES="pthread pthread" "$app" "${common[@]}"
    run vocl "$vocl_run" -n "$p" -d "$d" -- "$app" "${common[@]}" --order shuffle:5
    same vocl native
    [[ $(field devices "$(<"$dir/vocl")") == $((p * d)) ]] || fail "vocl-run: not $((p * d)) devices"
    run heavy-native env POCL_DEVICES="pthread pthread" "$app" "${common[@]}" --analysis heavy
    run heavy-vocl "$vocl_run" -n "$p" -d "$d" -- "$app" "${common[@]}" --analysis heavy
    same heavy-vocl heavy-native
    run light-native env POCL_DEVICES="pthread pthread" "$app" "${common[@]}" --analysis light
    run light-vocl "$vocl_run" -n "$p" -d "$d" -- "$app" "${common[@]}" --analysis light
    same light-vocl light-native
    ;;
bad-input)
    app=$1
    generate "$app"
    # An earlier run's outputs, which no failing run may touch.
    mkdir "$dir/out"
    run first "$app" --input "$dir/events.h5" --seed 7 --no-progress --out "$dir/out"
    sums=$(cd "$dir/out" && md5sum hep-tth-* | sort)
    expect() {
        local words=$1
        shift
        local out rc
        out=$("$@" 2>&1)
        rc=$?
        if [[ $rc != 2 ]]; then
            fail "'$*' exited $rc, not 2"
        elif ! grep -qi -- "$words" <<<"$out"; then
            fail "'$*' did not say '$words': $out"
        elif grep -q '^RESULT' <<<"$out"; then
            fail "'$*' printed a RESULT line"
        fi
    }
    o=(--no-progress --out "$dir/out")
    expect "cannot open" "$app" --input "$dir/none.h5" "${o[@]}"
    echo "plain text" >"$dir/text.h5"
    expect "not an HDF5 file" "$app" --input "$dir/text.h5" "${o[@]}"
    head -c 5000 "$dir/events.h5" >"$dir/short.h5"
    expect "$dir/short.h5" "$app" --input "$dir/short.h5" "${o[@]}"
    cp "$dir/events.h5" "$dir/damaged.h5"
    size=$(stat -c %s "$dir/damaged.h5")
    printf 'garbage%.0s' $(seq 2000) | dd of="$dir/damaged.h5" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
    expect "damaged" "$app" --input "$dir/damaged.h5" "${o[@]}"
    expect "not a number" "$app" -n 0 "${o[@]}"
    expect "not a number" "$app" --batch 12x "${o[@]}"
    expect "needs a value" "$app" --threads
    expect "unknown option" "$app" --frobnicate
    expect "want bad, good" "$app" --order worst
    expect "want tth, heavy or light" "$app" --analysis medium
    expect "not a proposition" "$app" --input "$dir/events.h5" --order trigger,nonsense "${o[@]}"
    expect "names 2 of the 18" "$app" --input "$dir/events.h5" --order trigger,met "${o[@]}"
    # mtw (after one_lepton and met) first.
    expect "runs a proposition before one it depends on" "$app" --input "$dir/events.h5" \
        --analysis heavy "${o[@]}" --order mtw,met_sig,ht_smear,one_lepton,four_jets,kin_reco,\
top_had,met,met_smear,higgs_window,ht,jets_central,lep_central,lepton_veto,trigger,\
reco_quality,two_btags,bb_mass,six_jets,three_btags
    expect "DS threads must be" "$app" --input "$dir/events.h5" --threads 4 --ds-threads 4 "${o[@]}"
    expect "does not exist" "$app" --input "$dir/events.h5" --out "$dir/nowhere" --no-progress
    [[ $sums == "$(cd "$dir/out" && md5sum hep-tth-* | sort)" ]] ||
        fail "a failing run changed the earlier outputs"
    [[ -z $(find "$dir/out" -name '*.tmp') ]] || fail "a failing run left a temporary file"
    "$app" --help | grep -q -- "--order" || fail "--help does not list the options"
    ;;
*)
    echo "usage: hep-test.sh native|vocl|bad-input ..." >&2
    exit 2
    ;;
esac
[[ $failures == 0 ]] && echo "PASS" || echo "$failures failure(s)"
exit $((failures > 0))
