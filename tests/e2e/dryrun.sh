# sb-dryrun end to end: calibrate under mpirun writes a description that the other subcommands
# read; allreduce writes sb-allreduce files (simulated = 1) whose ring time on a flat machine is
# the closed form; train writes sb-buckets files and a scaling table; validate re-predicts measured
# runs; sb-report draws predicted lines beside measured ones; bad input exits 2 with one line.
source "$(dirname "$0")/helpers.bash"
h5value() { h5dump -m '%.17g' -y -w 0 -d "$2" "$1" | sed -n '/DATA {/,/}/p' | grep -oE -- '-?[0-9.]+(e[-+]?[0-9]+)?' | sed -n "${3:-1}p"; }

# calibrate: two ranks, small sweeps.
$MPIRUN -np 2 "$BIN/sb-dryrun" calibrate --max-bytes 1M --repeats 2 --name e2e --out "$WORK/here.machine" >"$WORK/cal.out" 2>&1
check "calibrate exits 0" test $? -eq 0
check "calibrate writes a level, gamma and copy" grep -qE '^level node size 0 alpha [0-9.e+-]+us bandwidth' "$WORK/here.machine"
check "calibrate's gamma float and copy are there" bash -c "grep -q '^gamma float ' '$WORK/here.machine' && grep -q '^copy ' '$WORK/here.machine'"
check "calibrate records how it measured" grep -q '^source ping-pong inside a node' "$WORK/here.machine"
# Rank 1 under another NCCL_ALGO: said, and kept in the description's sources.
$MPIRUN -np 2 bash -c 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export NCCL_ALGO=Tree; else export NCCL_ALGO=Ring; fi
  exec "$0" calibrate --max-bytes 64K --repeats 2 --out "$1"' "$BIN/sb-dryrun" "$WORK/mixed.machine" >"$WORK/mixed.out" 2>&1
check "calibrate under settings that differ between ranks exits $? and warns" \
  grep -q "^sb-dryrun: warning: the ranks' settings differ: NCCL_ALGO: Ring on rank 0; Tree on rank 1" "$WORK/mixed.out"
check "the description's sources say so" \
  grep -q "^source the ranks' settings differ: NCCL_ALGO: Ring on rank 0; Tree on rank 1" "$WORK/mixed.machine"
check "the same settings on every rank: no such source" bash -c "! grep -q 'settings differ' '$WORK/here.machine'"
$MPIRUN_FAILFAST -np 1 "$BIN/sb-dryrun" calibrate --out "$WORK/one.machine" >"$WORK/cal1.out" 2>&1
check "calibrate on one rank exits 2" test $? -eq 2
check "it says why" grep -q 'calibrate needs 2 or more ranks' "$WORK/cal1.out"
check "and writes nothing" test ! -e "$WORK/one.machine"
# A stuck rank: rank 1 stopped mid-calibration; -T 3 ends the job, with no description written.
$MPIRUN -np 2 "$BIN/sb-dryrun" calibrate --repeats 50 -T 3 --out "$WORK/stuck.machine" >"$WORK/stuck.out" 2>&1 &
launcher=$!
for _ in $(seq 100); do [[ -n $(rank_pid "sb-dryrun calibrate .*$WORK/stuck.machine" 1) ]] && break; sleep 0.1; done
sleep 1  # into the measurements
stop_rank_until_end "$launcher" "sb-dryrun calibrate .*$WORK/stuck.machine" 1
check "calibrate with a stuck rank ends (rc $job_rc) within -T plus margin ($job_seconds s)" \
  test -n "$stopped_pid" -a "$job_rc" -ne 0 -a "$job_seconds" -le 20
check "saying so in one line" grep -q 'timed out: no progress for 3 s .* while measuring' "$WORK/stuck.out"
check "and writing no description, nor a temporary" test -z "$(ls "$WORK" | grep stuck.machine)"
$MPIRUN_FAILFAST -np 2 "$BIN/sb-dryrun" calibrate --out "$WORK/nowhere/x.machine" >"$WORK/cal2.out" 2>&1
check "calibrate to a folder that does not exist exits 2, with the system's reason" \
  bash -c "test $? -eq 2 && grep -q \"cannot create '$WORK/nowhere/x.machine': No such file or directory\" '$WORK/cal2.out'"

