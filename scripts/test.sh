#!/usr/bin/env bash
# The test command: formatting check, compile with -Werror, all CPU tests (GPU tests are tagged "gpu"
# and run on a GPU machine by scripts/gpu-tests.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/fetch-test-data.sh
exec mvn -B -ntp verify "$@"
