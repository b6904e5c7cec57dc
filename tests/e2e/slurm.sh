# A real Slurm: munged, slurmctld and slurmd for a one-node cluster on this machine, configured in
# a temporary folder (nothing of the system's Slurm or munge is touched), a small campaign
# submitted with scripts/campaign (sb-allreduce at 1 and 2 ranks, a job array each, and the
# dependent report job), then the merged file and the plots. The services are stopped by their
# PIDs at the end. Skips, with the reason, only where the services cannot start here.
source "$(dirname "$0")/helpers.bash"
skip() { echo "SKIP slurm: $1"; exit 0; }

for tool in munged slurmctld slurmd sbatch sinfo; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/install-deps installs slurmctld, slurmd and munge)"
done
[[ $(id -u) -eq 0 ]] || skip "slurmd must run as root to start jobs"

cluster=$WORK/slurm
mkdir -p "$cluster/state" "$cluster/spool"
stop_services() {
  local pidfile pid
  for pidfile in "$cluster/slurmd.pid" "$cluster/slurmctld.pid" "$cluster/munged.pid"; do
    [[ -s $pidfile ]] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
}
trap 'stop_services; rm -rf "$WORK"' EXIT

# Two free TCP ports for slurmctld and slurmd.
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 20000))
    (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null || { echo $port; return; }
  done
}
ctld_port=$(free_port)
slurmd_port=$(free_port)
[[ $slurmd_port -ne $ctld_port ]] || slurmd_port=$((ctld_port + 1))

head -c 1024 /dev/urandom >"$cluster/munge.key"
chmod 600 "$cluster/munge.key"
munged --force --socket="$cluster/munge.sock" --key-file="$cluster/munge.key" --pid-file="$cluster/munged.pid" \
  --log-file="$cluster/munged.log" --seed-file="$cluster/munged.seed" 2>>"$cluster/munged.log" ||
  skip "munged did not start: $(tail -n 2 "$cluster/munged.log" | tr '\n' ' ')"

host=$(hostname -s)
memory=$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)
cat >"$cluster/slurm.conf" <<CONF
ClusterName=sbtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$cluster/munge.sock
CredType=cred/munge
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
StateSaveLocation=$cluster/state
SlurmdSpoolDir=$cluster/spool
SlurmctldPidFile=$cluster/slurmctld.pid
SlurmdPidFile=$cluster/slurmd.pid
SlurmctldLogFile=$cluster/slurmctld.log
SlurmdLogFile=$cluster/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$memory State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$cluster/slurm.conf
slurmctld -f "$SLURM_CONF" 2>>"$cluster/slurmctld.log" || skip "slurmctld did not start: $(tail -n 2 "$cluster/slurmctld.log" | tr '\n' ' ')"
slurmd -f "$SLURM_CONF" 2>>"$cluster/slurmd.log" || skip "slurmd did not start: $(tail -n 2 "$cluster/slurmd.log" | tr '\n' ' ')"
for _ in $(seq 60); do
  [[ $(sinfo -h -o %t 2>/dev/null) == idle ]] && break
  sleep 0.5
done
[[ $(sinfo -h -o %t 2>/dev/null) == idle ]] ||
  skip "the one-node cluster did not come up: $(tail -n 3 "$cluster/slurmctld.log" "$cluster/slurmd.log" | tr '\n' ' ')"
pass "a one-node Slurm cluster is up (slurmctld port $ctld_port)"

campaign=$WORK/campaign
timeout 300 scripts/campaign --nodes 1 --ntasks-per-node 1,2 --programs allreduce --repeats 2 \
  --args allreduce='-b 1K -e 64K -f 4 -n 3 -w 1 --impl mpi,ring' --label interconnect=loopback \
  --time 00:05:00 --out "$campaign" --wait >"$WORK/campaign.out" 2>&1
