#!/usr/bin/env bash
# sb-micro runs its benchmarks, reports the in-run ratios, writes JSON when asked (stdout stays
# JSON) and an HDF5 file of its rows every run, a partial one when SIGINT ends it; bad input is
# exit 2 with no file. Run by tests/run with the build's bin folder; prints PASS/FAIL lines.
source "$(dirname "$0")/helpers.bash"
set -uo pipefail

fast="--benchmark_min_time=0.01"
"$BIN/sb-micro" --benchmark_filter='BM_(memcpy|fp32_to_fp16|bf16_to_fp32)/262144' $fast --label box=ci \
  --out "$WORK/micro.h5" >"$WORK/console.txt" 2>&1
check "sb-micro exits 0" test $? -eq 0
check "console rows carry bytes_per_second and x_memcpy" \
  test "$(grep -c 'bytes_per_second=.*x_memcpy=' "$WORK/console.txt")" -eq 3
check "it names its results file" grep -qF "# Complete results: $WORK/micro.h5" "$WORK/console.txt"
check_schema "$WORK/micro.h5" box
check "the file holds the 3 rows, by name" \
  bash -c "h5dump -a /micro/name '$WORK/micro.h5' | grep -c 'BM_.*/262144/real_time' | grep -qx 3"
check "with x_memcpy, positive, for each" \
  bash -c "h5dump -d /micro/x_memcpy '$WORK/micro.h5' | grep -qE '\(0\): [0-9.e+-]+, [0-9.e+-]+, [0-9.e+-]+$'"
check "and the traffic rate: a positive number per row" \
  bash -c "h5dump -d /micro/traffic_GBps '$WORK/micro.h5' | grep -E '\(0\):' | grep -vqE '(^|[ ,])-|nan'"
check "the label and the status are recorded" \
  bash -c "h5dump -a /labels/box '$WORK/micro.h5' | grep -q '\"ci\"' && h5dump -a /status '$WORK/micro.h5' | grep -q '\"complete\"'"

"$BIN/sb-micro" --benchmark_filter='BM_topk/262144' $fast --benchmark_format=json --out "$WORK/topk.h5" \
  >"$WORK/out.json" 2>/dev/null
check "--benchmark_format=json gives JSON with the top-k ratio to nth_element" \
  bash -c "grep -q '\"x_nth_element\"' '$WORK/out.json' && grep -q '\"benchmarks\"' '$WORK/out.json'"
check "stdout is JSON alone (the results file is named on stderr)" \
  python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$WORK/out.json"
check "the file has x_nth_element" bash -c "h5dump -H '$WORK/topk.h5' | grep -q 'DATASET \"x_nth_element\"'"

"$BIN/sb-micro" --benchmark_list_tests=true --out "$WORK/list.h5" >"$WORK/list.txt" 2>&1
check "--benchmark_list_tests lists, and writes no file" \
  bash -c "test $? -eq 0 && grep -q '^BM_memcpy/262144/real_time$' '$WORK/list.txt' && ! ls '$WORK'/list.h5* 2>/dev/null"

# SIGINT after the first rows: the rows finished are saved, and the file says why it ended.
"$BIN/sb-micro" --out "$WORK/partial.h5" >"$WORK/partial.txt" 2>&1 &
job=$!
wait_until $job grep -q '^BM_triad/262144' "$WORK/partial.txt"
kill -INT $job
wait $job
rc=$?
check "SIGINT ends the run with status 130 (was $rc)" test $rc -eq 130
check "the partial file says why" \
  bash -c "h5dump -a /status '$WORK/partial.h5' | grep -q 'interrupted by SIGINT while running the benchmarks after BM_'"
check "and holds the rows finished" \
  bash -c "h5dump -a /micro/name '$WORK/partial.h5' | grep -q 'BM_memcpy/262144/real_time'"
check "no temporary file is left" bash -c "! ls '$WORK' | grep -q 'tmp-'"

bad_input() {
  local name=$1; shift
  "$BIN/sb-micro" "$@" --out "$WORK/bad.h5" >"$WORK/bad.out" 2>"$WORK/bad.err"
  local rc=$?
  if [[ $rc -eq 2 && $(wc -l <"$WORK/bad.err") -eq 1 ]] && ! ls "$WORK"/bad.h5* >/dev/null 2>&1; then
    pass "bad input: $name"
  else
    fail "bad input: $name" "rc=$rc: $(head -c 300 "$WORK/bad.err")"
  fi
}
bad_input "unknown format" --benchmark_format=xml
bad_input "a value Google Benchmark does not take" --benchmark_min_time=soon
bad_input "a repetition count below 1 (-1 was a fault, exit 3)" --benchmark_filter=BM_memcpy/262144 --benchmark_repetitions=-1
bad_input "a minimum time that is not finite (1e400 ran forever)" --benchmark_filter=BM_memcpy/262144 --benchmark_min_time=1e400
bad_input "an unknown flag" --fast
bad_input "an unknown Google Benchmark flag" --benchmark_fastest=true
bad_input "a filter that matches nothing" --benchmark_filter=no_such_kernel
bad_input "a label that is not key=value" --label ci
bad_input "a JSON copy where no file can be" --benchmark_out="$WORK/nowhere/out.json"
