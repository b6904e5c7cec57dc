# Sourced by train.sbatch, after launch.bash: sb-train that comes back from a fault by itself.
#
# sb_train_resumable OUT ARGS...: sb-train ARGS --out OUT --mllog OUT.mllog on every rank
# (sb_launch), checkpointing to the --checkpoint DIR of ARGS, or else to SB_CHECKPOINTS/<OUT's
# name without .h5> (SB_CHECKPOINTS: default `checkpoints` beside SB_RESULTS, out of the results
# tree that sb-report reads).
#  - When DIR already holds a checkpoint (a requeued job: Slurm reruns this script under the same
#    job id, so OUT and DIR are the same), the run resumes from it.
#  - When the job ends with a fault, it is launched again with --resume (from scratch when no
#    checkpoint was written yet), SB_RESTARTS times at most (default 2), SB_RESTART_DELAY seconds
#    later (default 5: what a launcher needs to let go of the last job's ranks). A fault is any
#    exit but 0 (finished) and 2 (bad input, which a relaunch would only repeat).
#  - A failed attempt's results and MLPerf log (the requeued job's predecessor's too) stay beside
#    the final ones, OUT's name with .attempt<K>.h5 and .attempt<K>.mllog, K = 1, 2, ... The final
#    results count the resumes and the wall time they cost (/train/resumes, /train/resume_gap_s).
#  - With SB_KEEP_CHECKPOINTS=0, a run that finished has its checkpoints removed (those under
#    SB_CHECKPOINTS only: a --checkpoint DIR of ARGS is the user's and stays).
#  - With SB_ELASTIC=1 inside Slurm, a job that lost nodes goes on with the nodes left (see
#    sb_elastic_relaunch below; submit it with `sbatch --no-kill`, or Slurm ends the whole job when
#    a node fails and only a requeue brings it back).
# Returns the last attempt's exit status.

# The value of option NAME in ARGS (--name VALUE or --name=VALUE), or nothing.
sb_option_value() {
  local name=$1
  shift
  while (($#)); do
    case $1 in
      "$name") echo "${2:-}"; return ;;
      "$name"=*) echo "${1#*=}"; return ;;
    esac
    shift
  done
}

# sb_drop_option NAME: the caller's args without option NAME and its value (--name VALUE or
# --name=VALUE).
sb_drop_option() {
  local name=$1 skip=0 arg
  local -a kept=()
  for arg in "${args[@]}"; do
    if ((skip)); then skip=0; continue; fi
    case $arg in
      "$name") skip=1 ;;
      "$name"=*) ;;
      *) kept+=("$arg") ;;
    esac
  done
  args=("${kept[@]}")
}

# sb_set_aside BASE: BASE.h5 and BASE.mllog, where there, to BASE.attempt<K>.* with the first K
# free; says where the results went ("no results file" when there was none).
sb_set_aside() {
  local base=$1 k=1
  while [[ -e $base.attempt$k.h5 || -e $base.attempt$k.mllog ]]; do k=$((k + 1)); done
  if [[ -e $base.mllog ]]; then mv -f "$base.mllog" "$base.attempt$k.mllog"; fi
  if [[ -e $base.h5 ]]; then
    mv -f "$base.h5" "$base.attempt$k.h5"
    echo "its results: $base.attempt$k.h5"
  else
    echo "no results file"
  fi
}

# sb_gpu_backend: a job with GPUs (SB_GPUS_PER_NODE, which scripts/campaign --gpus-per-node sets,
# else Slurm's SLURM_GPUS_ON_NODE) trains on them: --backend cudnn joins the caller's args unless
# they name a backend, and it is said. Otherwise the ranks of a GPU campaign would train on the
# CPU cores with oneDNN, and its figures would be the CPU's.
sb_gpu_backend() {
  local gpus=${SB_GPUS_PER_NODE:-0}
  [[ $gpus =~ ^[1-9][0-9]*$ ]] || gpus=${SLURM_GPUS_ON_NODE:-0}
  [[ $gpus =~ ^[1-9][0-9]*$ && -z $(sb_option_value --backend "${args[@]}") ]] || return 0
  args+=(--backend cudnn)
  echo "resume.bash: $gpus GPUs per node: training with --backend cudnn (--backend in the flags chooses another)" >&2
}

