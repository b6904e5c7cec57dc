# sb-buckets end to end at 2 ranks: a profile measured and written, the same profile read back, a
# table row per strategy and size with the two baselines, the HDF5 file against SCHEMA.md, and bad
# input; a stuck rank or SIGTERM ends the job with the rows measured saved.
source "$(dirname "$0")/helpers.bash"
export OMP_NUM_THREADS=1
out=$WORK/buckets.h5
$MPIRUN -np 2 "$BIN/sb-buckets" --model resnet20 --image-size 28 --batch 32 --threads 1 --compute-scale 0.5 \
  -b 0.25 -e 1 -n 2 --write-profile "$WORK/profile.txt" --out "$out" >"$WORK/run.txt" 2>"$WORK/run.err"
check "run exits 0" test $? -eq 0
check "baselines: no overlap and one fused allreduce" grep -qE '^  no-overlap .*' "$WORK/run.txt"
check "rows: 1 per-tensor + 3 sizes x 4 strategies" \
  test "$(grep -cE '^  (per-tensor|fixed|ddp|partition|cycle) ' "$WORK/run.txt")" -eq 13
check "a best size per strategy" test "$(grep -c '^#   ' "$WORK/run.txt")" -eq 5
check "the profile lists 65 tensors, the backward and the forward time" \
  test "$(grep -vc '^#\|^backward \|^forward ' "$WORK/profile.txt")" -eq 65 -a "$(grep -c '^backward ' "$WORK/profile.txt")" -eq 1 \
  -a "$(grep -c '^forward ' "$WORK/profile.txt")" -eq 1
check "overlap lies in [0, 1]" bash -c "grep -E '^  (ddp|fixed) ' '$WORK/run.txt' | awk '{ sub(\"%\", \"\", \$7); v = \$7 + 0; if (v < 0 || v > 100) bad = 1 } END { exit bad }'"
$MPIRUN -np 2 "$BIN/sb-buckets" --profile "$WORK/profile.txt" --strategy ddp -b 1 -e 1 -n 1 --out "$WORK/again.h5" \
  >"$WORK/again.txt" 2>&1
check "a written profile reads back" grep -qE '^  ddp +1\.00 ' "$WORK/again.txt"
# Rank 0 reads the profile and sends it: a copy on its node alone is enough (each rank starts in a
# folder of its own, as on nodes with local disks), and the other ranks replay the same one.
mkdir -p "$WORK/node-a" "$WORK/node-b" && cp "$WORK/profile.txt" "$WORK/node-a/"
buckets_bin=$(cd "$BIN" && pwd)/sb-buckets
node_args=(--profile profile.txt --strategy ddp -b 1 -e 1 -n 1 --threads 1 --out "$WORK/node.h5")
$MPIRUN -np 1 --wdir "$WORK/node-a" "$buckets_bin" "${node_args[@]}" : -np 1 --wdir "$WORK/node-b" "$buckets_bin" \
  "${node_args[@]}" >"$WORK/node.txt" 2>&1
check "a profile on rank 0's node alone is replayed by both ranks (exit $?)" grep -qE '^  ddp +1\.00 ' "$WORK/node.txt"
# Both progress modes in one run: the polled sweeps beside the threaded ones, compared; the cycle
# strategy, Horovod's loop, is a thread of its own, swept once.
$MPIRUN -np 2 "$BIN/sb-buckets" --profile "$WORK/profile.txt" --strategy ddp,partition,cycle -b 0.5 -e 1 -n 1 \
  --progress thread,poll --out "$WORK/poll.h5" >"$WORK/poll.txt" 2>&1
