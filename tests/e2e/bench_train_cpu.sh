#!/usr/bin/env bash
# scripts/bench-train-cpu pairs sb-train's CPU step with the PyTorch rate script's, with the same
# model, batch, image size, threads, steps and ranks (under the same mpirun), and reports each
# pair's ratio and their median; a
# failed side is a FAILED row and exit 1; bad settings are exit 2. PyTorch is not on CI's machines:
# TORCH_RATE stands in for it, a script that records its arguments and prints a known rate.
# Run by tests/run with the build's bin folder; prints PASS/FAIL lines.
source "$(dirname "$0")/helpers.bash"
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "$BIN/.." && pwd)

cat >"$WORK/fake-torch" <<FAKE
#!/usr/bin/env bash
echo "rank \${OMPI_COMM_WORLD_RANK:-none} of \${OMPI_COMM_WORLD_SIZE:-none}: \$*" >>"$WORK/fake-args.txt"
echo "\${MASTER_PORT:-none}" >>"$WORK/fake-ports.txt"
echo "warming up"
[[ \${OMPI_COMM_WORLD_RANK:-0} == 0 ]] && echo 20.00
exit 0
FAKE
chmod +x "$WORK/fake-torch"
settings=(MODEL=resnet18 IMAGE=112 BATCH=2 STEPS=3 REPEAT=2 THREADS=1)

env "${settings[@]}" OUT="$WORK/ok" TORCH_RATE="$WORK/fake-torch" "$ROOT/scripts/bench-train-cpu" "$BUILD" \
  >"$WORK/ok.txt" 2>&1
check "bench-train-cpu exits 0" test $? -eq 0
check "the rate script is asked for the same run on the CPU, its first step left out, under mpirun" \
  test "$(sort -u "$WORK/fake-args.txt")" = "rank 0 of 1: --device cpu --model resnet18 --batch 2 --image-size 112 --threads 1 --warmup 1 fp32 2"
check "it ran twice (two pairs)" test "$(wc -l <"$WORK/fake-args.txt")" -eq 2
# Each row's ratio is sb-train's [throughput] figure of that pair over 20.
rows_agree() {
  local pair ours torch ratio expected n=0
  while read -r pair ours torch ratio; do
    expected=$(awk '/^\[throughput\]/ { printf "%.3f", $2 / 20 }' "$WORK/ok/ours-$pair.txt")
    [[ $torch == 20.00 && -n $expected && $ratio == "$expected" ]] || return 1
    n=$((n + 1))
  done < <(grep -E '^ +[0-9]+ +[0-9.]+ +20.00 ' "$WORK/ok.txt")
  ((n == 2))
}
check "each pair's ratio is sb-train's [throughput] over the rate script's figure" rows_agree
median_agrees() {
  local expected
  expected=$(awk '/^ +[0-9]+ +[0-9.]+ +20.00 / { s += $4; n++ } END { if (n == 2) print s / 2 }' "$WORK/ok.txt")
  grep -qE "^ours / torch: median ${expected}x over 2 pairs" "$WORK/ok.txt"
}
check "the median of two pairs is their mean" median_agrees
check "sb-train wrote a results file per pair" test -s "$WORK/ok/ours-1.h5" -a -s "$WORK/ok/ours-2.h5"

# Two ranks: both sides data-parallel under one mpirun, the rate script given the global batch.
env "${settings[@]}" RANKS=2 BATCH=4 REPEAT=1 OUT="$WORK/dp" TORCH_RATE="$WORK/fake-torch" "$ROOT/scripts/bench-train-cpu" \
  "$BUILD" >"$WORK/dp.txt" 2>&1
check "RANKS=2 exits 0" test $? -eq 0
check "the rate script ran on both ranks with the global batch" \
  test "$(tail -2 "$WORK/fake-args.txt" | sort | tr '\n' '|')" = "rank 0 of 2: --device cpu --model resnet18 --batch 4 --image-size 112 --threads 1 --warmup 1 fp32 2|rank 1 of 2: --device cpu --model resnet18 --batch 4 --image-size 112 --threads 1 --warmup 1 fp32 2|"
check "sb-train ran on 2 ranks" grep -q "on 2 ranks" "$WORK/dp/ours-1.txt"
check "and the pair has its ratio" grep -qE '^ +1 +[0-9.]+ +20.00 +[0-9.]+$' "$WORK/dp.txt"
ports=$(tail -2 "$WORK/fake-ports.txt" | sort -u)
check "both ranks were given one MASTER_PORT ($(echo $ports)) for DDP to meet at, nothing listening on it" \
  bash -c "[[ '$ports' =~ ^[0-9]+$ ]] && ! (exec 3<>/dev/tcp/127.0.0.1/$ports) 2>/dev/null"
env "${settings[@]}" RANKS=2 BATCH=4 REPEAT=1 MASTER_PORT=23456 OUT="$WORK/dp-port" TORCH_RATE="$WORK/fake-torch" \
  "$ROOT/scripts/bench-train-cpu" "$BUILD" >"$WORK/dp-port.txt" 2>&1
check "a MASTER_PORT set is kept" test "$(tail -2 "$WORK/fake-ports.txt" | sort -u)" = 23456

printf '#!/bin/sh\necho "no such device" >&2\nexit 1\n' >"$WORK/broken-torch"
chmod +x "$WORK/broken-torch"
env "${settings[@]}" REPEAT=1 OUT="$WORK/broken" TORCH_RATE="$WORK/broken-torch" "$ROOT/scripts/bench-train-cpu" "$BUILD" \
  >"$WORK/broken.txt" 2>&1
check "a failed side is exit 1" test $? -eq 1
check "and a FAILED row with no ratio" grep -qE '^ +1 +[0-9.]+ +FAILED +n/a$' "$WORK/broken.txt"

for bad in MODEL=resnet20 IMAGE=64 STEPS=1 BATCH=0 REPEAT=x THREADS=-1 RANKS=0 "RANKS=3 BATCH=4"; do
  env "${settings[@]}" $bad OUT="$WORK/bad" TORCH_RATE="$WORK/fake-torch" "$ROOT/scripts/bench-train-cpu" "$BUILD" \
    >"$WORK/bad.txt" 2>&1
  check "$bad is exit 2 with one line, before any run" \
    bash -c "test $? -eq 2 && test \$(wc -l <'$WORK/bad.txt') -eq 1 && grep -q '^bench-train-cpu: ' '$WORK/bad.txt' && test ! -e '$WORK/bad'"
done

for args in "--device cpu bf16" "--batch 0 fp32" "--model resnet20 fp32" "fp32 0"; do
  python3 "$ROOT/scripts/torch-resnet-rate" $args >"$WORK/rate.txt" 2>&1
  check "torch-resnet-rate $args is exit 2 with one line (no PyTorch needed)" \
    bash -c "test $? -eq 2 && test \$(wc -l <'$WORK/rate.txt') -eq 1"
done