# allreduce on the calibrated machine, and the closed form on a flat one.
"$BIN/sb-dryrun" allreduce --machine "$WORK/here.machine" --ranks 2,4 --transport mpi,shm -b 64K -e 1M -f 4 \
  --out "$WORK/pred" >"$WORK/pred.out" 2>&1
check "allreduce exits 0" test $? -eq 0
check "one sb-allreduce file per rank count" test -s "$WORK/pred/allreduce-np2.h5" -a -s "$WORK/pred/allreduce-np4.h5"
check "marked simulated, as sb-allreduce" bash -c "h5dump -a /simulated '$WORK/pred/allreduce-np4.h5' | grep -q '(0): 1' &&
  h5dump -a /program '$WORK/pred/allreduce-np4.h5' | grep -q 'sb-allreduce'"
schedules=$(for a in ring rd rabenseifner tree dbtree hier torus2d; do echo "$a@mpi $a@shm"; done)
check_schema "$WORK/pred/allreduce-np4.h5" $schedules
cat >"$WORK/flat.machine" <<'M'
name flat
level net size 0 alpha 10us bandwidth 1GB/s
gamma float 2GB/s
copy 1GB/s
M
"$BIN/sb-dryrun" allreduce --machine "$WORK/flat.machine" --ranks 4 --impl ring,rd -b 4M -e 4M --segment 4M \
  --out "$WORK/flat" >/dev/null 2>&1
# ring: 2(p-1) alpha + 2(p-1)/p n/B + (p-1)/p n/gamma = 60 + 6291.456 + 1572.864 us;
# rd: lg p (alpha + n/B + n/gamma) = 2 (10 + 4194.304 + 2097.152) us.
ring=$(h5value "$WORK/flat/allreduce-np4.h5" /allreduce/ring@mpi/out_of_place/time_us)
rd=$(h5value "$WORK/flat/allreduce-np4.h5" /allreduce/rd@mpi/out_of_place/time_us)
check "ring's predicted time is the closed form ($ring us)" awk -v t="$ring" 'BEGIN { exit !(t > 7924.319 && t < 7924.321) }'
check "rd's predicted time is the closed form ($rd us)" awk -v t="$rd" 'BEGIN { exit !(t > 12602.911 && t < 12602.913) }'

# train on a shipped machine with a small hand-written profile.
cat >"$WORK/p.profile" <<'P'
backward 0.2
forward 0.1
fc.weight 0.01 4000000
layer.weight 0.1 4000000
conv1.weight 0.2 4000000
P
"$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --ranks 1,8,16 \
  --algo ring,hier --transport nccl --min-mb 1 --max-mb 16 --out "$WORK/train" >"$WORK/train.out" 2>&1
check "train exits 0" test $? -eq 0
check "one rank is 100% efficient" grep -qE '^ +1 .* 1\.00 +100\.0%' "$WORK/train.out"
check "one sb-buckets file per scale and allreduce" test -s "$WORK/train/buckets-np16-hier-nccl.h5"
check_schema "$WORK/train/buckets-np16-hier-nccl.h5"
eff() { awk -v n="$2" '/^# /{ on = index($0, "'"$1"'") > 0 } on && $1 == n { sub("%", "", $NF); print $NF }' "$WORK/train.out" | head -1; }
check "hier beats ring across nodes sharing one NIC ($(eff hier@nccl 16)% vs $(eff ring@nccl 16)%)" \
  awk -v h="$(eff hier@nccl 16)" -v r="$(eff ring@nccl 16)" 'BEGIN { exit !(h > r) }'

# The cycle strategy priced: its buckets wait for their ticks, so 100 ms cycles (the whole 0.2 s
# backward's gradients in two ticks) leave more exposed than 1 ms ones at one size.
"$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --ranks 8 \
  --algo ring --transport nccl --strategy cycle --cycle-ms 1,100 --min-mb 64 --max-mb 64 --out "$WORK/cycles" \
  >"$WORK/cycles.out" 2>&1
