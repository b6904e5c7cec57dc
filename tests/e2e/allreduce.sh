# sb-allreduce end to end: a run's table and HDF5 file, the schema, bad input, and faults.
source "$(dirname "$0")/helpers.bash"

# ---- a normal run ----------------------------------------------------------------------------
out=$WORK/run.h5
$MPIRUN -np 2 "$BIN/sb-allreduce" -b 8 -e 1M -f 4 -n 3 -w 1 --out "$out" \
  --label interconnect=loopback >"$WORK/run.txt" 2>"$WORK/run.err"
check "run exits 0" test $? -eq 0
check "run reports no wrong values" grep -q '^# Out of bounds values : 0 OK' "$WORK/run.txt"
check "run prints the average bus bandwidth" grep -q '^# Avg bus bandwidth    : [0-9.e+-]' "$WORK/run.txt"
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum +-1 ' "$WORK/run.txt")
check "run prints one row per size (9)" test "$rows" -eq 9
check "every row has #wrong 0 out of place and in place" \
  test "$(awk '/^ +[0-9]+ +[0-9]+ +float/ && ($9 != 0 || $13 != 0)' "$WORK/run.txt" | wc -l)" -eq 0
check "run leaves exactly its results file" test "$(ls "$WORK" | grep -c '\.h5')" -eq 1

check "h5dump reads the file" h5dump -H "$out" >"$WORK/header.txt"
dump_attr() { h5dump -a "$1" "$out" 2>/dev/null | grep -A1 'DATA {' | tail -1 | sed 's/.*: //; s/"//g; s/^ *//'; }
# The version the code writes and SCHEMA.md states, read from both rather than repeated here.
version=$(sed -n 's/.*kSchemaVersion = \([0-9]*\);.*/\1/p' results/results_file.hpp)
check "schema_version is $version, as results/SCHEMA.md says" \
  bash -c "test -n '$version' && test '$(dump_attr /schema_version)' = '$version' &&
           grep -q '^- \*\*schema_version: $version\*\*' results/SCHEMA.md"
check "program is sb-allreduce" test "$(dump_attr /program)" = "sb-allreduce"
check "ranks is 2" test "$(dump_attr /ranks)" = "2"
check "status is complete" test "$(dump_attr /status)" = "complete"
check "the label is recorded" test "$(dump_attr /labels/interconnect)" = "loopback"
sizes=$(h5dump -d /allreduce/mpi/size_bytes "$out" | tr -d ' \n' | grep -o 'DATA{(0):[^}]*' | sed 's/DATA{(0)://')
check "size_bytes holds the sweep" test "$sizes" = "8,32,128,512,2048,8192,32768,131072,524288"
check "iteration_us is sizes x ranks x iters" \
  grep -q 'DATASPACE  SIMPLE { ( 9, 2, 3 ) / ( 9, 2, 3 ) }' <(h5dump -H -d /allreduce/mpi/out_of_place/iteration_us "$out")
wrong=$(h5dump -d /allreduce/mpi/in_place/wrong "$out" | tr -d ' \n' | grep -o 'DATA{(0):[^}]*' | sed 's/DATA{(0)://')
check "wrong is 0 at every size in place" test "$wrong" = "0,0,0,0,0,0,0,0,0"

# Every attribute, group and dataset in the file is documented in SCHEMA.md, and the ones
# SCHEMA.md marks as always present are in the file.
schema=results/SCHEMA.md
names=$(grep -oE '(ATTRIBUTE|DATASET|GROUP) "[^"]+"' "$WORK/header.txt" | sed 's/.*"\(.*\)"/\1/' | sort -u)
check_schema "$out" interconnect
missing=""
for name in $(sed -n 's/^| `\([a-z_0-9A-Z]*\)` .*| always |.*/\1/p' "$schema"); do
  grep -q "\"$name\"" "$WORK/header.txt" || missing="$missing $name"
