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

sb_train_resumable() {
  local out=$1
  shift
  local -a args=("$@")
  local base=${out%.h5}
  local checkpoint_dir
  checkpoint_dir=$(sb_option_value --checkpoint "${args[@]}")
  if [[ -z $checkpoint_dir ]]; then
    checkpoint_dir=${SB_CHECKPOINTS:-$(dirname "$SB_RESULTS")/checkpoints}/$(basename "$base")
    args+=(--checkpoint "$checkpoint_dir")
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
  local attempt=1 rc
  while :; do
    if [[ ${#resume[@]} -eq 0 && -e $checkpoint_dir/checkpoint.h5 ]]; then
      resume=(--resume)
      echo "resume.bash: $checkpoint_dir holds a checkpoint (an earlier job's: $(sb_set_aside "$base"));" \
        "attempt $attempt resumes from it" >&2
    fi
    sb_launch sb-train "${args[@]}" "${resume[@]}" --mllog "$base.mllog" --out "$out" && rc=0 || rc=$?
    if [[ $rc -eq 0 || $rc -eq 2 ]]; then return "$rc"; fi
    if ((attempt > restarts)); then
      echo "resume.bash: sb-train attempt $attempt ended with exit status $rc; no restarts left (SB_RESTARTS=$restarts)" >&2
      return "$rc"
    fi
    echo "resume.bash: sb-train attempt $attempt ended with exit status $rc ($(sb_set_aside "$base"));" \
      "attempt $((attempt + 1)) of at most $((restarts + 1)) starts in $delay s" >&2
    sleep "$delay"
    attempt=$((attempt + 1))
  done
}
