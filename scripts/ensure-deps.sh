#!/bin/sh
# Installs what building and testing rtmem needs, only what is missing.
# Idempotent: a second run installs nothing.
#   ensure-deps.sh [clang]     (clang: also the clang compiler, for CI)
set -eu
need=""
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v cc >/dev/null 2>&1 || need="$need gcc"
command -v make >/dev/null 2>&1 || need="$need make"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
for arg in "$@"; do
    case "$arg" in
    clang) command -v clang >/dev/null 2>&1 || need="$need clang" ;;
    *) echo "ensure-deps: unknown extra '$arg'" >&2; exit 2 ;;
    esac
done
[ -z "$need" ] && exit 0
echo "ensure-deps: installing:$need"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-deps: no apt-get here; please install:$need" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "ensure-deps: not root and no sudo; please install:$need" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $need >/dev/null