done
check "every always-present name of SCHEMA.md is in the file${missing:+ (missing:$missing)}" test -z "$missing"

# ---- settings that differ between ranks: warned about and recorded ------------------------------
check "a run whose ranks' settings agree warns of none and records none" \
  bash -c "! grep -q warning '$WORK/run.err' && ! grep -q environment_differences '$WORK/header.txt'"
# Rank 1 runs with another NCCL_ALGO and alone with OMP_NUM_THREADS (Open MPI names each rank).
$MPIRUN -np 3 bash -c 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export NCCL_ALGO=Tree OMP_NUM_THREADS=1;
                       else export NCCL_ALGO=Ring; fi; exec "$0" "$@"' \
  "$BIN/sb-allreduce" --impl ring -b 8 -e 64 -n 2 -w 1 --out "$WORK/env.h5" >"$WORK/env.txt" 2>"$WORK/env.err"
check "a run whose ranks' settings differ still runs" test $? -eq 0
check "rank 0 warns once per differing variable" test "$(grep -c 'sb-allreduce: warning: ' "$WORK/env.err")" -eq 2
check "the warning names each value's ranks" \
  grep -qx "sb-allreduce: warning: the ranks' settings differ: NCCL_ALGO: Ring on ranks 0,2; Tree on rank 1" "$WORK/env.err"
check "environment_differences holds both lines" \
  bash -c "h5dump -a /environment_differences '$WORK/env.h5' | grep -q 'OMP_NUM_THREADS: unset on ranks 0,2; 1 on rank 1' &&
           h5dump -a /environment_differences '$WORK/env.h5' | grep -q 'NCCL_ALGO: Ring on ranks 0,2; Tree on rank 1'"
check "environment records rank 0's OMP and NCCL settings" \
  bash -c "h5dump -a /environment/NCCL_ALGO '$WORK/env.h5' | grep -q '\"Ring\"' &&
           ! h5dump -a /environment/OMP_NUM_THREADS '$WORK/env.h5' >/dev/null 2>&1"
check_schema "$WORK/env.h5" ring@mpi
mkdir -p "$WORK/env" && mv "$WORK/env.h5" "$WORK/env/"
"$BIN/sb-report" --out "$WORK/env/report" "$WORK/env" >/dev/null 2>&1
check "sb-report's summary says the run's settings differ" \
  grep -q "^# run env: .*; the ranks' settings differ: NCCL_ALGO: Ring on ranks 0,2; Tree on rank 1 | OMP_NUM_THREADS" \
  "$WORK/env/report/summary.txt"
rm -rf "$WORK/env"

# ---- other types and operations, other rank counts ---------------------------------------------
for case in "3 half avg" "4 bfloat16 prod" "5 int8 min" "1 double max" "3 int32 sum"; do
  set -- $case
  $MPIRUN -np "$1" "$BIN/sb-allreduce" -b 64 -e 64K -f 8 -n 2 -w 1 -d "$2" -o "$3" \
    --out "$WORK/case.h5" >"$WORK/case.txt" 2>&1
  check "np=$1 $2 $3 exits 0 with no wrong values" grep -q '^# Out of bounds values : 0 OK' "$WORK/case.txt"
  rm -f "$WORK/case.h5"
done

# Every implementation that can run here, at a power of two and at awkward rank counts.
for np in 3 4 6; do
  $MPIRUN -np "$np" "$BIN/sb-allreduce" --impl all -b 4 -e 1M -f 16 -n 2 -w 1 -d int32 --node-size 2 \
    --out "$WORK/all.h5" >"$WORK/all.txt" 2>&1
  impls=$(grep -c '^# impl [a-z0-9@]*:' "$WORK/all.txt")
  ok=$(grep -c '^# Out of bounds values : 0 OK' "$WORK/all.txt")
  check "np=$np --impl all: $ok of $impls implementations with no wrong values" test "$impls" -ge 4 -a "$ok" -eq "$impls"
  check "np=$np --impl all prints the summary with a best/mpi ratio per size" \
    test "$(grep -cE '^ +[0-9]+( +[0-9.]+)+ +[0-9.]+x$' "$WORK/all.txt")" -eq 5
  rm -f "$WORK/all.h5"
