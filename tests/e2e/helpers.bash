# Helpers for the end-to-end scripts: each check prints "PASS name" or "FAIL name: why".
BIN=${1:-build/bin}
MPIRUN=${SB_MPIRUN:-mpirun --oversubscribe}
# For runs meant to fail at once (bad input): Open MPI's launcher otherwise gives the ranks of a
# job that exited non-zero a grace of odls_base_sigkill_timeout (1 s), twice, before it ends the
# job, which was most of such a check's time. Safe here: our programs finalize MPI (a fence) on a
# usage error, so every rank has exited when the launcher acts. The fault tests keep the grace:
# it is the time rank 0 gets to save what finished.
MPIRUN_FAILFAST="env OMPI_MCA_odls_base_sigkill_timeout=0 $MPIRUN"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sb-e2e.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

# check NAME CONDITION-COMMAND... : PASS when the command succeeds.
check() {
  local name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

# check_schema FILE.h5 [NAME...]: every group, dataset and attribute name in the file is documented
# in results/SCHEMA.md (the names given, and MPI/NCCL/UCX environment variables, excepted), and
# every name SCHEMA.md marks `always` on the root group is in the file.
check_schema() {
  local file=$1; shift
  local header undocumented="" name skip
  header=$(h5dump -H "$file" 2>&1)
  for name in $(grep -oE '(ATTRIBUTE|DATASET|GROUP) "[^"]+"' <<<"$header" | sed 's/.*"\(.*\)"/\1/' | sort -u); do
    [[ $name == / || $name == OMPI_MCA_* || $name == NCCL_* || $name == UCX_* || $name == OMP_* ]] && continue
    skip=0
    for s in "$@"; do [[ $name == "$s" ]] && skip=1; done
    [[ $skip -eq 1 ]] && continue
    grep -q "\`$name\`" results/SCHEMA.md || undocumented="$undocumented $name"
  done
  check "every name in the file is in SCHEMA.md${undocumented:+ (missing:$undocumented)}" test -z "$undocumented"
  # And the other way: what SCHEMA.md says is on every file's root is on this one's.
  local missing=""
  for name in $(sed -n '/^## Root group/,/^## [^R]/p' results/SCHEMA.md |
                sed -n 's/^| `\([a-z_0-9]*\)` | [a-z]* | always |.*/\1/p'); do
    grep -qE "(ATTRIBUTE|GROUP) \"$name\"" <<<"$header" || missing="$missing $name"
  done
  check "every name SCHEMA.md puts on every root is there${missing:+ (missing:$missing)}" test -z "$missing"
}

# rank_pid PATTERN RANK: the process matching PATTERN (pgrep -f) whose environment says it is
# that MPI rank (Open MPI's OMPI_COMM_WORLD_RANK), for a test that stops or kills one rank.
rank_pid() {
  local p
  for p in $(pgrep -f "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && { echo "$p"; return; }
  done
}

# wait_until JOB COMMAND...: runs COMMAND every 0.1 s until it succeeds (status 0), the job JOB (a
# pid) has ended (status 1), or 300 s have passed (status 1). A loaded machine (a build beside the
# tests) can take minutes to reach the point a fault test waits for; a job that ends first ends
# the wait at once.
wait_until() {
  local job=$1; shift
  for _ in $(seq 3000); do
    "$@" && return 0
    kill -0 "$job" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# stop_rank_until_end LAUNCHER PATTERN RANK: stops that rank (SIGSTOP, as a hung rank) and waits
# for the job to end on its own; sets stopped_pid (empty if the rank was not found), job_rc and
# job_seconds (from the stop to the end), then lets the stopped process go.
stop_rank_until_end() {
  stopped_pid=$(rank_pid "$2" "$3")
  [[ -n $stopped_pid ]] && kill -STOP "$stopped_pid"
  local start=$SECONDS
  wait "$1"
  job_rc=$?
  job_seconds=$((SECONDS - start))
  [[ -n $stopped_pid ]] && kill -CONT "$stopped_pid" 2>/dev/null
}

# kill_rank0_when LAUNCHER OUTPUT REGEX PATTERN: once OUTPUT has a line matching REGEX (wait_until),
# SIGKILL rank 0 (the process matching PATTERN), as the OOM killer or a launcher or
# scheduler after its grace would: no handler runs, so what is left on disk is rank 0's last
# snapshot. The other ranks are stopped (SIGSTOP) first, so that rank 0, which needs them for
# every measurement, cannot finish the run (and save it whole) between the line and the kill, however
# slow this machine is. Then waits for the job to end. Sets killed_pid (empty when rank 0 was not found).
kill_rank0_when() {
  wait_until "$1" grep -qE "$3" "$2"
  killed_pid=$(rank_pid "$4" 0)
  local p others=()
  for p in $(pgrep -f "$4"); do  # the ranks only: the launcher's command line matches too
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qE '^OMPI_COMM_WORLD_RANK=[1-9]' && others+=("$p")
  done
  [[ ${#others[@]} -gt 0 ]] && kill -STOP "${others[@]}"
  [[ -n $killed_pid ]] && kill -KILL "$killed_pid"
  wait "$1"
  [[ ${#others[@]} -gt 0 ]] && kill -CONT "${others[@]}" 2>/dev/null
  return 0
}

# kill_rank1_after_checkpoint CHECKPOINT LAUNCHER: SIGKILL to rank 1 of the sb-train job writing
# CHECKPOINT (its --checkpoint folder in the command line) once that file is on disk (wait_until):
# a rank lost, so the launcher ends the job. Sets killed (empty when rank 1 was not found).
kill_rank1_after_checkpoint() {
  wait_until "$2" test -e "$1"
  killed=$(rank_pid "/sb-train .*--checkpoint $(dirname "$1")" 1)
  [[ -n $killed ]] && kill -KILL "$killed"
  return 0
}

# h5values FILE DATASET: the dataset's values, one per line, to 17 significant digits.
h5values() { h5dump -m '%.17g' -y -w 0 -d "$2" "$1" | sed -n '/DATA {/,/}/p' | grep -oE -- '-?[0-9.]+(e[-+]?[0-9]+)?|nan'; }

# h5_attr FILE NAME: the attribute NAME (e.g. /train/resumes) of FILE, quotes taken off (empty
# when there is none to read); h5_status FILE: its /status.
h5_attr() { h5dump -a "$2" "$1" 2>/dev/null | sed -n 's/.*(0): \(.*\)/\1/p' | tr -d '"'; }
h5_status() { h5_attr "$1" /status; }
# h5_values FILE DATASET: the dataset's values, one a line (h5dump's "(i):" positions taken off).
h5_values() {
  h5dump -d "$2" "$1" 2>/dev/null | sed -n '/^ *DATA {/,/^ *}/p' | sed 's/([0-9, ]*)://g; s/DATA {//; s/}//' |
    tr ', ' '\n\n' | grep -v '^$'
}
