#!/usr/bin/env bash
# Prints the path of a librdkafka 2.15 source tree with its library built, for the tests and tools that drive
# librdkafka's share consumer and its own test suite (test/integration/librdkafka-share.test.ts,
# bench/kafka-suite/run.ts). The tree comes from the npm registry: @confluentinc/kafka-javascript ships librdkafka's
# whole source (tests included) in deps/librdkafka. It is built once, with Debian's build packages (gcc, make,
# libssl-dev, zlib1g-dev), into DIR (default: ~/.cache/onelog/librdkafka-2.15.1); never kept in this repository.
#
#   bash test/compat/librdkafka.sh [DIR] [--tests]     (--tests: build the test runner too)
set -euo pipefail
PACKAGE="@confluentinc/kafka-javascript@1.10.1" # ships librdkafka 2.15.1
dir="${XDG_CACHE_HOME:-$HOME/.cache}/onelog/librdkafka-2.15.1"
tests=false
for arg in "$@"; do
  case "$arg" in
    --tests) tests=true ;;
    *) dir="$arg" ;;
  esac
done
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9 # one fetch and build at a time
if [ ! -f "$dir/configure" ]; then
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$PACKAGE" >/dev/null && tar xzf ./*.tgz)
  rm -rf "$dir"
  mv "$tmp/package/deps/librdkafka" "$dir"
  rm -rf "$tmp"
fi
if [ ! -f "$dir/src/librdkafka.so.1" ]; then
  (cd "$dir" && ./configure --disable-gssapi --disable-curl >&2 && make -j2 libs >&2)
fi
if [ "$tests" = true ] && [ ! -x "$dir/tests/test-runner" ]; then
  make -C "$dir/tests" -j2 build >&2
fi
echo "$dir"
