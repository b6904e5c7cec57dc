#!/usr/bin/env bash
# The GPU check's scripts without a GPU: gpu-check refuses bad input, the bundle holds every
# program gpu-check runs, and, on a CUDA build where a private mount namespace can be made
# (root), the bundle's programs run with this machine's Open MPI, PMIx and every library the
# bundle carries hidden, as on a bare CUDA machine: MPI, HDF5 and oneDNN from the bundle alone.
# Run by tests/run with the build's bin folder; prints PASS/FAIL lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/e2e/helpers.bash
quiet() { "$@" >/dev/null 2>&1; }

for script in scripts/gpu-check scripts/gpu-bundle scripts/gpu-bundle-env.bash; do
  check "$script parses" bash -n "$script"
done

scripts/gpu-check --prebuilt "$WORK/missing.tar.gz" "$WORK/out" >"$WORK/missing.txt" 2>&1
check "gpu-check --prebuilt of a missing file exits 2" test $? -eq 2
check "... with one line naming it" \
  bash -c "[[ \$(wc -l <'$WORK/missing.txt') -eq 1 ]] && grep -q 'missing.tar.gz' '$WORK/missing.txt'"

GPU_CHECK_STAGES="unit bogus" scripts/gpu-check "$WORK/out" >"$WORK/stages.txt" 2>&1
check "gpu-check refuses an unknown stage with exit 2" test $? -eq 2
GPU_CHECK_SECONDS=soon scripts/gpu-check "$WORK/out" >"$WORK/budget.txt" 2>&1
check "gpu-check refuses a budget that is not whole seconds with exit 2" test $? -eq 2

# Every program gpu-check runs from the build must be in the bundle.
run_programs=$(grep -o '\$BIN/sb-[a-z-]*' scripts/gpu-check | sed 's/\$BIN\///' | sort -u)
bundled=$(sed -n 's/^PROGRAMS=(\(.*\))$/\1/p' scripts/gpu-bundle | tr ' ' '\n' | sort -u)
check "the bundle holds every program gpu-check runs ($(echo $run_programs))" \
  test -z "$(comm -23 <(echo "$run_programs") <(echo "$bundled"))"

if [[ $(ldd "$BIN/sb-train" 2>/dev/null) != *libcudart* ]]; then
  echo "SKIP bundle run: not a CUDA build"
  exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! unshare -m true 2>/dev/null; then
  echo "SKIP bundle run: no private mount namespace here (needs root)"
  exit 0
fi

BUILD=$(dirname "$BIN") scripts/gpu-bundle --no-make "$WORK/bundle.tar.gz" >"$WORK/bundle.txt" 2>&1
check "gpu-bundle packs the build" test $? -eq 0
check "... into a tarball under 40 MB" test "$(stat -c %s "$WORK/bundle.tar.gz" 2>/dev/null || echo 0)" -lt 40000000
mkdir -p "$WORK/listing" && tar -xzf "$WORK/bundle.tar.gz" -C "$WORK/listing"
check "... with Open MPI's launcher and its shared-memory transport" \
  test -x "$WORK/listing/openmpi/bin/mpirun" -a -n "$(find "$WORK/listing/openmpi" -name 'mca_btl_vader.so')"
check "... and without glibc, the C++ runtime or CUDA's libraries" \
  test -z "$(ls "$WORK/listing/lib" | grep -E '^(libc|libm|libstdc\+\+|libcudart|libcudnn|libnccl|libcublas)\.')"