rc=$?
check "scripts/campaign submits, waits for the report and exits 0" test $rc -eq 0
[[ $rc -eq 0 ]] || { cat "$WORK/campaign.out"; tail -n 20 "$campaign"/logs/* "$cluster/slurmctld.log"; }
check "it submitted one job array per scale" test "$(grep -c 'submitted allreduce' "$WORK/campaign.out")" -eq 2
results=$(ls "$campaign/results"/*.h5 2>/dev/null | wc -l)
check "four runs wrote results (two scales, two repeats)" test "$results" -eq 4
check "runs record their Slurm job" bash -c "h5dump -a /slurm_job_id $(ls "$campaign/results"/allreduce-n1-np2-*.h5 | head -1) | grep -q 'DATA'"
check "ranks were started by srun --mpi=pmix" grep -q 'started by srun' "$(ls "$campaign/logs"/sb-allreduce-*.out | head -1)"
check "array task logs are named %x-%A_%a.out" bash -c "ls '$campaign/logs' | grep -qE '^sb-allreduce-[0-9]+_2\.out$'"
check "the merged file holds both scales" bash -c "h5ls -r '$campaign/campaign.h5' | grep -q '^/runs/sb-allreduce/ranks-1/' &&
  h5ls -r '$campaign/campaign.h5' | grep -q '^/runs/sb-allreduce/ranks-2/interconnect=loopback/'"
check "the report was written after the runs" test -s "$campaign/report/index.html"
check "the 2-rank busbw plot is a PNG" bash -c "head -c 4 '$campaign/report/allreduce-busbw-np2.png' | grep -q PNG"
check "the report's summary names all four runs" test "$(grep -c '^# run ' "$campaign/report/summary.txt")" -eq 4

# --elastic: the training job is submitted with --no-kill and SB_ELASTIC=1, which resume.bash
# takes up with the job's node list from the real scontrol (the shrink itself: tests/e2e/elastic.sh).
timeout 300 scripts/campaign --nodes 1 --ntasks-per-node 2 --programs train --elastic \
  --args train='--threads 1 --epochs 1 --steps 3 --print-every 0' --time 00:05:00 --out "$WORK/elastic" \
  --wait >"$WORK/elastic.out" 2>&1
rc=$?
train_log=$(ls "$WORK/elastic/logs"/sb-train-*.out 2>/dev/null | head -1)
check "campaign --elastic: the training job runs to the end (exit status $rc)" \
  test $rc -eq 0 -a "$(ls "$WORK/elastic/results"/train-n1-np2-*.h5 2>/dev/null | wc -l)" -eq 1
[[ $rc -eq 0 ]] || { cat "$WORK/elastic.out"; tail -n 20 "$WORK/elastic/logs"/* "$cluster/slurmctld.log"; }
check "and resume.bash knows the job's node list from Slurm" \
  grep -q "^resume.bash: SB_ELASTIC=1: after a fault the job goes on with those of its 1 nodes ($host)" \
  "${train_log:-/dev/null}"

# A rank lost in an elastic job of the real cluster: the job probes its node with a real srun step
# and sinfo, finds it still answering, and goes on with it.
lost=$WORK/lost
mkdir -p "$lost"
job=$(SB_ROOT=$PWD SB_BIN=$(cd "$BIN" && pwd) SB_RESULTS=$lost/results SB_CHECKPOINTS=$lost/checkpoints \
  SB_ELASTIC=1 SB_RESTARTS=1 SB_RESTART_DELAY=1 OMP_NUM_THREADS=1 \
  sbatch --parsable --no-kill --nodes 1 --ntasks-per-node 2 --time 00:05:00 --output "$lost/job.out" \
  scripts/slurm/train.sbatch --threads 1 --epochs 1 --steps 30 --print-every 0 --checkpoint-steps 10 --timeout 60)
checkpoint=$lost/checkpoints/train-n1-np2-${job}_1/checkpoint.h5
for _ in $(seq 600); do [[ -e $checkpoint ]] && break; sleep 0.1; done
killed=
for p in $(pgrep -f "/sb-train .*--checkpoint $(dirname "$checkpoint")"); do  # rank 1: Slurm's task 1
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx SLURM_PROCID=1 && killed=$p
done
[[ -n $killed ]] && kill -KILL "$killed"
for _ in $(seq 1200); do [[ -z $(squeue -h -j "$job" 2>/dev/null) ]] && break; sleep 0.1; done
check "elastic job, rank 1 (pid ${killed:-not found}) killed: the job probes its node, which still answers" \
  grep -q '^resume.bash: all 1 nodes of attempt 1 still answer; the next attempt keeps them' "$lost/job.out"
check "and attempt 2 resumes and finishes" \
  test "$(h5_status "$lost/results/train-n1-np2-${job}_1.h5")" = complete
[[ -n $killed ]] || tail -n 30 "$lost/job.out"

# A failing job: the report job is never run (afterok), and --wait says so.
timeout 120 scripts/campaign --nodes 1 --programs allreduce --args allreduce='--impl nosuch' --out "$WORK/failing" \
  --wait >"$WORK/failing.out" 2>&1
check "a campaign whose job fails exits non-zero" test $? -ne 0
check "and writes no report" test ! -e "$WORK/failing/report/index.html"
