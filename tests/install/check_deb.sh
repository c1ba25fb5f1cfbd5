#!/usr/bin/env bash
# Builds the Debian packages (cpack), lints them (no lintian error), installs them into
# this machine with apt-get, builds and runs examples/consumer against the system
# install, and purges them again (ctest debian_packages). Needs root for apt-get; as
# another user it exits 77 (ctest: skipped). Usage: check_deb.sh BUILD SOURCE
set -euo pipefail
build="$1"
src="$2"
tmp="$(mktemp -d)"
cleanup() {
  if [ -n "${installed:-}" ]; then
    apt-get purge -y -q tessera-dev tessera >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
(cd "$tmp" && cpack --config "$build/CPackConfig.cmake" -B "$tmp/out" >/dev/null)
runtime="$(ls "$tmp"/out/tessera_*_amd64.deb)"
dev="$(ls "$tmp"/out/tessera-dev_*_amd64.deb)"
ls -l "$runtime" "$dev" | awk '{print "check_deb: " $5 " bytes " $NF}'
if command -v lintian >/dev/null 2>&1; then
  # Errors fail; warnings are printed (no manual page for tsr-train, a package name
  # that is not the soname's: tessera bundles the trainer with the library).
  lintian --tag-display-limit 0 "$runtime" "$dev" | tee "$tmp/lintian.txt" || true
  if grep -q '^E:' "$tmp/lintian.txt"; then
    echo "check_deb: lintian reports errors" >&2
    exit 1
  fi
else
  echo "check_deb: lintian missing (scripts/setup.sh installs it)" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "check_deb: not root, so the packages are not installed (skipped)"
  exit 77
fi
if dpkg-query -W -f='${Status}' tessera 2>/dev/null | grep -q "install ok installed"; then
  echo "check_deb: a tessera package is already installed; not replacing it" >&2
  exit 1
fi
installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$runtime" "$dev" >/dev/null
test -x /usr/bin/tsr-train
cmake -S "$src/examples/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/consumer" >/dev/null
libs="$(ldd "$tmp/consumer/consumer")"  # read whole: `ldd | grep -q` fails under pipefail
grep -Eq "libtsr.so.[0-9.]+ => /(usr/)?lib/" <<<"$libs"
"$tmp/consumer/consumer"
# shellcheck disable=SC2046
g++ -std=c++20 -O1 "$src/examples/consumer/main.cpp" -o "$tmp/consumer-pc" $(pkg-config --cflags --libs tsr)
"$tmp/consumer-pc"
echo "check_deb: packages built, lint-clean, installed, consumer built and ran against /usr"