check "--progress thread,poll exits 0" test $? -eq 0
check "polled rows for each strategy and size" test "$(grep -cE '^  (ddp|partition)@poll ' "$WORK/poll.txt")" -eq 4
check "the polled best is compared with the thread's" test "$(grep -c "x the thread's best" "$WORK/poll.txt")" -eq 2
check "the file has the polled groups" bash -c "h5ls '$WORK/poll.h5/buckets' | grep -q '^ddp@poll '"
check "cycle is swept by its own thread alone, and the table says so" bash -c \
  "grep -qE '^  cycle ' '$WORK/poll.txt' && ! grep -q 'cycle@poll' '$WORK/poll.txt' && grep -q 'never polled' '$WORK/poll.txt' &&
   ! h5ls '$WORK/poll.h5/buckets' | grep -q '^cycle@poll '"
# A schedule on the shm transport: the buckets' fused buffers must be in shared windows (they were
# not, and the first reduction ended the job).
$MPIRUN -np 2 "$BIN/sb-buckets" --profile "$WORK/profile.txt" --strategy ddp,per-tensor -b 1 -e 1 -n 1 \
  --algo ring --transport shm --out "$WORK/shm.h5" >"$WORK/shm.txt" 2>&1
check "--algo ring --transport shm exits 0" test $? -eq 0
check "with a row for each strategy" test "$(grep -cE '^  (ddp|per-tensor) ' "$WORK/shm.txt")" -eq 2
# The cycle strategy, Horovod's background loop, live: nothing is reduced before its second cycle, and a
# longer cycle fuses more gradients per bucket.
$MPIRUN -np 2 "$BIN/sb-buckets" --profile "$WORK/profile.txt" --strategy cycle -b 1 -e 1 -n 1 --cycle-ms 2 \
  --out "$WORK/cycle.h5" >"$WORK/cycle.txt" 2>&1
check "--strategy cycle --cycle-ms 2 exits 0" test $? -eq 0
check "with a row, and the cycle time said" \
  bash -c "grep -qE '^  cycle +1\.00 ' '$WORK/cycle.txt' && grep -q '^# cycle: .* each cycle (2 ms)' '$WORK/cycle.txt'"
check "the file records the cycle time" test "$(h5_attr "$WORK/cycle.h5" /buckets/cycle/cycle_ms)" = 2
h5dump -m %.17g -y -w 0 -d /buckets/cycle/bucket_start_s "$WORK/cycle.h5" | sed -n '/DATA {/,/}/p' |
  grep -oE -- '-?[0-9.]+(e[-+]?[0-9]+)?' >"$WORK/cycle-starts.txt"
check "no bucket starts before the 2 ms tick ($(sort -g "$WORK/cycle-starts.txt" | head -1) s)" \
  awk 'NR == 1 || $1 < m { m = $1 } END { exit !(NR > 0 && m >= 0.0019) }' "$WORK/cycle-starts.txt"
# Several cycle times in one run: a sweep each, named for it.
$MPIRUN -np 2 "$BIN/sb-buckets" --profile "$WORK/profile.txt" --strategy cycle -b 1 -e 1 -n 1 --cycle-ms 2,50 \
  --out "$WORK/cycles.h5" >"$WORK/cycles.txt" 2>&1
check "--cycle-ms 2,50 exits 0 with a sweep each" \
  bash -c "test $? -eq 0 && grep -qE '^  cycle-2ms ' '$WORK/cycles.txt' && grep -qE '^  cycle-50ms ' '$WORK/cycles.txt'"
check "each group records its cycle time" \
  test "$(h5_attr "$WORK/cycles.h5" /buckets/cycle-2ms/cycle_ms),$(h5_attr "$WORK/cycles.h5" /buckets/cycle-50ms/cycle_ms)" = 2,50
# Each cycle negotiates, at 2 ranks an allreduce that takes time: part of communication_s, not all.
negotiated=$(h5_values "$WORK/cycles.h5" /buckets/cycle-2ms/negotiation_s)
communicated=$(h5_values "$WORK/cycles.h5" /buckets/cycle-2ms/communication_s)
check "2 ms cycles spend part of their communication negotiating ($negotiated of $communicated s)" \
  awk -v n="$negotiated" -v c="$communicated" 'BEGIN { exit !(n > 0 && n < c) }'