check "train --strategy cycle --cycle-ms 1,100 exits 0" test $? -eq 0
cycles_file=$WORK/cycles/buckets-np8-ring-nccl.h5
check "a group per cycle time, each with it" test "$(h5_attr "$cycles_file" /buckets/cycle-100ms/cycle_ms)" = 100
exposed() { h5value "$cycles_file" "/buckets/cycle-$1ms/exposed_s"; }
check "the 1 ms cycles' negotiations are priced, and part of the communication ($(h5value "$cycles_file" /buckets/cycle-1ms/negotiation_s) of $(h5value "$cycles_file" /buckets/cycle-1ms/communication_s) s)" \
  awk -v n="$(h5value "$cycles_file" /buckets/cycle-1ms/negotiation_s)" -v c="$(h5value "$cycles_file" /buckets/cycle-1ms/communication_s)" \
  'BEGIN { exit !(n > 0 && n < c) }'
check "a negotiation a cycle: more for 1 ms cycles than 100 ms ones ($(h5value "$cycles_file" /buckets/cycle-1ms/negotiations) vs $(h5value "$cycles_file" /buckets/cycle-100ms/negotiations))" \
  test "$(h5value "$cycles_file" /buckets/cycle-1ms/negotiations)" -gt "$(h5value "$cycles_file" /buckets/cycle-100ms/negotiations)"
check "100 ms cycles expose more than 1 ms ones ($(exposed 100) vs $(exposed 1) s)" \
  awk -v a="$(exposed 100)" -v b="$(exposed 1)" 'BEGIN { exit !(a > b) }'
check_schema "$cycles_file" cycle-1ms cycle-100ms  # SCHEMA.md names them cycle-<ms>ms
"$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --cycle-ms 0 \
  --out "$WORK/x" >"$WORK/bad.out" 2>&1
check "train --cycle-ms 0 exits 2" bash -c "test $? -eq 2 && grep -q \"cycle-ms: '0' is not a cycle time of 0.01 to 1000 ms\" '$WORK/bad.out'"

# --jitter: each step waits for its slowest rank, about 1 + 2.6 cv slower than the profile at 128
# ranks; one rank waits for nobody. Without it the step is the profile's.
"$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --ranks 1,128 \
  --algo ring --transport nccl --strategy fixed --min-mb 4 --max-mb 4 --jitter 0.02 --out "$WORK/jitter" \
  >"$WORK/jitter.out" 2>&1
check "train --jitter 0.02 exits 0" test $? -eq 0
"$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --ranks 1,128 \
  --algo ring --transport nccl --strategy fixed --min-mb 4 --max-mb 4 --out "$WORK/steady" >"$WORK/steady.out" 2>&1
slowest=$(awk '$1 == 128 { print $NF }' "$WORK/jitter.out")
check "128 ranks wait for a slowest rank about 1 + 2.6 x 0.02 slower ($slowest)" \
  awk -v f="$slowest" 'BEGIN { exit !(f > 1.047 && f < 1.057) }'
check "one rank's mean factor is 1 ($(awk '$1 == 1 { print $NF }' "$WORK/jitter.out"))" \
  awk -v f="$(awk '$1 == 1 { print $NF }' "$WORK/jitter.out")" 'BEGIN { exit !(f > 0.999 && f < 1.001) }'
step_ms() { awk -v n="$2" '$1 == n { print $5 }' "$1"; }
# The step is forward + backward + what is exposed; jitter stretches the compute alone here.
check "the 128-rank step grows by its compute times the factor ($(step_ms "$WORK/steady.out" 128) -> $(step_ms "$WORK/jitter.out" 128) ms)" \
  awk -v a="$(step_ms "$WORK/steady.out" 128)" -v b="$(step_ms "$WORK/jitter.out" 128)" -v f="$slowest" \
      -v e="$(awk '$1 == 128 { print $6 }' "$WORK/jitter.out")" 'BEGIN { exit !(b > a && (b - e) / (a - e) > f - 0.002 && (b - e) / (a - e) < f + 0.002) }'
jitter_file=$WORK/jitter/buckets-np128-ring-nccl.h5
check "the file records jitter_cv and slowest_rank_factor" \
  bash -c "test '$(h5_attr "$jitter_file" /buckets/jitter_cv)' = 0.02 &&
           awk -v f='$(h5_attr "$jitter_file" /buckets/slowest_rank_factor)' 'BEGIN { exit !(f > 1.047 && f < 1.057) }'"
