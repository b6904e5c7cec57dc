# Sourced by every scalebench sbatch template: where things are, and how ranks are started.
#
# Inside a Slurm job, ranks start with `srun --mpi=pmix` when this Slurm has the PMIx plugin, and
# with `mpirun` (which reads the allocation itself) when it has not; SB_LAUNCHER=srun|mpirun
# forces one. Outside Slurm (scripts/campaign --local), SB_LOCAL_NP ranks start with a local
# mpirun. Every rank goes through bind-gpu, which gives each rank of a node its own GPU.
#
# Environment: SB_ROOT (the scalebench checkout; default: where sbatch was run), SB_BIN (the
# programs; default $SB_ROOT/build/bin), SB_RESULTS (where results files go; default
# $PWD/out/campaign/results), SB_GPUS_PER_NODE (0: no GPU binding).
set -euo pipefail

SB_ROOT=${SB_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}
SB_BIN=${SB_BIN:-$SB_ROOT/build/bin}
SB_RESULTS=${SB_RESULTS:-$PWD/out/campaign/results}
SB_GPUS_PER_NODE=${SB_GPUS_PER_NODE:-0}
export SB_GPUS_PER_NODE
mkdir -p "$SB_RESULTS"

# The ranks of this run: the allocation's tasks, or SB_LOCAL_NP outside Slurm.
sb_ranks() {
  if [[ -n ${SB_LOCAL_NP:-} ]]; then echo "$SB_LOCAL_NP"; else echo "${SLURM_NTASKS:?not inside a Slurm job and no SB_LOCAL_NP}"; fi
}

# A results path that names the program, the scale and the job, unique within a campaign:
# <program>-n<nodes>-np<ranks>-<job>_<array task>.h5
sb_results_path() {
  local nodes=${SLURM_JOB_NUM_NODES:-1}
  [[ -n ${SB_LOCAL_NP:-} ]] && nodes=${SB_LOCAL_NODES:-1}
  echo "$SB_RESULTS/$1-n${nodes}-np$(sb_ranks)-${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-local$$}}_${SLURM_ARRAY_TASK_ID:-${SB_REPEAT:-1}}.h5"
}

# sb_launch PROGRAM ARGS...: PROGRAM on every rank. Inside Slurm, SB_LAUNCH_NODES (a comma list
# of the allocation's nodes) and SB_LAUNCH_RANKS narrow the launch to those nodes and that many
# ranks, at most SB_LAUNCH_PER_NODE on each (resume.bash going on without a lost node).
sb_launch() {
  local program=$1
  shift
  local binder="$SB_ROOT/scripts/slurm/bind-gpu"
  if [[ -n ${SB_LOCAL_NP:-} ]]; then
    echo "launch.bash: $SB_LOCAL_NP rank$([[ $SB_LOCAL_NP == 1 ]] || echo s) of $program, started by a local mpirun" >&2
    mpirun --oversubscribe --bind-to none -np "$SB_LOCAL_NP" "$binder" "$SB_BIN/$program" "$@"
    return
  fi
  local launcher=${SB_LAUNCHER:-auto}
  if [[ $launcher == auto ]]; then
    if srun --mpi=list 2>&1 | grep -qw pmix; then launcher=srun; else launcher=mpirun; fi
  fi
  local ranks
  ranks=$(sb_ranks)
  local -a on_srun=() on_mpirun=()
  if [[ -n ${SB_LAUNCH_NODES:-} ]]; then
    local -a nodes
    IFS=, read -r -a nodes <<<"$SB_LAUNCH_NODES"
    ranks=$SB_LAUNCH_RANKS
    on_srun=(--nodelist="$SB_LAUNCH_NODES" --nodes="${#nodes[@]}" --ntasks="$ranks")
    on_mpirun=(--host "$(printf "%s:$SB_LAUNCH_PER_NODE," "${nodes[@]}" | sed 's/,$//')")
  fi
  echo "launch.bash: $ranks rank$([[ $ranks == 1 ]] || echo s) of $program, started by $launcher${SB_LAUNCH_NODES:+ on $SB_LAUNCH_NODES}" >&2
  case $launcher in
    srun) srun --mpi=pmix --kill-on-bad-exit=1 "${on_srun[@]}" "$binder" "$SB_BIN/$program" "$@" ;;
    mpirun) mpirun --bind-to none -np "$ranks" "${on_mpirun[@]}" "$binder" "$SB_BIN/$program" "$@" ;;
    *) echo "launch.bash: SB_LAUNCHER must be srun, mpirun or auto, not '$launcher'" >&2; return 2 ;;
  esac
}