# Inside the namespace: the system's copies of what the bundle carries are hidden (empty folders
# over Open MPI's and PMIx's trees, an unreadable file over each library), then the bundle's
# programs run: two ranks under its mpirun, HDF5 output, a oneDNN training step.
cat >"$WORK/inside.sh" <<EOF
set -uo pipefail
mkdir -p "$WORK/empty"
ompi_pkglibdir=\$(ompi_info --path pkglibdir --parsable | awk -F: '{ print \$3 }')
ompi_pkgdatadir=\$(ompi_info --path pkgdatadir --parsable | awk -F: '{ print \$3 }')
pmix_prefix=\$(dirname "\$(dirname "\$(readlink -f "\$(ldd "\$ompi_pkglibdir"/mca_pmix_*.so | awk '\$1 == "libpmix.so.2" && !found { print \$3; found = 1 }')")")")
for dir in "\$ompi_pkglibdir" "\$ompi_pkgdatadir" "\$pmix_prefix"; do mount --bind "$WORK/empty" "\$dir"; done
for tool in orterun orted; do mount --bind /dev/null "\$(readlink -f "\$(command -v \$tool)")"; done
for library in "$WORK"/listing/lib/*; do
  for system_copy in /usr/lib/x86_64-linux-gnu/\$(basename "\$library") /lib/x86_64-linux-gnu/\$(basename "\$library"); do
    [[ -e \$system_copy ]] && mount --bind /dev/null "\$(readlink -f "\$system_copy")"
  done
done
. scripts/gpu-bundle-env.bash
use_gpu_bundle "$WORK/bundle.tar.gz" "$WORK/unpacked" || exit 3
mpirun --oversubscribe -np 2 "$WORK/unpacked/bin/sb-allreduce" --impl ring,mpi -b 8 -e 64K -f 8 -n 2 -w 1 \
  --out "$WORK/allreduce.h5" >"$WORK/allreduce.txt" 2>&1 || exit 4
"$WORK/unpacked/bin/sb-train" --model resnet20 --data synthetic:32 --steps 2 --batch 4 --threads 1 --print-every 0 \
  --out "$WORK/train.h5" >"$WORK/train.txt" 2>&1 || exit 5
# gpu-check itself from the bundle, its test stages (which skip their GPU cases here), with an
# nvidia-smi that answers as a driver would.
mkdir -p "$WORK/fakebin"
printf '%s\n' '#!/bin/sh' 'if [ "\$1" = -L ]; then echo "GPU 0: none (test stub)"; else echo "none (test stub), 0, 0 MiB"; fi' \
  >"$WORK/fakebin/nvidia-smi"
chmod +x "$WORK/fakebin/nvidia-smi"
TMPDIR="$WORK" PATH="$WORK/fakebin:\$PATH" GPU_CHECK_STAGES="unit mpi" \
  scripts/gpu-check --prebuilt "$WORK/bundle.tar.gz" "$WORK/gpu-check" >"$WORK/gpu-check.txt" 2>&1 || exit 6
# Its measuring stages, which need the GPU that is not there: each says it failed.
TMPDIR="$WORK" PATH="$WORK/fakebin:\$PATH" GPU_CHECK_STAGES="micro allreduce train" GPU_CHECK_STEPS=2 \
  scripts/gpu-check --prebuilt "$WORK/bundle.tar.gz" "$WORK/gpu-measure" >"$WORK/gpu-measure.txt" 2>&1
echo \$? >"$WORK/gpu-measure.rc"
EOF
timeout 300 unshare -m bash "$WORK/inside.sh" >"$WORK/inside.txt" 2>&1
rc=$?
check "with this machine's MPI, PMIx and bundled libraries hidden, the bundle's programs run (rc $rc)" test $rc -eq 0
check "... two ranks under the bundle's mpirun, results written" quiet h5ls "$WORK/allreduce.h5"
check "... a oneDNN training run, results written" quiet h5ls "$WORK/train.h5"
check "... and gpu-check --prebuilt's test stages pass, their GPU cases skipped" \
  bash -c "grep -qE '^unit tests .* [1-9][0-9]* passed, 0 failed, [1-9][0-9]* skipped' '$WORK/gpu-check/summary.txt' &&
           grep -qE '^allreduce, device .* [1-9][0-9]* passed, 0 failed' '$WORK/gpu-check/summary.txt'"
check "... and its measuring stages, without a GPU, exit 1 with a failed row each" \
  bash -c "[[ \$(cat '$WORK/gpu-measure.rc' 2>/dev/null) == 1 ]] &&
           [[ \$(grep -cE '^(micro  .*no GPU kernel|allreduce np1  .*FAILED|compress on GPU np1  .*FAILED|resnet50 train .*FAILED)' '$WORK/gpu-measure/summary.txt') -eq 11 ]]"
check "... without PMIx or Open MPI complaining of missing components or help files" \
  bash -c "! grep -qiE 'help file|component .* not found|unable to open' '$WORK/inside.txt' '$WORK/allreduce.txt' '$WORK/train.txt'"
[[ $rc -eq 0 ]] || tail -20 "$WORK/inside.txt" "$WORK/allreduce.txt" "$WORK/train.txt" "$WORK/gpu-check.txt" 2>/dev/null
