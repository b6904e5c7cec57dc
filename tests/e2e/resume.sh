# sb-train coming back from a fault by itself (scripts/slurm/train.sbatch through resume.bash, run
# outside Slurm with SB_LOCAL_NP ranks): a rank killed after the first checkpoint, and the job
# launches the ranks again with --resume and finishes, its results counting the resume and the
# wall time it cost; with no restarts left it stops, and the same job run again (as Slurm reruns a
# requeued job, under the same job id) resumes from the checkpoint; bad input is not retried.
source "$(dirname "$0")/helpers.bash"
export OMP_NUM_THREADS=1
export SB_ROOT=$PWD SB_BIN=$(cd "$BIN" && pwd) SB_RESULTS=$WORK/results SB_LOCAL_NP=2 SB_RESTART_DELAY=3
TRAIN_ARGS=(--threads 1 --epochs 1 --steps 30 --print-every 5 --checkpoint-steps 10 --timeout 60)

# job JOB_ID: train.sbatch in the background as that Slurm job (its results and checkpoints are
# named after it); sets launcher, and results/checkpoint to the paths it uses.
job() {
  SLURM_JOB_ID=$1 bash scripts/slurm/train.sbatch "${TRAIN_ARGS[@]}" >"$WORK/$1.out" 2>"$WORK/$1.err" &
  launcher=$!
  results=$SB_RESULTS/train-n1-np2-$1_1
  checkpoint=$WORK/checkpoints/train-n1-np2-$1_1/checkpoint.h5
}

# A rank lost, one restart allowed: the job comes back and finishes.
SB_RESTARTS=1 job 7001
kill_rank1_after_checkpoint "$checkpoint" "$launcher"
wait "$launcher"
rc=$?
check "a lost rank (pid ${killed:-not found}) ends attempt 1, and attempt 2 finishes the job (exit status $rc)" \
  test -n "$killed" -a "$rc" -eq 0
check "the restart is said, with where attempt 1's results went" \
  grep -q "attempt 1 ended with exit status [1-9][0-9]* (its results: $results.attempt1.h5); attempt 2 of at most 2" \
  "$WORK/7001.err"
check "attempt 2 resumed from the checkpoint" grep -q '^\[resume\] resume 1 of this run: ' "$WORK/7001.out"
check "and the job did not call its own checkpoint an earlier job's" bash -c "! grep -q 'an earlier job' '$WORK/7001.err'"
check "the checkpoints are kept out of the results folder, which sb-report reads" \
  test -e "$checkpoint" -a -z "$(find "$SB_RESULTS" -name 'checkpoint*')"
check "the final results are complete, with all 30 steps" \
  test "$(h5_attr "$results.h5" /status)" = complete -a "$(h5_attr "$results.h5" /train/steps)" = 30
gap=$(h5_attr "$results.h5" /train/resume_gap_s)
check "they count 1 resume and the wall time it cost (${gap:-none} s: the 3 s delay, work redone, relaunch, start-up)" \
  bash -c "test '$(h5_attr "$results.h5" /train/resumes)' = 1 && awk 'BEGIN { exit !(${gap:-0} > 3 && ${gap:-0} < 60) }'"
check "attempt 1's results are kept, ended early" \
  bash -c "test -n '$(h5_attr "$results.attempt1.h5" /status)' -a '$(h5_attr "$results.attempt1.h5" /status)' != complete"
check "each attempt has its MLPerf log" test -s "$results.mllog" -a -s "$results.attempt1.mllog"
check_schema "$results.h5"
"$SB_BIN/sb-report" --no-render --out "$WORK/report" "$SB_RESULTS" >/dev/null 2>&1
check "sb-report shows the resume beside the run, and attempt 1 as ended early" \
  bash -c "grep -q '^# run train-n1-np2-7001_1: .*; resumed 1 time, [0-9.]* s of wall time beyond its run time' '$WORK/report/summary.txt' &&
           grep -q '^# run train-n1-np2-7001_1.attempt1: .*; ended early: ' '$WORK/report/summary.txt'"

