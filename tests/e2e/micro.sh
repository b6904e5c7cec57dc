#!/usr/bin/env bash
# sb-micro runs its benchmarks, reports the in-run ratios, and writes JSON when asked.
# Run by tests/run with the build's bin folder; prints PASS/FAIL lines.
set -uo pipefail
BIN=$1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sb-e2e-micro.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name" "$*"; fi; }

"$BIN/sb-micro" --benchmark_filter='BM_(memcpy|fp32_to_fp16|bf16_to_fp32)/262144' --benchmark_min_time=0.01 \
  >"$WORK/console.txt" 2>&1
check "sb-micro exits 0" test $? -eq 0
check "console rows carry bytes_per_second and x_memcpy" \
  test "$(grep -c 'bytes_per_second=.*x_memcpy=' "$WORK/console.txt")" -eq 3
"$BIN/sb-micro" --benchmark_filter='BM_topk/262144' --benchmark_min_time=0.01 --benchmark_format=json \
  >"$WORK/out.json" 2>/dev/null
check "--benchmark_format=json gives JSON with the top-k ratio to nth_element" \
  bash -c "grep -q '\"x_nth_element\"' '$WORK/out.json' && grep -q '\"benchmarks\"' '$WORK/out.json'"