# --- going on without a lost node (SB_ELASTIC=1) ----------------------------------------------
# A node lost mid-run takes its ranks with it. Rather than wait in the queue for a whole new
# allocation, the job relaunches on the nodes still answering, with fewer ranks and as many more
# micro-batches each (--accumulate): the global batch and every micro-batch (one rank's shard of
# the step, over which local batch norm normalises) stay as they were, so the training takes the
# same steps as it would have on all the nodes (README: equivalence; sb-train logs the rescaling).

# sb_alive_nodes NODES...: those of NODES that Slurm does not count as failed (sinfo: down,
# drained or draining, failing, not responding) and that run a one-task step within
# SB_PROBE_TIMEOUT seconds (default 30; a node that died a moment ago may not be marked yet), one
# per line, in the order given. The probes run side by side.
sb_alive_nodes() {
  local probes node state
  probes=$(mktemp -d)
  local -a pids=()
  for node in "$@"; do
    state=$(sinfo -h -n "$node" -o %t 2>/dev/null | head -n 1) || state=''
    case $state in down* | drain* | drng* | fail* | *'*') continue ;; esac
    (timeout "${SB_PROBE_TIMEOUT:-30}" srun --mpi=none --nodes=1 --ntasks=1 --nodelist="$node" true \
      >/dev/null 2>&1 && touch "$probes/$node") &
    pids+=($!)
  done
  ((${#pids[@]} == 0)) || wait "${pids[@]}" || true
  for node in "$@"; do [[ -e $probes/$node ]] && echo "$node"; done
  rm -rf "$probes"
}

# sb_elastic_shape RANKS ACCUMULATE CAPACITY: the most ranks, at most CAPACITY (and RANKS), that
# share the RANKS x ACCUMULATE micro-batches of a step evenly, and how many each then takes:
# "RANKS' ACCUMULATE'". 8 ranks x 1 on 6 slots: "4 2"; 3 x 1 on 2: "1 3".
sb_elastic_shape() {
  local micro=$(($1 * $2)) ranks=$3
  ((ranks > $1)) && ranks=$1
  while ((ranks > 1 && micro % ranks != 0)); do ranks=$((ranks - 1)); done
  echo "$ranks $((micro / ranks))"
}

# sb_elastic_start: SB_ELASTIC taken up into the caller's elastic (0 or 1), elastic_nodes (the
# job's nodes), elastic_ranks, elastic_accumulate (of the caller's args) and elastic_per_node.
# Returns 2 (said in one line) for bad input; outside Slurm it says elastic needs a job and leaves
# elastic at 0.
sb_elastic_start() {
  case ${SB_ELASTIC:-0} in
    0) return 0 ;;
    1) ;;
    *) echo "resume.bash: SB_ELASTIC must be 0 or 1, not '$SB_ELASTIC'" >&2; return 2 ;;
  esac
  if [[ -n ${SB_LOCAL_NP:-} || -z ${SLURM_JOB_ID:-} ]]; then
    echo "resume.bash: SB_ELASTIC=1 needs a Slurm job (its nodes); outside one a fault relaunches on the same ranks" >&2
    return 0
  fi
  mapfile -t elastic_nodes < <(scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2>/dev/null)
  if ((${#elastic_nodes[@]} == 0)); then
    echo "resume.bash: SB_ELASTIC=1 needs the job's node list (scontrol show hostnames \$SLURM_JOB_NODELIST gave none)" >&2
    return 2
  fi
  elastic_accumulate=$(sb_option_value --accumulate "${args[@]}")
  elastic_accumulate=${elastic_accumulate:-1}
  if ! [[ $elastic_accumulate =~ ^[1-9][0-9]*$ ]]; then
    echo "resume.bash: --accumulate must be a whole number of at least 1, not '$elastic_accumulate'" >&2
    return 2
  fi
  # Batch norm over groups of --bn-span ranks cannot be kept by fewer ranks taking more
  # micro-batches each (sb-train refuses --bn-span with --accumulate): say so now, not after a fault.
  local bn_span
  bn_span=$(sb_option_value --bn-span "${args[@]}")
  if [[ $bn_span =~ ^[0-9]+$ ]] && ((10#$bn_span > 1)); then
    echo "resume.bash: SB_ELASTIC=1 cannot go on with fewer ranks under --bn-span $bn_span (batch norm over" \
      "groups of ranks, which --accumulate cannot keep): use one or the other" >&2
    return 2
  fi
  elastic=1
  elastic_ranks=$SLURM_NTASKS
  elastic_per_node=$(((elastic_ranks + ${#elastic_nodes[@]} - 1) / ${#elastic_nodes[@]}))
  echo "resume.bash: SB_ELASTIC=1: after a fault the job goes on with those of its ${#elastic_nodes[@]} nodes" \
    "(${elastic_nodes[*]}) that still answer" >&2
}

# sb_elastic_relaunch: after a fault, narrows the next launch to the nodes of elastic_nodes still
# alive (SB_LAUNCH_NODES, SB_LAUNCH_RANKS, SB_LAUNCH_PER_NODE for sb_launch) and sets --accumulate
# in the caller's args; says what it did. Uses the caller's elastic_nodes, elastic_ranks,
# elastic_accumulate, elastic_per_node, args and attempt. Fails when no node is left.
sb_elastic_relaunch() {
  local -a alive
  mapfile -t alive < <(sb_alive_nodes "${elastic_nodes[@]}")
  if ((${#alive[@]} == ${#elastic_nodes[@]})); then
    echo "resume.bash: all ${#alive[@]} nodes of attempt $attempt still answer; the next attempt keeps them" >&2
    return 0
  fi
  if ((${#alive[@]} == 0)); then
    echo "resume.bash: none of the nodes of attempt $attempt (${elastic_nodes[*]}) answers; nothing to go on with" >&2
    return 1
  fi
  local shape ranks accumulate
  shape=$(sb_elastic_shape "$elastic_ranks" "$elastic_accumulate" $((${#alive[@]} * elastic_per_node)))
  read -r ranks accumulate <<<"$shape"
  local lost
  lost=$(comm -23 <(printf '%s\n' "${elastic_nodes[@]}" | sort) <(printf '%s\n' "${alive[@]}" | sort) | paste -sd, -)
  # The ranks fill the first nodes left (3 one-rank nodes, one lost: 1 rank x 3 on the first of
  # the two left; the other stays in reserve for a later fault).
  local -a used=("${alive[@]:0:$(((ranks + elastic_per_node - 1) / elastic_per_node))}")
  local rank_word=ranks
  ((ranks == 1)) && rank_word=rank
  echo "resume.bash: lost $lost; the next attempt goes on with ${#used[@]} of ${#elastic_nodes[@]} nodes," \
    "$ranks $rank_word x $accumulate micro-batches (was $elastic_ranks x $elastic_accumulate): the same global batch" \
    "and micro-batches" >&2
  sb_drop_option --accumulate
  args+=(--accumulate "$accumulate")
  # An injected straggler on a rank the smaller job does not have would make sb-train refuse the
  # flags (exit status 2, not retried): it goes, and is said; one on a rank still there stays.
  local straggler
  straggler=$(sb_option_value --straggler "${args[@]}")
  if [[ $straggler =~ ^([0-9]+): ]] && ((10#${BASH_REMATCH[1]} >= ranks)); then
    sb_drop_option --straggler
    echo "resume.bash: --straggler $straggler names a rank the next attempt does not have ($ranks $rank_word): dropped" >&2
  fi
  elastic_nodes=("${alive[@]}")
  elastic_ranks=$ranks
  elastic_accumulate=$accumulate
  SB_LAUNCH_NODES=$(printf '%s\n' "${used[@]}" | paste -sd, -)
  SB_LAUNCH_RANKS=$ranks
  SB_LAUNCH_PER_NODE=$elastic_per_node
}

sb_train_resumable() {
  local out=$1
  shift
  local -a args=("$@")
  sb_gpu_backend
  local base=${out%.h5}
  local checkpoint_dir ours=0
  checkpoint_dir=$(sb_option_value --checkpoint "${args[@]}")
  if [[ -z $checkpoint_dir ]]; then
    checkpoint_dir=${SB_CHECKPOINTS:-$(dirname "$SB_RESULTS")/checkpoints}/$(basename "$base")
    args+=(--checkpoint "$checkpoint_dir")
    ours=1
  fi
  local keep=${SB_KEEP_CHECKPOINTS:-1}
  if [[ $keep != 0 && $keep != 1 ]]; then
    echo "resume.bash: SB_KEEP_CHECKPOINTS must be 0 or 1, not '$keep'" >&2
    return 2
  fi
  mkdir -p "$checkpoint_dir"
  # A --resume of ARGS is this function's to give, once.
  local -a resume=() kept=()
  local arg
  for arg in "${args[@]}"; do
    if [[ $arg == --resume ]]; then resume=(--resume); else kept+=("$arg"); fi
  done
  args=("${kept[@]}")
  local restarts=${SB_RESTARTS:-2} delay=${SB_RESTART_DELAY:-5}
  if ! [[ $restarts =~ ^[0-9]+$ && $delay =~ ^[0-9]+$ ]]; then
    echo "resume.bash: SB_RESTARTS and SB_RESTART_DELAY must be whole numbers, not '$restarts' and '$delay'" >&2
    return 2
  fi
  local elastic=0 elastic_ranks=0 elastic_accumulate=1 elastic_per_node=1
  local -a elastic_nodes=()
  sb_elastic_start || return
  local attempt=1 rc
  while :; do
    if [[ ${#resume[@]} -eq 0 && -e $checkpoint_dir/checkpoint.h5 ]]; then
      resume=(--resume)
      # Before this job's first attempt, the checkpoint is an earlier job's (a requeue); later, the
      # restart line has said where the failed attempt's results went.
      if ((attempt == 1)); then
        echo "resume.bash: $checkpoint_dir holds a checkpoint (an earlier job's: $(sb_set_aside "$base"));" \
          "attempt $attempt resumes from it" >&2
      fi
    fi
    sb_launch sb-train "${args[@]}" "${resume[@]}" --mllog "$base.mllog" --out "$out" && rc=0 || rc=$?
    if [[ $rc -eq 0 && $keep == 0 && $ours == 1 ]]; then
      echo "resume.bash: the run finished; its checkpoints ($(du -sh "$checkpoint_dir" | cut -f1) in" \
        "$checkpoint_dir) removed (SB_KEEP_CHECKPOINTS=0)" >&2
      rm -rf "$checkpoint_dir"
    fi
    if [[ $rc -eq 0 || $rc -eq 2 ]]; then return "$rc"; fi
    if ((attempt > restarts)); then
      echo "resume.bash: sb-train attempt $attempt ended with exit status $rc; no restarts left (SB_RESTARTS=$restarts)" >&2
      return "$rc"
    fi
    echo "resume.bash: sb-train attempt $attempt ended with exit status $rc ($(sb_set_aside "$base"));" \
      "attempt $((attempt + 1)) of at most $((restarts + 1)) starts in $delay s" >&2
    sleep "$delay"
    if [[ $elastic == 1 ]]; then sb_elastic_relaunch || return "$rc"; fi
    attempt=$((attempt + 1))
  done
}