# No restart left: the job ends with the fault; run again under the same job id (a requeue), it
# resumes from the checkpoint the first run left.
SB_RESTARTS=0 job 7002
kill_rank1_after_checkpoint "$checkpoint" "$launcher"
wait "$launcher"
rc=$?
check "with SB_RESTARTS=0 a lost rank ends the job (exit status $rc), as said" \
  bash -c "test $rc -ne 0 && grep -q 'attempt 1 ended with exit status $rc; no restarts left (SB_RESTARTS=0)' '$WORK/7002.err'"
SB_RESTARTS=0 job 7002
wait "$launcher"
rc=$?
check "the requeued job resumes from the checkpoint and finishes (exit status $rc)" \
  bash -c "test $rc -eq 0 && grep -q 'holds a checkpoint (an earlier job.s: its results: $results.attempt1.h5); attempt 1 resumes from it' '$WORK/7002.err'"
check "its results count the resume" \
  test "$(h5_attr "$results.h5" /train/resumes)" = 1 -a "$(h5_attr "$results.h5" /status)" = complete

# Bad input is not retried: exit status 2 at once.
SB_RESTARTS=3 SLURM_JOB_ID=7003 bash scripts/slurm/train.sbatch --frobnicate >"$WORK/7003.out" 2>"$WORK/7003.err"
rc=$?
check "bad input ends the job with exit status 2 ($rc) and no restart" \
  bash -c "test $rc -eq 2 && ! grep -q 'attempt 2' '$WORK/7003.err'"
SB_RESTARTS=x SLURM_JOB_ID=7004 bash scripts/slurm/train.sbatch >"$WORK/7004.out" 2>"$WORK/7004.err"
rc=$?
check "SB_RESTARTS that is not a number is exit status 2 ($rc) with one line" \
  bash -c "test $rc -eq 2 && grep -q 'SB_RESTARTS and SB_RESTART_DELAY must be whole numbers' '$WORK/7004.err'"

# SB_KEEP_CHECKPOINTS=0: a run that finished removes its checkpoints (and says how much they were).
SB_KEEP_CHECKPOINTS=0 SLURM_JOB_ID=7008 bash scripts/slurm/train.sbatch --steps 2 --threads 1 \
  >"$WORK/7008.out" 2>"$WORK/7008.err"
rc=$?
check "SB_KEEP_CHECKPOINTS=0: the finished run (exit status $rc) removed its checkpoints, as said" \
  bash -c "test $rc -eq 0 && test ! -e '$WORK/checkpoints/train-n1-np2-7008_1' &&
           grep -q '^resume.bash: the run finished; its checkpoints (.* in $WORK/checkpoints/train-n1-np2-7008_1) removed' '$WORK/7008.err'"
SB_KEEP_CHECKPOINTS=no SLURM_JOB_ID=7009 bash scripts/slurm/train.sbatch >"$WORK/7009.out" 2>"$WORK/7009.err"
rc=$?
check "SB_KEEP_CHECKPOINTS other than 0 or 1 is exit status 2 ($rc) with one line" \
  bash -c "test $rc -eq 2 && grep -q \"SB_KEEP_CHECKPOINTS must be 0 or 1, not 'no'\" '$WORK/7009.err'"

# A job with GPUs trains on them: --backend cudnn unless the flags name a backend (here, with no
# GPU, sb-train then refuses with exit status 2).
SB_GPUS_PER_NODE=1 SLURM_JOB_ID=7006 bash scripts/slurm/train.sbatch --steps 1 >"$WORK/7006.out" 2>"$WORK/7006.err"
rc=$?
check "a job with GPUs trains with --backend cudnn, and says so (exit status $rc without a GPU here)" \
  bash -c "test $rc -eq 2 && grep -q '^resume.bash: 1 GPUs per node: training with --backend cudnn' '$WORK/7006.err'"
SB_GPUS_PER_NODE=1 SLURM_JOB_ID=7007 bash scripts/slurm/train.sbatch --backend onednn --steps 2 --threads 1 \
  >"$WORK/7007.out" 2>"$WORK/7007.err"
rc=$?
check "its flags' --backend wins (onednn: exit status $rc, nothing said)" \
  bash -c "test $rc -eq 0 && ! grep -q 'training with --backend cudnn' '$WORK/7007.err'"