check "the no-overlap baseline negotiates nothing" test "$(h5_values "$WORK/cycles.h5" /buckets/no-overlap/negotiation_s)" = 0
# A negotiation a cycle: 2 ms cycles make more of them in a step than 50 ms ones, and at least one.
cycles_of() { h5_values "$WORK/cycles.h5" "/buckets/$1/negotiations"; }
check "2 ms cycles negotiate more often than 50 ms ones ($(cycles_of cycle-2ms) vs $(cycles_of cycle-50ms) a step), no-overlap never" \
  bash -c "test '$(cycles_of cycle-2ms)' -gt '$(cycles_of cycle-50ms)' && test '$(cycles_of cycle-50ms)' -ge 1 &&
           test '$(cycles_of no-overlap)' = 0"
check "the best sizes' lines say the cycles a step, as the file does" \
  grep -qE "^#   cycle-2ms .*, $(cycles_of cycle-2ms) cycles a step$" "$WORK/cycles.txt"
buckets_at() { awk -v s="$1" '$1 == s { print $3 }' "$WORK/cycles.txt"; }
check "50 ms cycles fuse into fewer buckets than 2 ms ($(buckets_at cycle-50ms) vs $(buckets_at cycle-2ms))" \
  test "$(buckets_at cycle-50ms)" -lt "$(buckets_at cycle-2ms)"
# --trace: each configuration's reported step, on both ranks, as a Chrome trace.
$MPIRUN -np 2 "$BIN/sb-buckets" --profile "$WORK/profile.txt" --strategy per-tensor,fixed -b 0.5 -e 1 -n 3 \
  --trace "$WORK/trace.json" --out "$WORK/trace.h5" >"$WORK/trace.txt" 2>&1
check "--trace exits 0 and says where the trace went" \
  bash -c "test $? -eq 0 && grep -qE '^# trace: [0-9]+ events of 2 ranks, written to .*trace.json' '$WORK/trace.txt'"
