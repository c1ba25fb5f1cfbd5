#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds examples/consumer against it
# three ways, running each (ctest install_consumer): find_package(Tessera) with the
# shared and with the static library, and pkg-config. Usage: check_install.sh BUILD SOURCE
set -euo pipefail
build="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
# No private header may leak: only the public tree is installed.
if [ -e "$tmp/prefix/include/tsr/core" ] || [ -n "$(find "$tmp/prefix/include" -path '*detail*' -print -quit)" ]; then
  echo "check_install: private headers in the installed tree" >&2
  exit 1
fi
lib="$(dirname "$(find "$tmp/prefix" -name 'libtsr.so.*.*.*' -print -quit)")"
for kind in shared static; do
  static=OFF
  [ "$kind" = static ] && static=ON
  cmake -S "$src/examples/consumer" -B "$tmp/build-$kind" -G Ninja -DCONSUMER_STATIC=$static \
    -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$tmp/build-$kind" >/dev/null
  "$tmp/build-$kind/consumer"
done
# The shared build really loads the installed libtsr.so; the static one does not. (ldd's
# output is read whole: with pipefail, `ldd | grep -q` fails when grep exits first.)
shared_libs="$(ldd "$tmp/build-shared/consumer")"
static_libs="$(ldd "$tmp/build-static/consumer")"
if ! grep -q "$lib/libtsr.so" <<<"$shared_libs" || grep -q libtsr <<<"$static_libs"; then
  echo "check_install: wrong libtsr linked:$shared_libs / $static_libs" >&2
  exit 1
fi
export PKG_CONFIG_PATH="$lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# shellcheck disable=SC2046
g++ -std=c++20 -O1 "$src/examples/consumer/main.cpp" -o "$tmp/consumer-pc" \
  $(pkg-config --cflags --libs tsr)
LD_LIBRARY_PATH="$lib" "$tmp/consumer-pc"
echo "check_install: find_package (shared, static) and pkg-config consumers built and ran"