# The curve in wall-clock time: an epoch after a resume is that much later than its run time
# says (clock_s = wall_s + resume_gap_s), an epoch before it is not. Two epochs of 4 steps on a
# small ImageFolder, stopped after the first and resumed 2 s later (the attribute as h5dump prints
# it, to 6 digits: within a millisecond).
"$SB_BIN/sb-idx2folder" --out "$WORK/folder" --train-limit 256 --val-limit 128 >/dev/null 2>&1
mkdir -p "$WORK/clock"
small=(--data "imagefolder:$WORK/folder" --image-size 28 --batch 64 --threads 1 --epochs 2 --print-every 0
       --checkpoint "$WORK/clock")
"$SB_BIN/sb-train" "${small[@]}" --steps 4 --out "$WORK/clock1.h5" >/dev/null 2>&1 && sleep 2 &&
  "$SB_BIN/sb-train" "${small[@]}" --resume --out "$WORK/clock2.h5" >/dev/null 2>&1
check "two epochs, stopped after the first and resumed: exit status $?" test -s "$WORK/clock2.h5"
wall=$(h5values "$WORK/clock2.h5" /train/curve/wall_s 2>/dev/null | paste -sd' ')
clock=$(h5values "$WORK/clock2.h5" /train/curve/clock_s 2>/dev/null | paste -sd' ')
gap=$(h5_attr "$WORK/clock2.h5" /train/resume_gap_s)
check "epoch 1 at ${clock%% *} s of wall-clock time, its run time; epoch 2 at ${clock##* } s, its run time ${wall##* } s and the ${gap:-no} s the resume lost" \
  awk -v w="$wall" -v c="$clock" -v g="${gap:-x}" 'BEGIN { split(w, W, " "); split(c, C, " ");
    d = C[2] - (W[2] + g); if (d < 0) d = -d; exit !(C[1] == W[1] && g > 2 && d < 1e-3) }'

# A resume under other settings (MCA, NCCL, UCX, OpenMP variables): each change is said, and
# recorded with those of earlier resumes; a resume under the same settings says nothing more.
mkdir -p "$WORK/settings"
tiny=(--data "imagefolder:$WORK/folder" --image-size 28 --batch 64 --threads 1 --epochs 2 --print-every 0
      --checkpoint "$WORK/settings" --checkpoint-steps 1)
NCCL_ALGO=Ring "$SB_BIN/sb-train" "${tiny[@]}" --steps 2 --out "$WORK/settings1.h5" >/dev/null 2>&1
NCCL_ALGO=Tree UCX_TLS=sm "$SB_BIN/sb-train" "${tiny[@]}" --steps 3 --resume --out "$WORK/settings2.h5" \
  >"$WORK/settings2.txt" 2>&1
check "a resume under other settings goes on (exit status $?) and says each change" \
  bash -c "grep -qx '\[resume\] warning: a setting differs from the checkpointed run.s: NCCL_ALGO: Ring then, Tree now' '$WORK/settings2.txt' &&
           grep -qx '\[resume\] warning: a setting differs from the checkpointed run.s: UCX_TLS: unset then, sm now' '$WORK/settings2.txt'"
NCCL_ALGO=Tree UCX_TLS=sm "$SB_BIN/sb-train" "${tiny[@]}" --steps 4 --resume --out "$WORK/settings3.h5" \
  >"$WORK/settings3.txt" 2>&1
check "resumed again under the same settings, it says nothing of them" \
  bash -c "test -s '$WORK/settings3.h5' && ! grep -q 'setting differs' '$WORK/settings3.txt'"
changes=$(h5dump -a /train/resume_setting_changes "$WORK/settings3.h5" 2>/dev/null | grep -o '"resume [^"]*"' |
  sed 's/\\000//g' | paste -sd'|')  # strings are NUL-padded to the longest
check "its results keep the first resume's changes: $changes" \
  test "$changes" = '"resume 1: NCCL_ALGO: Ring then, Tree now"|"resume 1: UCX_TLS: unset then, sm now"'
check_schema "$WORK/settings3.h5"
"$SB_BIN/sb-report" --no-render --out "$WORK/settings-report" "$WORK/settings3.h5" >/dev/null 2>&1
check "sb-report lists them beside the resumes" \
  grep -q '; resumed 2 times, .*; settings changed on resume: resume 1: NCCL_ALGO: Ring then, Tree now | resume 1: UCX_TLS' \
  "$WORK/settings-report/summary.txt"