done
$MPIRUN -np 4 "$BIN/sb-allreduce" --impl all --transport shm -b 4 -e 1M -f 16 -n 2 -w 1 -d bfloat16 -o max \
  --out "$WORK/shm.h5" >"$WORK/shm.txt" 2>&1
impls=$(grep -c '^# impl [a-z0-9@]*:' "$WORK/shm.txt")
ok=$(grep -c '^# Out of bounds values : 0 OK' "$WORK/shm.txt")
check "np=4 --transport shm: $ok of $impls implementations with no wrong values" test "$impls" -ge 4 -a "$ok" -eq "$impls"
check "the file records the transport" bash -c "h5dump -a /allreduce/ring@shm/transport '$WORK/shm.h5' | grep -q shm"
$MPIRUN -np 3 "$BIN/sb-allreduce" --impl mpi,ring,rd --transport mpi,shm -b 4K -e 64K -f 4 -n 2 -w 1 \
  --out "$WORK/two.h5" >"$WORK/two.txt" 2>&1
check "--transport mpi,shm runs each schedule on each transport: 5 tables" \
  test "$(grep -c '^# impl [a-z0-9@]*:' "$WORK/two.txt")" -eq 5 -a "$(grep -c '^# Out of bounds values : 0 OK' "$WORK/two.txt")" -eq 5
check "one results group per (schedule, transport)" bash -c \
  "h5dump -n '$WORK/two.h5' | grep -q 'group *\/allreduce\/ring@mpi\$' && h5dump -n '$WORK/two.h5' | grep -q 'group *\/allreduce\/rd@shm\$' && h5dump -a /allreduce/mpi/transport '$WORK/two.h5' | grep -q library"
"$BIN/sb-allreduce" --impl ring,rd --print-schedule -b 40 >"$WORK/schedule.txt" 2>&1
bad_torus=$($MPIRUN_FAILFAST -np 3 "$BIN/sb-allreduce" --impl torus2d --torus 2x2 -b 8 -e 8 --out "$WORK/t.h5" 2>&1 >/dev/null | grep -c 'does not multiply')
check "--torus that does not fit the ranks is bad input" test "$bad_torus" -eq 1 -a ! -e "$WORK/t.h5"
check "--print-schedule lists the rounds" grep -q 'rank 0 of 1, 10 elements' "$WORK/schedule.txt"
$MPIRUN -np 3 "$BIN/sb-allreduce" --impl ring --print-schedule -b 24 >"$WORK/schedule3.txt" 2>&1
check "--print-schedule at 3 ranks shows 4 rounds per rank" \
  test "$(grep -c 'round 3: ' "$WORK/schedule3.txt")" -eq 6

# Without a launcher (an MPI singleton), and with --impl all where nccl cannot run.
"$BIN/sb-allreduce" -b 8 -e 64 -f 2 -n 2 --impl all --out "$WORK/single.h5" >"$WORK/single.txt" 2>&1
check "singleton run with --impl all exits 0" test $? -eq 0
if grep -q 'impl nccl skipped' "$WORK/single.txt"; then
  "$BIN/sb-allreduce" --impl nccl -b 8 -e 8 --out "$WORK/nccl.h5" 2>"$WORK/nccl.err"
  check "nccl without a GPU: status 2, one line, no file" \
    test $? -eq 2 -a "$(wc -l <"$WORK/nccl.err")" -eq 1 -a ! -e "$WORK/nccl.h5"
