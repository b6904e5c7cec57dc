# A full disk, for real: a small tmpfs in a private mount namespace (root only; skipped elsewhere)
# that each program writes to: sb-allreduce, sb-train's checkpoints and MLPerf log, sb-buckets'
# profile, sb-train's and sb-buckets' --trace, sb-report's plot folder (its images too) and merged
# file, sb-dryrun's predictions. Each ends within a bounded time with exit status 3 and one line
# that names the file and says "No space left on device" (not a crash), leaves no temporary and no
# file cut short, and loses nothing finished: sb-allreduce's tables are printed, sb-train's last
# checkpoint stays whole to resume from, also at 2 ranks (no rank left waiting), its results hold
# the steps it took, and sb-buckets' results, written before its trace, are complete.
source "$(dirname "$0")/helpers.bash"
export OMP_NUM_THREADS=1
DISK=$WORK/disk
mkdir -p "$DISK"
if [[ $(id -u) -ne 0 ]] || ! unshare -m mount -t tmpfs -o size=4k tmpfs "$DISK" 2>/dev/null; then
  echo "SKIP full disk: no private mount namespace with a tmpfs here (needs root)"
  exit 0
fi

# on_full_disk NAME KIB SETUP COMMAND [AFTER]: runs COMMAND (a shell line) with $DISK a fresh
# tmpfs of KIB KiB, after SETUP (a shell line, may be :) has partly filled it, then AFTER (a shell
# line, while the tmpfs is still there). Leaves NAME.rc, NAME.s (seconds), NAME.out, NAME.err,
# NAME.left (what is on the disk afterwards) and NAME.after (AFTER's exit status) in $WORK.
on_full_disk() {
  local name=$1 kib=$2 setup=$3 command=$4 after=${5:-:}
  cat >"$WORK/$name.sh" <<EOF
mount -t tmpfs -o size=${kib}k tmpfs '$DISK' || exit 99
$setup
start=\$(date +%s)
$command >'$WORK/$name.out' 2>'$WORK/$name.err'
echo \$? >'$WORK/$name.rc'
echo \$(( \$(date +%s) - start )) >'$WORK/$name.s'
ls -A '$DISK' >'$WORK/$name.left'
$after
echo \$? >'$WORK/$name.after'
EOF
  timeout 300 unshare -m bash "$WORK/$name.sh"
}

# expect_fault NAME PROGRAM FILE: exit status 3 within 60 s, one line naming FILE and the reason
# (besides the one a refused snapshot of the results may have printed, which the run went on from).
expect_fault() {
  local name=$1 program=$2 file=$3
  local rc seconds
  rc=$(cat "$WORK/$name.rc" 2>/dev/null) seconds=$(cat "$WORK/$name.s" 2>/dev/null)
  check "$name: exit status 3 (was ${rc:-none}) within 60 s (${seconds:-?} s)" \
    test "${rc:-0}" -eq 3 -a "${seconds:-999}" -lt 60
  check "$name: one line names $(basename "$file") and says why" \
    test "$(grep -F "$program: " "$WORK/$name.err" | grep -vF '(the run goes on)' | grep -F "$file" |
            grep -c 'No space left on device')" -eq 1
}

# --- sb-allreduce: 4 implementations' results do not fit in 16 KiB ---------------------------
on_full_disk allreduce 16 : \
  "$MPIRUN -np 2 $BIN/sb-allreduce -b 1K -e 64K -f 2 -n 5 -w 1 --impl mpi,ring,rd,tree --out $DISK/a.h5"
expect_fault allreduce sb-allreduce "$DISK/a.h5"
check "allreduce: nothing left on the disk ($(tr '\n' ' ' <"$WORK/allreduce.left"))" test ! -s "$WORK/allreduce.left"
check "allreduce: the tables were printed, summary included" grep -q '^# Summary' "$WORK/allreduce.out"
check "allreduce: the refused snapshot is said once ($(grep -c 'nor will later ones be' "$WORK/allreduce.err") lines)" \
  test "$(grep -c 'nor will later ones be (the run goes on): .*No space left on device' "$WORK/allreduce.err")" -eq 1