steps='.cat == "step" and .tid == 0 and .args.buckets != null'
for r in 0 1; do
  count() { jq "[.traceEvents[] | select(.pid == $r and ($1))] | length" "$WORK/trace.json"; }
  check "rank $r: a step per row (2 baselines, per-tensor, fixed at 2 sizes)" test "$(count "$steps")" -eq 5
  check "rank $r: a tick per gradient handed over in each step" test "$(count '.cat == "gradient ready"')" -eq $((5 * 65))
  check "rank $r: as many bucket reductions as the rows' buckets" test "$(count '.cat == "allreduce"')" -eq \
    "$(jq "[.traceEvents[] | select(.pid == $r and $steps) | .args.buckets] | add" "$WORK/trace.json")"
  check "rank $r: each bucket reduction inside its own step" test "$(jq "
    [.traceEvents[] | select(.pid == $r and $steps)] as \$s |
    [.traceEvents[] | select(.pid == $r and .cat == \"allreduce\") | . as \$b |
     select(any(\$s[]; .ts <= \$b.ts and \$b.ts + \$b.dur <= .ts + .dur + 1))] | length" "$WORK/trace.json")" \
    -eq "$(count '.cat == "allreduce"')"
done
# The traced step is the one each row reports: its slowest rank's length is the row's iteration_s.
h5dump -m %.17g -y -w 0 -d /buckets/fixed/iteration_s "$WORK/trace.h5" | sed -n '/DATA {/,/}/p' |
  grep -oE -- '-?[0-9.]+(e[-+]?[0-9]+)?' >"$WORK/trace-rows.txt"
jq -r '[.traceEvents[] | select(.cat == "step" and (.name | startswith("fixed,")))] | group_by(.name) |
  sort_by(.[0].args.bucket_mb) | .[] | map(.dur) | max / 1e6' "$WORK/trace.json" >"$WORK/trace-steps.txt"
check "each traced step's slowest rank took its row's iteration time (fixed, HDF5)" bash -c "
  test \$(wc -l <'$WORK/trace-rows.txt') -eq 2 && test \$(wc -l <'$WORK/trace-steps.txt') -eq 2 &&
  paste '$WORK/trace-rows.txt' '$WORK/trace-steps.txt' | awk '{ d = \$1 - \$2; if (d < -1e-7 || d > 1e-7) bad = 1 } END { exit bad }'"
check "the run records its trace" grep -q 'trace.json' <(h5dump -a /buckets/trace "$WORK/trace.h5")
# --jitter: each rank's replayed backward of a timed step at 1 + CV z its profile's, each step at
# its slowest rank's pace. A 100 ms backward of three gradients, 25 timed steps, the same draws with
# and without a row's buckets.
printf 'backward 0.1\nforward 0.05\nfc.weight 0.01 100000\nlayer.weight 0.05 100000\nconv1.weight 0.1 100000\n' \
  >"$WORK/jitter.txt"
jitter_args=(--profile "$WORK/jitter.txt" --strategy fixed -b 1 -e 1 -n 25 -w 1)
$MPIRUN -np 2 "$BIN/sb-buckets" "${jitter_args[@]}" --out "$WORK/steady.h5" >"$WORK/steady.txt" 2>&1
$MPIRUN -np 2 "$BIN/sb-buckets" "${jitter_args[@]}" --jitter 0.2 --out "$WORK/jitter.h5" >"$WORK/jitter.txt.out" 2>&1
check "--jitter 0.2 exits 0 and says the slowest rank's mean factor" \
  bash -c "test $? -eq 0 && grep -qE '^# jitter 0.2: .* averages 1\.[0-9]{4} over the 25 steps' '$WORK/jitter.txt.out'"
factor=$(sed -n 's/^# jitter .* averages \([0-9.]*\) over.*/\1/p' "$WORK/jitter.txt.out")
check "the file records jitter_cv 0.2 and the printed factor ($factor)" \
  bash -c "test '$(h5_attr "$WORK/jitter.h5" /buckets/jitter_cv)' = 0.2 &&
           awk -v a='$(h5_attr "$WORK/jitter.h5" /buckets/slowest_rank_factor)' -v b='$factor' 'BEGIN { exit !(a - b < 1e-4 && b - a < 1e-4) }'"
row_ms() { awk '$1 == "fixed" { print $4 }' "$1"; }
check "each step waits for its slowest rank: jittered $(row_ms "$WORK/jitter.txt.out") ms against $(row_ms "$WORK/steady.txt") ms" \
  awk -v j="$(row_ms "$WORK/jitter.txt.out")" -v s="$(row_ms "$WORK/steady.txt")" 'BEGIN { exit !(j > s) }'
check "a steady run records no jitter" bash -c "! h5dump -a /buckets/jitter_cv '$WORK/steady.h5' >/dev/null 2>&1"
check_schema "$WORK/jitter.h5"
# --straggler 1.5: rank 1 replays its backward 1.5 times slower at every step; the step waits for it.
$MPIRUN -np 2 "$BIN/sb-buckets" --profile "$WORK/jitter.txt" --strategy fixed -b 1 -e 1 -n 5 -w 1 --straggler 1.5 \
  --out "$WORK/straggler.h5" \
  >"$WORK/straggler.out" 2>&1
check "--straggler 1.5 exits 0 ($?) and says rank 1 replays 1.5 times slower" \
  grep -q '^# straggler 1.5: rank 1 replays its backward 1.5 times slower; the slowest rank.s factor averages 1.5000' \
  "$WORK/straggler.out"
check "its step is the straggler's 150 ms backward and a little ($(row_ms "$WORK/straggler.out") ms)" \
  awk -v s="$(row_ms "$WORK/straggler.out")" 'BEGIN { exit !(s >= 150 && s < 165) }'
check "the file records straggler 1.5 and slowest_rank_factor 1.5, and no jitter_cv" \
  bash -c "test '$(h5_attr "$WORK/straggler.h5" /buckets/straggler)' = 1.5 &&
           test '$(h5_attr "$WORK/straggler.h5" /buckets/slowest_rank_factor)' = 1.5 &&
           ! h5dump -a /buckets/jitter_cv '$WORK/straggler.h5' >/dev/null 2>&1"
check_schema "$WORK/straggler.h5"

h5dump -H "$out" >"$WORK/header.txt" 2>&1
check "h5dump reads the file" test $? -eq 0
check_schema "$out"
check "the file says it is complete" bash -c "h5dump -a /status '$out' | grep -q '\"complete\"'"

bad_input() {
  local name=$1; shift
  $MPIRUN_FAILFAST -np 2 "$BIN/sb-buckets" "$@" --out "$WORK/bad.h5" >"$WORK/bad.out" 2>"$WORK/bad.err"
  local rc=$?
  if [[ $rc -eq 2 && $(grep -c '^sb-buckets: error: ' "$WORK/bad.err") -eq 1 && ! -e "$WORK/bad.h5" ]]; then
    pass "bad input: $name"
  else
    fail "bad input: $name" "rc=$rc: $(head -c 300 "$WORK/bad.err")"
  fi
}
printf 'backward 0.1\nfc.weight 0.2 100\n' >"$WORK/late.txt"
bad_input "unknown strategy" --strategy horovod
bad_input "no strategy" --strategy ''
bad_input "a cycle time of 0" --strategy cycle --cycle-ms 0
bad_input "a jitter past 0.25" --jitter 0.3
bad_input "a negative jitter" --jitter -0.01
bad_input "a straggler below 1" --straggler 0.5
bad_input "a straggler past 10" --straggler 20
bad_input "a NaN cycle time" --cycle-ms nan
bad_input "a cycle time past a second" --cycle-ms 5000
bad_input "a cycle time given twice" --cycle-ms 1,2,1
bad_input "missing profile" --profile "$WORK/nowhere.txt"
bad_input "a tensor ready after backward ends" --profile "$WORK/late.txt"
bad_input "bucket sizes upside down" -b 8 -e 1
bad_input "a sweep of a thousand bucket sizes" -b 0.25 -e 1e300
bad_input "a size factor too near 1" -f 1.001
bad_input "an allreduce on device buffers" --algo mpi-cuda
bad_input "unknown model" --model vgg16
bad_input "unknown progress mode" --progress spin
bad_input "polled progress with a schedule" --progress poll --algo ring
bad_input "the cycle strategy polled alone: nothing to sweep" --strategy cycle --progress poll
bad_input "a profile to write where no file can be" --write-profile "$WORK/nowhere/profile.txt"
# The results written as the profile ended in a fault (exit 3) after the whole sweep.
bad_input "--trace naming the results file" --trace "$WORK/bad.h5"
bad_input "--trace to a device" --trace /dev/null
bad_input "--write-profile naming the results file" --profile "$WORK/profile.txt" --write-profile "$WORK/bad.h5"
cp "$WORK/profile.txt" "$WORK/profile-before.txt"
bad_input "--write-profile naming the profile read" --profile "$WORK/profile.txt" --write-profile "$WORK/./profile.txt"
check "the profile is left as it was" cmp -s "$WORK/profile.txt" "$WORK/profile-before.txt"
bad_input "a NaN compute scale" --compute-scale nan
# A step longer than --timeout ran until the watchdog ended it (after --timeout), a fault (exit 3).
bad_input "a compute scale whose step outlasts --timeout" --profile "$WORK/profile.txt" --compute-scale 1000 -T 1 \
  --write-profile "$WORK/scaled.txt"
check "which names the step and the timeout" grep -q "each emulated step would compute for .* s (forward and backward, after --compute-scale), not under --timeout's 1 s" "$WORK/bad.err"
check "and writes no profile" test ! -e "$WORK/scaled.txt"
# With no --timeout, a step of 1e306 s overflowed the sleeps, which did not sleep: "complete" at 0.03 ms a step.
bad_input "a step past an hour" --profile "$WORK/profile.txt" --compute-scale 1e308 -T 0
check "which says so" grep -q "not under an hour, the longest replayed" "$WORK/bad.err"

# ---- faults --------------------------------------------------------------------------------------
# A long sweep (many sizes, 100 steps of a few ms each) that a fault ends once its first row (the
# baselines, printed together) is out.
# (exec: run in the background, its $! is the launcher's, which a signal must reach.)
long_sweep() {
  exec $MPIRUN -np 2 "$BIN/sb-buckets" --profile "$WORK/profile.txt" --compute-scale 0.05 --strategy ddp -b 0.01 -e 64 -f 1.5 \
    -n 100 "$@"
}
wait_for_first_row() { wait_until "$launcher" grep -qE "^  no-overlap " "$1"; }

# A stuck rank: rank 1 stopped; -T 3 ends the job, and rank 0 saves the rows it has.
long_sweep -T 3 --out "$WORK/stuck.h5" >"$WORK/stuck.txt" 2>"$WORK/stuck.err" &
launcher=$!
wait_for_first_row "$WORK/stuck.txt"
stop_rank_until_end "$launcher" "sb-buckets .*--out $WORK/stuck.h5" 1
check "a stuck rank ends the job (rc $job_rc) within -T plus margin ($job_seconds s)" \
  test -n "$stopped_pid" -a "$job_rc" -ne 0 -a "$job_seconds" -le 20
check "the timeout is reported in one clear line" grep -q 'timed out: no progress for 3 s' "$WORK/stuck.err"
check "the rows measured are saved, and say why the run ended" \
  bash -c "h5dump -a /status '$WORK/stuck.h5' | grep -q 'timed out' && h5ls '$WORK/stuck.h5/buckets' | grep -q '^no-overlap '"
check_schema "$WORK/stuck.h5"

# SIGTERM to the launcher (a scheduler's time limit): the same, interrupted.
long_sweep --out "$WORK/term.h5" >"$WORK/term.txt" 2>"$WORK/term.err" &
launcher=$!
wait_for_first_row "$WORK/term.txt"
kill -TERM "$launcher"
wait "$launcher"
check "SIGTERM ends the job with the rows measured saved" \
  bash -c "h5dump -a /status '$WORK/term.h5' | grep -q 'interrupted by SIGTERM' && h5ls '$WORK/term.h5/buckets' | grep -q '^no-overlap '"
check "the table says where the partial results are" grep -q "^# Partial results: $WORK/term.h5" "$WORK/term.txt"

# SIGKILL to rank 0 itself once the ddp sweep has a row: no handler runs; what is left is the
# snapshot rank 0 saved after the baselines.
long_sweep --out "$WORK/killed.h5" >"$WORK/killed.txt" 2>&1 &
kill_rank0_when $! "$WORK/killed.txt" '^  ddp ' "sb-buckets .*--out $WORK/killed.h5"
status=$(h5_status "$WORK/killed.h5")
check "SIGKILL to rank 0 (pid ${killed_pid:-not found}) in the ddp sweep leaves the baselines' snapshot ($status)" \
  test -n "$killed_pid" -a "${status%%:*}" = "snapshot after the baselines (1 of 2 sweeps)"
check "it holds both baselines and no ddp row" \
  bash -c "h5ls '$WORK/killed.h5/buckets' | grep -q '^no-overlap ' && h5ls '$WORK/killed.h5/buckets' | grep -q '^fused ' &&
           ! h5ls '$WORK/killed.h5/buckets' | grep -q '^ddp '"
check_schema "$WORK/killed.h5"