fi
# MPI_Allreduce on device buffers needs a GPU and a CUDA-aware MPI (given device pointers, one
# that is not would crash); it never takes the 16-bit types, whose MPI reductions run on the host.
if grep -q 'impl mpi-cuda skipped' "$WORK/single.txt"; then
  "$BIN/sb-allreduce" --impl mpi-cuda -b 8 -e 8 --out "$WORK/mpicuda.h5" 2>"$WORK/mpicuda.err"
  check "mpi-cuda where it cannot run: status 2, one line saying why, no file" \
    test $? -eq 2 -a "$(wc -l <"$WORK/mpicuda.err")" -eq 1 -a ! -e "$WORK/mpicuda.h5"
  check "mpi-cuda's refusal says what is missing" grep -Eq 'GPU|CUDA' "$WORK/mpicuda.err"
fi
SB_MPI_CUDA_AWARE=1 "$BIN/sb-allreduce" --impl mpi-cuda -d bfloat16 -b 8 -e 8 --out "$WORK/mpicuda.h5" \
  2>"$WORK/mpicuda.err"
check "mpi-cuda refuses bfloat16 (or the machine): status 2, no file" test $? -eq 2 -a ! -e "$WORK/mpicuda.h5"

# ---- bad input: one line, status 2, no file ----------------------------------------------------
bad_input() {
  local name=$1; shift
  local file=$WORK/bad.h5
  $MPIRUN_FAILFAST -np 2 "$BIN/sb-allreduce" "$@" >"$WORK/bad.out" 2>"$WORK/bad.err"
  local rc=$?
  local ours
  ours=$(grep -c '^sb-allreduce: error: ' "$WORK/bad.err")
  if [[ $rc -eq 2 && $ours -eq 1 && ! -e $file && -z $(ls "$WORK" | grep 'bad.h5') ]]; then
    pass "bad input: $name"
  else
    fail "bad input: $name" "rc=$rc, $ours error lines: $(head -c 300 "$WORK/bad.err")"
  fi
}
bad_input "unknown flag" --bogus --out "$WORK/bad.h5"
# A wrapper's default and the user's own: CLI11 had said "At Most 1 required but received 2".
bad_input "an option given twice" -n 5 --iters 7 --out "$WORK/bad.h5"
check "which is named, with the remedy" grep -q '^sb-allreduce: error: --iters takes one value and was given 2: give it once$' \
  "$WORK/bad.err"
bad_input "min > max" -b 64M -e 8 --out "$WORK/bad.h5"
bad_input "size not a multiple of the type" -b 6 -e 6 -d float --out "$WORK/bad.h5"
bad_input "zero count" -b 0 -e 8 --out "$WORK/bad.h5"
# (-b 8 -e 8G -i 1 had built its billion sizes, 8 GB, before the first; 10001 fail the same way)
bad_input "a sweep of more than 10000 sizes" -b 4 -e 40004 -i 4 --out "$WORK/bad.h5"
bad_input "negative size" -b -8 -e 8 --out "$WORK/bad.h5"
bad_input "unknown datatype" -d float8 --out "$WORK/bad.h5"
bad_input "unknown op" -o xor --out "$WORK/bad.h5"
bad_input "unwritable --out" -b 8 -e 8 --out /proc/sb-no-such-dir/bad.h5
bad_input "--out into a missing folder" -b 8 -e 8 --out "$WORK/missing/bad.h5"
bad_input "unknown transport" --transport rdma --out "$WORK/bad.h5"
bad_input "a transport given twice" --transport shm,mpi,shm --out "$WORK/bad.h5"
if "$BIN/sb-allreduce" --list | grep -q '^nccl .*unavailable'; then
  bad_input "--transport nccl where NCCL cannot run" --impl ring --transport nccl --out "$WORK/bad.h5"
