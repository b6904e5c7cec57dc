# sb-train going on without a lost node (train.sbatch with SB_ELASTIC=1, resume.bash): a job of
# two one-rank nodes whose second node dies after the first checkpoint relaunches on the node left
# with one rank accumulating two micro-batches, and ends with the weights of two ranks straight
# through, bit for bit. Slurm's commands are stand-ins here (srun runs a local mpirun and answers
# for the nodes a folder does not list as dead; sinfo reads a state file; scontrol expands node lists),
# so what is tested is resume.bash's logic and sb-train's equivalence, not a real cluster's
# handling of a dead node. The node probe, the shape rule and the refusals are tested alone too.
source "$(dirname "$0")/helpers.bash"
export OMP_NUM_THREADS=1
export SB_ROOT=$PWD SB_BIN=$(cd "$BIN" && pwd) SB_RESULTS=$WORK/results
unset SB_LOCAL_NP
TRAIN_ARGS=(--threads 1 --epochs 1 --steps 30 --print-every 5 --checkpoint-steps 10 --timeout 60)

# --- Slurm's commands, stood in for ----------------------------------------------------------
FAKE=$WORK/fake-slurm
mkdir -p "$FAKE/bin" "$FAKE/dead" "$FAKE/state"
cat >"$FAKE/bin/srun" <<EOF
#!/usr/bin/env bash
# srun [--option=value...] PROGRAM ARGS: a probe (PROGRAM true) succeeds unless its node is in
# $FAKE/dead; a launch runs --ntasks ranks (default SLURM_NTASKS) under a local mpirun.
ranks=\$SLURM_NTASKS nodelist=all
while [[ \$1 == -* ]]; do
  case \$1 in --ntasks=*) ranks=\${1#*=} ;; --nodelist=*) nodelist=\${1#*=} ;; esac
  shift
done
if [[ \$1 == true ]]; then [[ ! -e $FAKE/dead/\$nodelist ]]; exit; fi
echo "launch on \$nodelist: \$ranks ranks" >>"$FAKE/launches"
exec mpirun --oversubscribe --bind-to none -np "\$ranks" "\$@"
EOF
cat >"$FAKE/bin/sinfo" <<EOF
#!/usr/bin/env bash
# sinfo -h -n NODE -o %t: the state in $FAKE/state/NODE, else alloc.
cat "$FAKE/state/\$3" 2>/dev/null || echo alloc
EOF
cat >"$FAKE/bin/scontrol" <<'EOF'
#!/usr/bin/env bash
# scontrol show hostnames LIST: PREFIX[A-B] or a comma list, one name per line.
if [[ $3 =~ ^(.*)\[([0-9]+)-([0-9]+)\]$ ]]; then
  for i in $(seq "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}"); do echo "${BASH_REMATCH[1]}$i"; done
else
  tr , '\n' <<<"$3"
fi
EOF
chmod +x "$FAKE/bin/"*
export PATH=$FAKE/bin:$PATH SB_LAUNCHER=srun

# --- the logic alone ---------------------------------------------------------------------------
shape() { bash -c 'source scripts/slurm/resume.bash; sb_elastic_shape "$@"' shape "$@"; }
check "shape: 8 ranks x 1 on 6 slots go on as 4 x 2" test "$(shape 8 1 6)" = "4 2"
check "shape: 3 ranks x 1 on 2 slots go on as 1 x 3 (no even share for 2)" test "$(shape 3 1 2)" = "1 3"
check "shape: 4 ranks x 2 on 3 slots go on as 2 x 4" test "$(shape 4 2 3)" = "2 4"
check "shape: never more ranks than before" test "$(shape 2 1 8)" = "2 1"
echo drain >"$FAKE/state/n2"
touch "$FAKE/dead/n3"
alive=$(bash -c 'source scripts/slurm/resume.bash; sb_alive_nodes n1 n2 n3 n4' | paste -sd, -)
check "alive: a node Slurm drains and one that does not answer its probe are left out (n1,n4: $alive)" \
  test "$alive" = n1,n4
# Three one-rank nodes, the third lost: 3 micro-batches have no even share on 2 ranks, so 1 rank
# takes all 3, on the first node left; the second stays in reserve (srun cannot spread 1 task
# over 2 nodes).
relaunch=$(bash -c 'source scripts/slurm/resume.bash
  elastic_nodes=(n1 n2 n3)
  elastic_ranks=3 elastic_accumulate=1 elastic_per_node=1 attempt=1
  args=(--steps 5 --accumulate=1)
  sb_elastic_relaunch 2>/dev/null
  echo "$SB_LAUNCH_NODES $SB_LAUNCH_RANKS ${args[*]}"')
check "3 one-rank nodes, 1 lost: 1 rank x 3 on n1, n2 in reserve ($relaunch)" \
  test "$relaunch" = "n1 1 --steps 5 --accumulate 3"
# An injected straggler on a rank that is gone is dropped (sb-train would refuse it), and said;
# one on a rank still there stays.
for straggler in 2:3 0:3; do
  relaunch=$(bash -c 'source scripts/slurm/resume.bash
    elastic_nodes=(n1 n2 n3)
    elastic_ranks=3 elastic_accumulate=1 elastic_per_node=1 attempt=1
    args=(--straggler "$1" --steps 5)
    sb_elastic_relaunch 2>"$2"
    grep -c "straggler $1 names a rank the next attempt does not have" "$2"
    echo "${args[*]}"' relaunch "$straggler" "$WORK/relaunch.err" | paste -sd' ' -)
  want="1 --steps 5 --accumulate 3"
  [[ $straggler == 0:3 ]] && want="0 --straggler 0:3 --steps 5 --accumulate 3"
  check "a relaunch to 1 rank with --straggler $straggler: ($relaunch)" test "$relaunch" = "$want"
done
rm -f "$FAKE/state/n2" "$FAKE/dead/n3"

# --- the run: two nodes, one lost after the first checkpoint -------------------------------------
# The straight run to compare with: two ranks, no fault.
mkdir -p "$WORK/straight"
mpirun --oversubscribe --bind-to none -np 2 "$SB_BIN/sb-train" "${TRAIN_ARGS[@]}" --checkpoint "$WORK/straight" \
  --out "$WORK/straight.h5" >"$WORK/straight.out" 2>&1
check "the straight two-rank run finishes (exit status $?)" test -s "$WORK/straight/checkpoint.h5"

export SLURM_JOB_ID=7101 SLURM_NTASKS=2 SLURM_JOB_NUM_NODES=2 SLURM_JOB_NODELIST='fake[1-2]'
export SB_ELASTIC=1 SB_RESTARTS=1 SB_RESTART_DELAY=1 SB_PROBE_TIMEOUT=10
bash scripts/slurm/train.sbatch "${TRAIN_ARGS[@]}" >"$WORK/job.out" 2>"$WORK/job.err" &
launcher=$!
results=$SB_RESULTS/train-n2-np2-7101_1
checkpoint=$WORK/checkpoints/train-n2-np2-7101_1/checkpoint.h5
touch "$FAKE/dead/fake2"  # the node goes (its probe fails from now on), and its rank with it
kill_rank1_after_checkpoint "$checkpoint" "$launcher"
wait "$launcher"
rc=$?
check "the lost node's rank (pid ${killed:-not found}) ends attempt 1, and attempt 2 finishes the job (exit status $rc)" \
  test -n "$killed" -a "$rc" -eq 0
check "the job says which node it lost and how it goes on" \
  grep -q '^resume.bash: lost fake2; the next attempt goes on with 1 of 2 nodes, 1 rank x 2 micro-batches (was 2 x 1)' \
  "$WORK/job.err"
check "attempt 2 ran on the node left, with one rank" \
  test "$(sed -n 2p "$FAKE/launches")" = "launch on fake1: 1 ranks"
check "sb-train resumed, rescaled from 2 ranks to 1 keeping the global batch" \
  grep -q '^\[resume\] rescaled from 2 ranks to 1, global batch 128 kept: 128 per rank x 2 micro-batches' "$WORK/job.out"
check "the final results are complete, with all 30 steps and the resume counted" \
  test "$(h5_attr "$results.h5" /status)" = complete -a "$(h5_attr "$results.h5" /train/steps)" = 30 \
  -a "$(h5_attr "$results.h5" /train/resumes)" = 1
check "the MLPerf log records the rescaling" grep -q '"key": "elastic_rescale"' "$results.mllog"
h5diff "$WORK/straight/checkpoint.h5" "$checkpoint" /checkpoint/parameters /checkpoint/parameters >/dev/null 2>&1
check "the weights at step 30 are bit-identical to two ranks straight through" test $? -eq 0

# --- refusals -------------------------------------------------------------------------------------
SB_ELASTIC=yes bash scripts/slurm/train.sbatch >"$WORK/bad.out" 2>"$WORK/bad.err"
rc=$?
check "SB_ELASTIC other than 0 or 1 is exit status 2 ($rc) with one line" \
  bash -c "test $rc -eq 2 && grep -q \"SB_ELASTIC must be 0 or 1, not 'yes'\" '$WORK/bad.err'"
bash scripts/slurm/train.sbatch --bn-span 2 >"$WORK/bn.out" 2>"$WORK/bn.err"
rc=$?
check "SB_ELASTIC=1 with --bn-span 2 is exit status 2 ($rc) before any launch, with one line" \
  bash -c "test $rc -eq 2 && grep -q 'SB_ELASTIC=1 cannot go on with fewer ranks under --bn-span 2' '$WORK/bn.err' &&
    test \$(wc -l <'$FAKE/launches') -eq 2"
scripts/campaign --programs train --nodes 1 --elastic --local --args train='--steps 2 --bn-span=2' --out "$WORK/c" \
  >"$WORK/campaign.out" 2>"$WORK/campaign.err"
rc=$?
check "campaign --elastic with --bn-span 2 is exit status 2 ($rc) with one line" \
  bash -c "test $rc -eq 2 && grep -q -- '--elastic cannot go on with fewer ranks under --bn-span 2' '$WORK/campaign.err'"
SB_LOCAL_NP=1 bash scripts/slurm/train.sbatch --help >"$WORK/local.out" 2>"$WORK/local.err"
check "outside Slurm SB_ELASTIC=1 says it needs a Slurm job and goes on without it" \
  grep -q 'SB_ELASTIC=1 needs a Slurm job' "$WORK/local.err"