check "a steady run's file has neither" bash -c "! h5dump -a /buckets/jitter_cv '$WORK/steady/buckets-np128-ring-nccl.h5' >/dev/null 2>&1"
check_schema "$jitter_file"
"$BIN/sb-report" --no-render --out "$WORK/jitter-report" "$WORK/steady" "$WORK/jitter" >/dev/null 2>&1
check "sb-report draws the prediction with jitter as its own line beside the one without" \
  bash -c "grep -q '^### resnet50 ring@nccl jitter 0.02 (predicted)' '$WORK/jitter-report/summary.txt' &&
           grep -q '^### resnet50 ring@nccl (predicted)' '$WORK/jitter-report/summary.txt'"
for bad in -0.1 0.3 nan; do
  "$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --jitter "$bad" \
    --out "$WORK/x" >"$WORK/bad.out" 2>&1
  check "train --jitter $bad exits 2 ($?), saying so" \
    bash -c "test $? -eq 2 && grep -qE '^sb-dryrun: error: --jitter(: .nan. is not a finite number| must be from 0 to 0.25)' '$WORK/bad.out' && test ! -e '$WORK/x'"
done

# --straggler: one rank 1.5x slower at every step. At 2 ranks each step waits for it (its factor
# 1.5 exactly without jitter); one rank is the healthy baseline; at 128 ranks with jitter 0.02 it
# still sets the pace (the others' noise reaches about 1.05).
"$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --ranks 1,2,128 \
  --algo ring --transport nccl --strategy fixed --min-mb 4 --max-mb 4 --straggler 1.5 --out "$WORK/straggler" \
  >"$WORK/straggler.out" 2>&1
check "train --straggler 1.5 exits 0 ($?), its factor 1 at one rank and 1.5 at two" \
  bash -c "awk '\$1 == 1 && \$NF == \"1.0000\" { one = 1 } \$1 == 2 && \$NF == \"1.5000\" { two = 1 } END { exit !(one && two) }' '$WORK/straggler.out'"
check "the 2-rank step grows by its compute times 1.5 ($(step_ms "$WORK/straggler.out" 2) ms)" \
  awk -v b="$(step_ms "$WORK/straggler.out" 2)" -v e="$(awk '$1 == 2 { print $6 }' "$WORK/straggler.out")" \
      -v a="$(step_ms "$WORK/straggler.out" 1)" 'BEGIN { exit !((b - e) / a > 1.499 && (b - e) / a < 1.501) }'
check "the file records straggler and slowest_rank_factor, and no jitter_cv" \
  bash -c "test '$(h5_attr "$WORK/straggler/buckets-np2-ring-nccl.h5" /buckets/straggler)' = 1.5 &&
           test '$(h5_attr "$WORK/straggler/buckets-np2-ring-nccl.h5" /buckets/slowest_rank_factor)' = 1.5 &&
           ! h5dump -a /buckets/jitter_cv '$WORK/straggler/buckets-np2-ring-nccl.h5' >/dev/null 2>&1"
check_schema "$WORK/straggler/buckets-np2-ring-nccl.h5"
"$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --ranks 1,128 \
  --algo ring --transport nccl --strategy fixed --min-mb 4 --max-mb 4 --straggler 1.5 --jitter 0.02 \
  --out "$WORK/both" >"$WORK/both.out" 2>&1
check "with jitter 0.02 the 128 ranks still wait for the straggler ($(awk '$1 == 128 { print $NF }' "$WORK/both.out"))" \
  awk -v f="$(awk '$1 == 128 { print $NF }' "$WORK/both.out")" 'BEGIN { exit !(f > 1.49 && f < 1.51) }'
"$BIN/sb-report" --no-render --out "$WORK/straggler-report" "$WORK/straggler" "$WORK/both" >/dev/null 2>&1
check "sb-report draws each as its own line" \
  bash -c "grep -q '^### resnet50 ring@nccl straggler 1.5 (predicted)' '$WORK/straggler-report/summary.txt' &&
           grep -q '^### resnet50 ring@nccl jitter 0.02 straggler 1.5 (predicted)' '$WORK/straggler-report/summary.txt'"