fi
bad_input "--segment smaller than an element" --segment 2 -d float --out "$WORK/bad.h5"
# Ranks given different flags (a launcher's per-node lines, a wrapper script): refused at start,
# naming the rank and the flag. Before, different sizes hung the larger rank until -T, and
# different types reported "wrong values".
different_flags() {  # different_flags NAME ARGS-OF-RANK-1...: rank 0 runs -b 1K -e 64K -f 2
  local name=$1 start=$SECONDS
  shift
  $MPIRUN_FAILFAST -np 1 "$BIN/sb-allreduce" -b 1K -e 64K -f 2 -T 30 --out "$WORK/bad.h5" : \
    -np 1 "$BIN/sb-allreduce" "$@" -T 30 --out "$WORK/bad.h5" >"$WORK/bad.out" 2>"$WORK/bad.err"
  local rc=$? took=$((SECONDS - start))
  check "rank 1 given $name: status 2 (rc $rc) in $took s, no file" test $rc -eq 2 -a $took -lt 20 -a ! -e "$WORK/bad.h5"
}
different_flags "a larger --maxbytes" -b 1K -e 1M -f 2
check "... naming rank 1, the flag and both values" grep -q \
  '^sb-allreduce: error: rank 1: --maxbytes is 1M here but 64K on rank 0; every rank must run the same build, given the same flags$' \
  "$WORK/bad.err"
different_flags "another --datatype" -b 1K -e 64K -f 2 -d double
check "... naming the flag" grep -q '^sb-allreduce: error: rank 1: --datatype is double here but float on rank 0' \
  "$WORK/bad.err"
different_flags "--help" --help
different_flags "another --impl" -b 1K -e 64K -f 2 --impl ring
check "... naming --impl" grep -q '^sb-allreduce: error: rank 1: --impl is ring here but mpi on rank 0' "$WORK/bad.err"
$MPIRUN -np 1 "$BIN/sb-allreduce" -b 1K -e 4K -f 2 --out "$WORK/flags-a.h5" --label node=a : \
  -np 1 "$BIN/sb-allreduce" -b 1K -e 4K -f 2 --out "$WORK/flags-b.h5" --label node=b >"$WORK/flags.txt" 2>&1
check "--out and --label may differ between ranks (exit $?); rank 0's file is written" \
  test -s "$WORK/flags-a.h5" -a ! -e "$WORK/flags-b.h5"
# The same sizes written otherwise on each node's line (they had been refused as different flags).
$MPIRUN -np 1 "$BIN/sb-allreduce" -b 1K -e 4K -f 2 --out "$WORK/spelt.h5" : \
  -np 1 "$BIN/sb-allreduce" -b 1024 -e 4096B -f 2 --out "$WORK/spelt.h5" >"$WORK/spelt.txt" 2>&1
check "-b 1K -e 4K on rank 0 and -b 1024 -e 4096B on rank 1 agree (exit $?)" test -s "$WORK/spelt.h5"

# Standard output closed early (`| head`): the run goes on and saves its file, and says so on
# stderr. Before, SIGPIPE killed it at its next line, leaving no file (only its temporary).
"$BIN/sb-allreduce" -b 8 -e 1M -f 2 -n 2 -w 1 --out "$WORK/piped.h5" 2>"$WORK/piped.err" | head -1 >/dev/null
rc=${PIPESTATUS[0]}
check "stdout closed by | head: exit 0 (exit $rc), the results file complete" \
  bash -c "test $rc -eq 0 && h5dump -a /status '$WORK/piped.h5' | grep -q '\"complete\"'"
check "... and stderr says the output was cut short" \
  grep -q '^sb-allreduce: standard output failed part-way (closed early, or full): the lines printed after are lost$' \
  "$WORK/piped.err"
check "... and no temporary is left" test -z "$(ls "$WORK" | grep 'piped.h5.tmp')"
# ---- faults --------------------------------------------------------------------------------------
# A stuck rank: rank 1 is stopped mid-run; -T 3 must end the job, and rank 0 must save the sizes
# it finished, marked with why the run ended.
fault=$WORK/fault.h5
$MPIRUN -np 2 "$BIN/sb-allreduce" -b 8 -e 4M -f 2 -n 2000 -w 0 -T 3 --out "$fault" \
  >"$WORK/fault.txt" 2>"$WORK/fault.err" &
