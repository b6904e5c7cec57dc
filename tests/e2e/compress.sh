# sb-compress end to end: a run over every compressor, its table and HDF5 file, the schema, and
# bad input; SIGTERM ends a run with the rows measured saved.
source "$(dirname "$0")/helpers.bash"

out=$WORK/compress.h5
$MPIRUN -np 2 "$BIN/sb-compress" -b 64K -e 256K -f 4 -n 2 -w 1 --out "$out" >"$WORK/run.txt" 2>"$WORK/run.err"
check "run exits 0" test $? -eq 0
check "one row per compressor and size (12 x 2)" test "$(grep -cE '^ +[0-9]+ +[a-z0-9]+ +[0-9.]+x ' "$WORK/run.txt")" -eq 24
check "the convergence check has a line per compressor" \
  test "$(grep -cE '^    [a-z0-9]+ +([0-9]+|never|diverged) ' "$WORK/run.txt")" -eq 12
check "uncompressed descent reaches its own target" grep -qE '^    none +(199|200) ' "$WORK/run.txt"
check "EF-signSGD reaches it within 2x the steps" \
  bash -c "grep -E '^    efsign ' '$WORK/run.txt' | awk '{ exit !(\$2 ~ /^[0-9]+$/ && \$2 <= 400) }'"
check "top-k at 1% sends 1/50 of the bytes (index + value)" \
  grep -qE '^ +65536 +topk +50\.0x ' "$WORK/run.txt"
check "fp16 halves the bytes with a relative error near 2^-12" \
  bash -c "grep -E '^ +65536 +fp16 ' '$WORK/run.txt' | awk '{ exit !(\$3 == \"2.0x\" && \$4 < 5e-4 && \$4 > 5e-5) }'"
check "none has no error" bash -c "grep -E '^ +65536 +none ' '$WORK/run.txt' | awk '{ exit !(\$4 == 0) }'"
h5dump -H "$out" >"$WORK/header.txt" 2>&1
check "h5dump reads the file" test $? -eq 0
for name in none fp16 bf16 topk threshold randomk sign efsign onebit qsgd terngrad powersgd; do
  check "group /compress/$name holds the speed-up" grep -q "GROUP \"$name\"" "$WORK/header.txt"
done
check "speedup has a value per size" \
  grep -q 'DATASPACE  SIMPLE { ( 2 ) / ( 2 ) }' <(h5dump -H -d /compress/topk/speedup "$out")
check_schema "$out" none fp16 bf16 topk threshold randomk sign efsign onebit qsgd terngrad powersgd

# A model's real gradients: one row per compressor at the model's gradient size.
$MPIRUN -np 2 "$BIN/sb-compress" --model resnet20 --image-size 32 --batch 4 --compressor none,topk,powersgd -n 1 -w 0 \
  --convergence 0 --out "$WORK/model.h5" >"$WORK/model.txt" 2>&1
check "--model resnet20 exits 0" test $? -eq 0
check "one row per compressor at ResNet-20's 336824 gradients (1000 classes; x4 bytes)" \
  test "$(grep -cE '^ +1347296 +(none|topk|powersgd) ' "$WORK/model.txt")" -eq 3
check "the real gradients lose nothing uncompressed" grep -qE '^ +1347296 +none +1\.0x +0\.00e\+00 ' "$WORK/model.txt"

bad_input() {
  local name=$1; shift
  $MPIRUN_FAILFAST -np 2 "$BIN/sb-compress" "$@" --out "$WORK/bad.h5" >"$WORK/bad.out" 2>"$WORK/bad.err"
  local rc=$?
  if [[ $rc -eq 2 && $(grep -c '^sb-compress: error: ' "$WORK/bad.err") -eq 1 && -z $(ls "$WORK" | grep 'bad.h5') ]]; then
    pass "bad input: $name"
  else
    fail "bad input: $name" "rc=$rc: $(head -c 300 "$WORK/bad.err")"
  fi
}
bad_input "ratio 0" --ratio 0
bad_input "ratio above 1" --ratio 1.5
bad_input "levels beyond a signed byte" --compressor qsgd --levels 200
if ! nvidia-smi -L >/dev/null 2>&1; then bad_input "--device without a GPU" --device; fi
bad_input "unknown compressor" --compressor gzip
bad_input "a size that is not whole fp32 values" -b 6 -e 64K
bad_input "unknown flag" --frobnicate
bad_input "unknown model" --model alexnet
bad_input "PowerSGD rank 0" --compressor powersgd --rank 0

# SIGTERM to the launcher (a scheduler's time limit) once the first row is printed: the rows
# measured are saved, and say why the run ended.
$MPIRUN -np 2 "$BIN/sb-compress" -b 64K -e 64M -f 2 -n 200 --out "$WORK/term.h5" >"$WORK/term.txt" 2>"$WORK/term.err" &
launcher=$!
wait_until "$launcher" grep -qE '^ +65536 +none ' "$WORK/term.txt"
kill -TERM "$launcher"
wait "$launcher"
check "SIGTERM ends the job with one line that says so" grep -q 'interrupted by SIGTERM while measuring' "$WORK/term.err"
check "the rows measured are saved, and say why the run ended" \
  bash -c "h5dump -a /status '$WORK/term.h5' | grep -q 'interrupted by SIGTERM' &&
           h5dump -H -d /compress/none/speedup '$WORK/term.h5' | grep -qE 'SIMPLE \{ \( [1-9][0-9]* \)'"
check "the table says where" grep -q "^# Partial results: $WORK/term.h5" "$WORK/term.txt"
check_schema "$WORK/term.h5" none

# SIGKILL to rank 0 itself once the second compressor's first row is out: no handler runs; what is
# left is the snapshot rank 0 saved after the first compressor's rows, with all of them. 500
# iterations a row keep the second compressor's other four rows (a second or more) from all
# finishing between its first row and the kill (about 1 s here); at 20, once fp16 got faster, they
# could all finish first, and the snapshot was the second's.
$MPIRUN -np 2 "$BIN/sb-compress" --compressor none,fp16 -b 64K -e 1M -f 2 -n 500 --out "$WORK/killed.h5" \
  >"$WORK/killed.txt" 2>&1 &
kill_rank0_when $! "$WORK/killed.txt" '^ +65536 +fp16 ' "sb-compress .*--out $WORK/killed.h5"
status=$(h5_status "$WORK/killed.h5")
check "SIGKILL to rank 0 (pid ${killed_pid:-not found}) in the second compressor leaves the first's snapshot ($status)" \
  test -n "$killed_pid" -a "${status%%:*}" = "snapshot after none's rows (1 of 4 steps)"
check "it holds the first compressor's 5 sizes and nothing of the second" \
  bash -c "h5dump -H -d /compress/none/speedup '$WORK/killed.h5' | grep -qE 'SIMPLE \{ \( 5 \)' &&
           ! h5ls '$WORK/killed.h5/compress' | grep -q '^fp16'"
check_schema "$WORK/killed.h5" none