# --- sb-train: the checkpoint of step 8 does not fit beside the one of step 4 -------------------
TRAIN="$MPIRUN --bind-to none -np 1 $BIN/sb-train --threads 1 --print-every 0 --seed 5"
mkdir -p "$WORK/saved"
$TRAIN --steps 4 --checkpoint "$WORK/saved" --out "$WORK/saved.h5" >/dev/null 2>"$WORK/saved.err"
check "a 4-step checkpoint to start from" test -s "$WORK/saved/checkpoint.h5"
# Room for that checkpoint and 256 KiB more: not for a second one (about 2 MiB).
kib=$(( $(stat -c %s "$WORK/saved/checkpoint.h5") / 1024 + 256 ))
for np in 1 2; do
  on_full_disk "train-np$np" "$kib" "cp '$WORK/saved/checkpoint.h5' '$DISK/'" \
    "$MPIRUN --bind-to none -np $np $BIN/sb-train --threads 1 --print-every 0 --seed 5 --steps 20 \
       --checkpoint-steps 4 --checkpoint $DISK --resume --out $WORK/train-np$np.h5" \
    "cmp -s '$WORK/saved/checkpoint.h5' '$DISK/checkpoint.h5'"
  expect_fault "train-np$np" sb-train "$DISK/checkpoint.h5"
  check "train-np$np: it names the step whose checkpoint failed, and says the last one is kept" \
    grep -q 'cannot write the checkpoint of step 8 .* any earlier checkpoint is kept whole' "$WORK/train-np$np.err"
  check "train-np$np: the checkpoint of step 4 is still there, byte for byte" test "$(cat "$WORK/train-np$np.after")" = 0
  check "train-np$np: and nothing else ($(tr '\n' ' ' <"$WORK/train-np$np.left"))" \
    test "$(cat "$WORK/train-np$np.left")" = checkpoint.h5
  check "train-np$np: the results (on another disk) hold the 8 steps done and say why the run ended" \
    bash -c "h5dump -a /train/steps '$WORK/train-np$np.h5' | grep -q '(0): 8' &&
             h5dump -a /status '$WORK/train-np$np.h5' | grep -q 'failed: cannot write the checkpoint of step 8'"
done

# --- the MLPerf log and sb-buckets' profile: one page, most of it taken ----------------------------
on_full_disk mllog 4 "head -c 3000 /dev/zero >'$DISK/filler'" \
  "$MPIRUN --bind-to none -np 2 $BIN/sb-train --threads 1 --print-every 0 --steps 6 --mllog $DISK/mllog.txt \
     --out $WORK/mllog.h5"
expect_fault mllog sb-train "$DISK/mllog.txt"
on_full_disk profile 4 "head -c 3000 /dev/zero >'$DISK/filler'" \
  "$MPIRUN -np 1 $BIN/sb-buckets --model resnet20 --image-size 28 --batch 8 --threads 1 -b 1 -e 1 -n 1 \
     --write-profile $DISK/profile.txt --out $WORK/profile.h5"
expect_fault profile sb-buckets "$DISK/profile.txt"
check "profile: no profile cut short, no temporary ($(tr '\n' ' ' <"$WORK/profile.left"))" \
  test "$(cat "$WORK/profile.left")" = filler
# --- the Chrome traces of sb-train and sb-buckets at 2 ranks: a 4 KiB disk, none of it free ---------
on_full_disk train-trace 4 "head -c 4096 /dev/zero >'$DISK/filler'" \
  "$MPIRUN --bind-to none -np 2 $BIN/sb-train --threads 1 --print-every 0 --steps 5 --trace $DISK/train.json \
     --out $WORK/train-trace.h5"
expect_fault train-trace sb-train "$DISK/train.json"
check "train-trace: no trace cut short, no temporary ($(tr '\n' ' ' <"$WORK/train-trace.left"))" \
  test "$(cat "$WORK/train-trace.left")" = filler
printf 'backward 0.002\nconv1.weight 0.0015 4096\nfc.weight 0.001 1024\n' >"$WORK/buckets-profile.txt"
on_full_disk buckets-trace 4 "head -c 4096 /dev/zero >'$DISK/filler'" \
  "$MPIRUN -np 2 $BIN/sb-buckets --profile $WORK/buckets-profile.txt -b 1 -e 1 -n 1 --trace $DISK/buckets.json \
     --out $WORK/buckets-trace.h5"