launcher=$!
wait_until "$launcher" grep -q '^#  Rank  1 Pid' "$WORK/fault.txt"
pid=$(sed -n 's/^#  Rank  1 Pid *\([0-9]*\) .*/\1/p' "$WORK/fault.txt")
# Stopped once the table has a finished size (not after a fixed time: on a loaded machine the
# first size once took over 20 s beside two builds, and a file with nothing finished
# would test nothing). The waits end as soon as what they wait for is there.
wait_until "$launcher" grep -qE '^ +[0-9]+ +[0-9]+ +float' "$WORK/fault.txt"
[[ -n $pid ]] && kill -STOP "$pid"
start=$SECONDS
wait "$launcher"
rc=$?
elapsed=$((SECONDS - start))
[[ -n $pid ]] && kill -CONT "$pid" 2>/dev/null
check "a stuck rank ends the job (rc=$rc) within -T plus margin (${elapsed}s)" test "$rc" -ne 0 -a "$elapsed" -le 20
check "the timeout is reported in one clear line" grep -q 'timed out: no progress for 3 s' "$WORK/fault.err"
check "the results so far are saved" test -e "$fault"
check "the saved file says why the run ended" bash -c "h5dump -a /status '$fault' | grep -q 'timed out'"
saved=$(h5dump -H -d /allreduce/mpi/size_bytes "$fault" | sed -n 's/.*SIMPLE { ( \([0-9]*\) ).*/\1/p')
finished=$(grep -cE '^ +[0-9]+ +[0-9]+ +float' "$WORK/fault.txt")
check "the saved file holds every size the table finished ($saved of $finished)" \
  test -n "$saved" -a "$saved" = "$finished" -a "$finished" -ge 1

# An interrupted run (SIGTERM to the launcher, as a scheduler's time limit does) saves too.
term=$WORK/term.h5
$MPIRUN -np 2 "$BIN/sb-allreduce" -b 8 -e 4M -f 2 -n 5000 -w 0 --out "$term" >"$WORK/term.txt" 2>&1 &
launcher=$!
wait_until "$launcher" grep -q '^#  Rank  1' "$WORK/term.txt"
sleep 1.5
kill -TERM "$launcher"
wait "$launcher"
check "SIGTERM ends the job with saved results" test -e "$term"
check "the saved file says it was interrupted" bash -c "h5dump -a /status '$term' | grep -q 'interrupted'"

# SIGKILL to rank 0 itself once the second sweep has begun: no handler runs; what is left is the
# snapshot rank 0 saved after the first sweep, with every size of it.
$MPIRUN -np 2 "$BIN/sb-allreduce" --impl ring,rd -b 8 -e 256K -f 2 -n 300 -w 0 --out "$WORK/killed.h5" \
  >"$WORK/killed.txt" 2>&1 &
kill_rank0_when $! "$WORK/killed.txt" '^# impl rd@mpi' "sb-allreduce .*--out $WORK/killed.h5"
status=$(h5_status "$WORK/killed.h5")
check "SIGKILL to rank 0 (pid ${killed_pid:-not found}) in the second sweep leaves the first's snapshot ($status)" \
  test -n "$killed_pid" -a "${status%%:*}" = "snapshot after ring@mpi (1 of 2 sweeps)"
saved=$(h5dump -H -d /allreduce/ring@mpi/size_bytes "$WORK/killed.h5" 2>/dev/null | sed -n 's/.*SIMPLE { ( \([0-9]*\) ).*/\1/p')
check "it holds the whole first sweep (${saved:-no} sizes of 16) and nothing of the second" \
  bash -c "test '${saved:-0}' -eq 16 && ! h5ls '$WORK/killed.h5/allreduce' | grep -q '^rd@mpi'"
check_schema "$WORK/killed.h5" ring@mpi
