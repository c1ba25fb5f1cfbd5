#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds examples/consumer against it
# twice, with find_package(Tessera) and with pkg-config, running each (ctest
# install_consumer). Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
# No private header may leak: only the public tree is installed.
if [ -e "$tmp/prefix/include/tsr/core" ] || find "$tmp/prefix/include" -path '*detail*' | grep -q .; then
  echo "check_install: private headers in the installed tree" >&2
  exit 1
fi
cmake -S "$src/examples/consumer" -B "$tmp/cmake-build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
"$tmp/cmake-build/consumer"
pc_dir="$(dirname "$(find "$tmp/prefix" -name tsr.pc | head -1)")"
export PKG_CONFIG_PATH="$pc_dir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# shellcheck disable=SC2046
g++ -std=c++20 -O1 "$src/examples/consumer/main.cpp" -o "$tmp/consumer-pc" \
  $(pkg-config --cflags --libs tsr)
"$tmp/consumer-pc"
echo "check_install: find_package and pkg-config consumers built and ran"
