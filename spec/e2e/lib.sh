# shellcheck shell=bash disable=SC2034
# Shared settings of the e2e tier; sourced by build.sh, cluster.sh, smoke.sh.
# Everything built lives outside the repository, under
#   ${KINFORMER_E2E_CACHE:-~/.cache/kinformer-e2e}/<k8s-version>/
# with bin/ (binaries), go/ (GOPATH and module cache), gocache/ (build cache)
# and src/ (generated wrapper modules), so a fresh machine is really cold and
# a warm one reuses everything.

E2E_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
E2E_REPO=$(cd "$E2E_HERE/../.." && pwd)
# shellcheck source=versions.env
. "$E2E_HERE/versions.env"
K8S_VERSION=${E2E_K8S_VERSION:-$K8S_VERSION}
E2E_CACHE=${KINFORMER_E2E_CACHE:-$HOME/.cache/kinformer-e2e}/$K8S_VERSION
E2E_BIN=$E2E_CACHE/bin
# The controllers kube-controller-manager runs in cluster.sh (unless
# KINFORMER_E2E_CONTROLLERS says otherwise), by the names kinformer-sim
# --controllers takes too: the ones kinformer.sim mirrors, without a
# scheduler or kubelets (Pods stay Pending).
E2E_CONTROLLERS=garbagecollector,namespace,serviceaccount,deployment,replicaset,statefulset,daemonset,job,cronjob

# The Go environment of every build: caches in the cache dir, no toolchain
# download, static binaries (as the Kubernetes release builds them).
e2e_goenv() {
  export GOPATH=$E2E_CACHE/go
  export GOMODCACHE=$E2E_CACHE/go/pkg/mod
  export GOCACHE=$E2E_CACHE/gocache
  export GOTOOLCHAIN=local
  export GOFLAGS="-buildvcs=false -modcacherw"
  export CGO_ENABLED=0
}

# Installs the Debian packages named, only those whose command is missing.
# Usage: e2e_need cmd:package ...
e2e_need() {
  local missing=() spec
  for spec in "$@"; do
    command -v "${spec%%:*}" >/dev/null 2>&1 || missing+=("${spec#*:}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "e2e: installing ${missing[*]}" >&2
  # Waits for the package manager's lock instead of failing.
  "$E2E_REPO/tools/apt-install.sh" "${missing[@]}" >&2
}

# e2e_lock_build: takes the build cache's lock ($E2E_CACHE/.lock, fd 8) for
# the rest of the calling script, waiting while another build holds it, so
# two builds never write the same cache at once (the second then finds the
# binaries fresh and reuses them).
e2e_lock_build() {
  mkdir -p "$E2E_CACHE"
  exec 8>>"$E2E_CACHE/.lock"
  if ! flock -n -x 8; then
    echo "e2e: another build is writing $E2E_CACHE; waiting for its lock ($E2E_CACHE/.lock)" >&2
    flock -x 8
  fi
}

# e2e_wait_build: returns once no build is writing the cache (takes and drops
# the lock shared), so a cluster never starts from half-written binaries.
e2e_wait_build() {
  mkdir -p "$E2E_CACHE"
  if ! flock -n -s "$E2E_CACHE/.lock" true; then
    echo "e2e: a build is writing $E2E_CACHE; waiting for it to finish" >&2
    flock -s "$E2E_CACHE/.lock" true
  fi
}
