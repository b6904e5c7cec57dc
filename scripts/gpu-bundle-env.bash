# Sourced by scripts/gpu-check --prebuilt: unpacks a tarball made by scripts/gpu-bundle and sets
# up this shell to run its programs.
#   use_gpu_bundle TARBALL DIR
# Exports PATH (the bundle's mpirun first), OPAL_PREFIX and PMIx's component path (so Open MPI
# and PMIx load their components from the bundle, not from where they were built), and
# LD_LIBRARY_PATH: the bundle's libraries, then the folders holding the CUDA libraries the
# programs still lack (cuBLAS, cuDNN, NCCL: the CUDA toolkit's, or those of PyTorch's pip
# packages). Returns 1, naming what is missing, when a program still cannot load.

# The folder of the first file called $1 under the CUDA toolkit or python3's site-packages.
find_cuda_library() {
  local site root found
  site=$(python3 -c 'import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
  for root in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib $site /usr/lib/x86_64-linux-gnu; do
    [[ -d $root ]] || continue
    found=$(find "$root" -maxdepth 6 -name "$1" \( -type f -o -type l \) 2>/dev/null | head -1)
    [[ -n $found ]] && { dirname "$found"; return 0; }
  done
  return 1
}

# The sonames the programs in $1 cannot resolve with the current LD_LIBRARY_PATH.
unresolved_libraries() { ldd "$1"/* 2>/dev/null | awk '/=> not found/ { print $1 }' | sort -u; }

use_gpu_bundle() {
  local tarball=$1 bundle=$2
  rm -rf "$bundle" && mkdir -p "$bundle" || { echo "gpu-check: cannot create $bundle"; return 1; }
  tar -xzf "$tarball" -C "$bundle" || { echo "gpu-check: cannot unpack $tarball"; return 1; }
  export OPAL_PREFIX=$bundle/openmpi
  export PMIX_MCA_mca_base_component_path=$bundle/pmix/lib/pmix
  export PATH=$bundle/openmpi/bin:$PATH
  export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

  local soname dir added=
  for soname in $(unresolved_libraries "$bundle/bin"); do
    dir=$(find_cuda_library "$soname") || continue
    [[ :$added: == *:$dir:* ]] || added=$added:$dir
  done
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH$added

  # A library still missing, or one older than the build needs (a C library older than the
  # build machine's), stops the check here with its name rather than in the first test.
  local problems
  problems=$(ldd "$bundle"/bin/* 2>&1 | awk '/=> not found/ { print $1 } /version .* not found/' | sort -u)
  if [[ -n $problems ]]; then
    echo "gpu-check: the prebuilt programs cannot load here:"
    echo "$problems"
    return 1
  fi
  if [[ -n $added ]]; then echo "gpu-check: CUDA libraries from ${added#:}"; fi
}