# --balance: the straggler's share cut to its speed, every rank 2 / (1 + 1/1.5) = 1.2 times an equal share's time.
"$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --ranks 1,2 \
  --algo ring --transport nccl --strategy fixed --min-mb 4 --max-mb 4 --straggler 1.5 --balance --out "$WORK/balanced" \
  >"$WORK/balanced.out" 2>&1
check "train --straggler 1.5 --balance exits 0 ($?): 2 ranks wait for a factor 1.2, not 1.5" \
  awk '$1 == 2 && $NF == "1.2000" { found = 1 } END { exit !found }' "$WORK/balanced.out"
check "the file says balanced" test "$(h5_attr "$WORK/balanced/buckets-np2-ring-nccl.h5" /buckets/balanced)" = 1
check_schema "$WORK/balanced/buckets-np2-ring-nccl.h5"
"$BIN/sb-report" --no-render --out "$WORK/balanced-report" "$WORK/balanced" >/dev/null 2>&1
check "sb-report names the line balanced" \
  grep -q '^### resnet50 ring@nccl straggler 1.5 balanced (predicted)' "$WORK/balanced-report/summary.txt"
"$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --balance \
  --out "$WORK/x" >"$WORK/bad.out" 2>&1
check "train --balance without --straggler exits 2 ($?), saying so" \
  bash -c "test $? -eq 2 && grep -q '^sb-dryrun: error: --balance shares the batch around a straggler: give --straggler' '$WORK/bad.out'"
for bad in 0.9 11 nan; do
  "$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --straggler "$bad" \
    --out "$WORK/x" >"$WORK/bad.out" 2>&1
  check "train --straggler $bad exits 2 ($?), saying so" \
    bash -c "test $? -eq 2 && grep -qE '^sb-dryrun: error: --straggler(: .nan. is not a finite number| must be from 1 to 10)' '$WORK/bad.out' && test ! -e '$WORK/x'"
done

# validate: measured runs re-predicted, each with a row.
mkdir -p "$WORK/meas"
$MPIRUN -np 2 "$BIN/sb-allreduce" --impl mpi,ring --transport mpi,shm -b 64K -e 1M -f 4 -n 3 -w 1 \
  --out "$WORK/meas/ar.h5" >/dev/null 2>&1
"$BIN/sb-dryrun" validate --machine "$WORK/here.machine" "$WORK/meas" "$WORK/pred" --out "$WORK/v.h5" >"$WORK/v.out" 2>&1
check "validate exits 0" test $? -eq 0
check "validate has a row per implementation measured" test "$(grep -cE '^ar +(mpi|ring@mpi|ring@shm) ' "$WORK/v.out")" -eq 3
check "validate skips the simulated runs" bash -c "! grep -q '^allreduce-np' '$WORK/v.out'"
check "validate's summary line" grep -qE '^# all 9 rows: median \|error\|' "$WORK/v.out"
check_schema "$WORK/v.h5"
# --reference: the same rows measured again, in another run.
mkdir -p "$WORK/again"
$MPIRUN -np 2 "$BIN/sb-allreduce" --impl mpi,ring --transport mpi,shm -b 64K -e 1M -f 4 -n 3 -w 1 \
  --out "$WORK/again/ar.h5" >/dev/null 2>&1
"$BIN/sb-dryrun" validate --machine "$WORK/here.machine" "$WORK/meas" --reference "$WORK/again" --out "$WORK/ref.h5" \
  >"$WORK/ref.out" 2>&1
check "validate --reference compares each of the 9 rows with its second measurement (exit status $?)" \
  grep -qE '^# all 9 rows: median \|error\| [0-9.]+%' "$WORK/ref.out"
check "validate --reference records its reference inputs" \
  bash -c "h5dump -a /validate/reference '$WORK/ref.h5' | grep -q '\"$WORK/again\"' &&
           ! h5dump -a /validate/reference '$WORK/v.h5' >/dev/null 2>&1"
