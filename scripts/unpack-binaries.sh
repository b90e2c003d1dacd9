#!/usr/bin/env bash
# On the GPU machine: the binaries that `make gpu-carry` gzipped into
# .carry/bin, unpacked into bin/ where the h200-*.sh scripts expect them.
set -euo pipefail
src=${1:-.carry/bin}
[ -d "$src" ] || { echo "$0: no $src (run make gpu-carry where the tree is built)" >&2; exit 2; }
mkdir -p bin
for f in "$src"/*.gz; do
  gunzip -c "$f" > "bin/$(basename "$f" .gz)"
  chmod +x "bin/$(basename "$f" .gz)"
done
ls -l bin