expect_fault buckets-trace sb-buckets "$DISK/buckets.json"
check "buckets-trace: no trace cut short, no temporary ($(tr '\n' ' ' <"$WORK/buckets-trace.left"))" \
  test "$(cat "$WORK/buckets-trace.left")" = filler
check "buckets-trace: the results, written first (on another disk), are complete" \
  bash -c "h5dump -a /status '$WORK/buckets-trace.h5' | grep -q '\"complete\"'"

# --- sb-report: its folder of plots and its merged file ------------------------------------------
mkdir -p "$WORK/campaign"
for np in 1 2; do
  $MPIRUN -np $np "$BIN/sb-allreduce" -b 1K -e 1M -f 4 -n 3 -w 1 --impl mpi,ring --out "$WORK/campaign/np$np.h5" \
    >/dev/null 2>&1
done
"$BIN/sb-report" --no-render --out "$WORK/whole" "$WORK/campaign" >/dev/null 2>&1
check "a report written on a disk with room" test -s "$WORK/whole/summary.txt"
# Each file left is compared with the whole report's copy of it: none may be cut short.
on_full_disk report 8 : "$BIN/sb-report --no-render --out $DISK/report $WORK/campaign" \
  "cd '$DISK/report' && find . -type f | while read -r f; do cmp -s \"\$f\" '$WORK/whole/'\"\$f\" || exit 1; done"
expect_fault report sb-report "$DISK/report/"
check "report: every file it left is whole" test "$(cat "$WORK/report.after")" = 0
# The CSV tables are streamed (sb-report --samples): the table of every sample does not fit after
# the rest, and what was written of it goes with its temporary name.
"$BIN/sb-report" --no-render --samples --out "$WORK/whole-samples" "$WORK/campaign" >/dev/null 2>&1
on_full_disk tables 88 : "$BIN/sb-report --no-render --samples --out $DISK/report $WORK/campaign" \
  "cd '$DISK/report' && ls tables >'$WORK/tables.kept' && find . -type f | while read -r f; do
     cmp -s \"\$f\" '$WORK/whole-samples/'\"\$f\" || exit 1; done"
expect_fault tables sb-report "$DISK/report/tables/allreduce-iterations.csv"
check "tables: every file it left is whole ($(echo $(cat "$WORK/tables.kept")))" test "$(cat "$WORK/tables.after")" = 0
# With its images: gnuplot itself exits 0 when its image does not fit, leaving it cut short.
"$BIN/sb-report" --out "$WORK/rendered" "$WORK/campaign" >/dev/null 2>&1
check "a rendered report on a disk with room" test -s "$WORK/rendered/index.html"
on_full_disk report-images 96 : "$BIN/sb-report --out $DISK/report $WORK/campaign" \
  "cd '$DISK/report' && ls *.png *.svg >'$WORK/report-images.kept' &&
   find . -type f ! -name gnuplot.log | while read -r f; do cmp -s \"\$f\" '$WORK/rendered/'\"\$f\" || exit 1; done"
expect_fault report-images sb-report "$DISK/report/"
check "report-images: it got as far as the images ($(wc -l <"$WORK/report-images.kept") kept)" \
  grep -q "cannot write '$DISK/report/[^']*\.\(png\|svg\)'" "$WORK/report-images.err"
check "report-images: every file it left is whole, images included" test "$(cat "$WORK/report-images.after")" = 0
on_full_disk merge 8 : "$BIN/sb-report --merge $DISK/merged.h5 $WORK/campaign"
expect_fault merge sb-report "$DISK/merged.h5"
check "merge: nothing left on the disk ($(tr '\n' ' ' <"$WORK/merge.left"))" test ! -s "$WORK/merge.left"

# --- sb-dryrun: a folder of predicted results ---------------------------------------------------
cat >"$WORK/flat.machine" <<'M'
name flat
level net size 0 alpha 10us bandwidth 1GB/s
gamma float 2GB/s
copy 1GB/s
M
on_full_disk dryrun 8 : \
  "$BIN/sb-dryrun allreduce --machine $WORK/flat.machine --ranks 2,4,8 -b 64K -e 1M -f 4 --out $DISK/pred" \
  "! find '$DISK/pred' -name '*.tmp-*' | grep -q ."
expect_fault dryrun sb-dryrun "$DISK/pred/"
check "dryrun: no temporary left" test "$(cat "$WORK/dryrun.after")" = 0