check_schema "$WORK/ref.h5"
mkdir -p "$WORK/noise" && cp "$WORK/ref.h5" "$WORK/v.h5" "$WORK/noise/"
"$BIN/sb-report" --no-render --out "$WORK/noise/report" "$WORK/noise" >/dev/null 2>&1
check "sb-report titles the noise floor as measured again, the prediction as predicted" \
  bash -c "grep -q 'Measured again vs measured (ref): median |difference|' '$WORK/noise/report/validate-ref.gp' &&
           grep -q 'measured again (us)' '$WORK/noise/report/validate-ref.gp' &&
           grep -q 'Predicted vs measured on ' '$WORK/noise/report/validate-v.gp'"
# The inputs' own runs as the reference had matched every row with itself: a 0.0% noise floor.
"$BIN/sb-dryrun" validate --machine "$WORK/here.machine" "$WORK/meas" --reference "$WORK/meas" --out "$WORK/ref2.h5" \
  >"$WORK/ref2.out" 2>&1
check "validate --reference naming the inputs' own runs exits 2 ($?), saying so" \
  bash -c "test $? -eq 2 && grep -q '^sb-dryrun: error: --reference: run ar is among the inputs too' '$WORK/ref2.out' &&
           test ! -e '$WORK/ref2.h5'"

# A replayed straggler is predicted with it: a 50 ms backward at 2 ranks, the last rank's 1.5x
# (leaving the straggler out would put every row a third short).
mkdir -p "$WORK/slow"
printf 'backward 0.05\nforward 0.01\na.weight 0.02 50000\nb.weight 0.05 50000\n' >"$WORK/slow.profile"
$MPIRUN -np 2 "$BIN/sb-buckets" --profile "$WORK/slow.profile" --strategy fixed -b 1 -e 1 -n 5 -w 1 --straggler 1.5 \
  --out "$WORK/slow/s.h5" >/dev/null 2>&1
"$BIN/sb-dryrun" validate --machine "$WORK/here.machine" "$WORK/slow" --out "$WORK/slow-v.h5" >"$WORK/slow-v.out" 2>&1
error=$(sed -n 's/^# all [0-9]* rows: median |error| \([0-9.]*\)%.*/\1/p' "$WORK/slow-v.out")
check "validate predicts sb-buckets --straggler 1.5 with it (median |error| ${error:-none}%, under 10%)" \
  awk -v e="${error:-100}" 'BEGIN { exit !(e < 10) }'

# sb-report draws predicted lines beside measured ones.
"$BIN/sb-report" --no-render --out "$WORK/report" "$WORK/meas" "$WORK/pred" >/dev/null 2>&1
check "sb-report reads the simulated runs" grep -q 'ring@mpi (predicted)' "$WORK/report/allreduce-busbw-np2.gp"

# Bad input.
printf 'name bad\nlevel l size 2 alpha -3us bandwidth 1GB/s\ngamma float 1GB/s\ncopy 1GB/s\n' >"$WORK/bad.machine"
"$BIN/sb-dryrun" allreduce --machine "$WORK/bad.machine" --out "$WORK/x" >"$WORK/bad.out" 2>&1
check "a negative figure exits 2" test $? -eq 2
check "naming the file and line" grep -q "machine '$WORK/bad.machine' line 2: alpha '-3us' is not a time" "$WORK/bad.out"
"$BIN/sb-dryrun" allreduce --machine "$WORK/nothing.machine" >"$WORK/bad.out" 2>&1
check "a missing machine file exits 2" test $? -eq 2
"$BIN/sb-dryrun" allreduce --machine "$WORK/flat.machine" --ranks 0 >"$WORK/bad.out" 2>&1
check "--ranks 0 exits 2" test $? -eq 2
"$BIN/sb-dryrun" allreduce --machine "$WORK/flat.machine" --impl warp >"$WORK/bad.out" 2>&1
check "an unknown --impl exits 2" test $? -eq 2
# 2^63 bytes ran until killed (every pipelined segment is priced); sb-allreduce measures 2^31-1 elements.
timeout 60 "$BIN/sb-dryrun" allreduce --machine "$WORK/flat.machine" -e 9223372036854775807 >"$WORK/bad.out" 2>&1
check "a --maxbytes past 2^31-1 elements exits 2" \
  bash -c "test $? -eq 2 && grep -q 'is more than 2^31-1 elements, more than sb-allreduce measures' '$WORK/bad.out'"
