# Helpers for the end-to-end scripts: each check prints "PASS name" or "FAIL name: why".
BIN=${1:-build/bin}
MPIRUN=${SB_MPIRUN:-mpirun --oversubscribe}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sb-e2e.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

# check NAME CONDITION-COMMAND... : PASS when the command succeeds.
check() {
  local name=$1; shift
  if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}