# Scales whose schedules do not fit in memory at once: ring at 4096 ranks had taken 5 GB, NCCL's
# rings there more than this machine has. Refused within seconds, before any file or folder.
for args in "allreduce --ranks 4096 --impl ring" "allreduce --ranks 1048576 --impl mpi" \
            "train --profile $WORK/p.profile --ranks 8,4096 --algo nccl"; do
  timeout 60 "$BIN/sb-dryrun" $args --machine sim/machines/dgx-h100-ib.machine --out "$WORK/huge" \
    >"$WORK/bad.out" 2>&1
  check "sb-dryrun $args: too many steps to price, exit 2" \
    bash -c "test $? -eq 2 && grep -q 'million steps, more than the 32 million the simulator prices at once' \
             '$WORK/bad.out' && test ! -e '$WORK/huge'"
done
# A bucket size factor near 1 swept without end (a minute was not enough), each size priced anew.
timeout 60 "$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --ranks 8 \
  --mb-factor 1.0000001 --out "$WORK/x" >"$WORK/bad.out" 2>&1
check "a sweep of more than 100 bucket sizes exits 2" \
  bash -c "test $? -eq 2 && grep -q '^sb-dryrun: error: --min-mb, --max-mb and --mb-factor make a sweep of more than 100' '$WORK/bad.out'"
# Calibrate's one-message ping-pong past 2^31-1 bytes failed in MPI_Send (exit 3) or threw bad_alloc.
$MPIRUN_FAILFAST -np 2 "$BIN/sb-dryrun" calibrate --max-bytes 8G --out "$WORK/big.machine" >"$WORK/bad.out" 2>&1
check "calibrate --max-bytes past 1G exits 2" \
  bash -c "test $? -eq 2 && grep -q '^sb-dryrun: error: --max-bytes must be from 4K to 1G' '$WORK/bad.out'"
# A mistyped flag is named, not reported as the required one it failed to be.
"$BIN/sb-dryrun" allreduce --machin "$WORK/flat.machine" >"$WORK/bad.out" 2>&1
check "a mistyped flag exits 2 with one line naming it" \
  bash -c "test $? -eq 2 && test \$(wc -l <'$WORK/bad.out') -eq 1 && grep -q \"unknown argument '--machin'\" '$WORK/bad.out'"
"$BIN/sb-dryrun" simulate >"$WORK/bad.out" 2>&1
check "an unknown subcommand exits 2 naming it" bash -c "test $? -eq 2 && grep -q \"unknown argument 'simulate'\" '$WORK/bad.out'"
"$BIN/sb-dryrun" validate --machine "$WORK/flat.machine" "$WORK/pred" >"$WORK/bad.out" 2>&1
check "validate without measured runs exits 2" test $? -eq 2
# --out naming a measured run's file replaced that run with the comparison (exit 0).
cp "$WORK/meas/ar.h5" "$WORK/ar-before.h5"
"$BIN/sb-dryrun" validate --machine "$WORK/here.machine" "$WORK/meas" --out "$WORK/meas/ar.h5" >"$WORK/bad.out" 2>&1
check "validate --out naming a run it reads exits 2 ($?), saying so" \
  bash -c "test $? -eq 2 && grep -q \"^sb-dryrun: error: --out '$WORK/meas/ar.h5' is one of the runs read\" '$WORK/bad.out'"
check "and the run's file is left as it was" cmp -s "$WORK/meas/ar.h5" "$WORK/ar-before.h5"
"$BIN/sb-dryrun" train --machine "$WORK/flat.machine" --profile "$WORK/none.profile" >"$WORK/bad.out" 2>&1
check "a missing profile exits 2" test $? -eq 2
# A mistyped --model had priced the step at the profile's own times (those of where it was measured).
"$BIN/sb-dryrun" train --machine sim/machines/ethernet-100g.machine --profile "$WORK/p.profile" --model resnet5O \
  --out "$WORK/typo" >"$WORK/bad.out" 2>&1
check "a --model without a compute line in the machine file exits 2, naming the lines it has" \
  bash -c "test $? -eq 2 && grep -q 'resnet5O: .* has no compute line for it (it has: resnet50)' '$WORK/bad.out' &&
           test ! -e '$WORK/typo'"
