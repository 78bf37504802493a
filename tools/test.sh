#!/usr/bin/env bash
# make test: every package's tests, with TF_ACC=1, in two go test processes at
# once: internal/provider (the acceptance tests, most of the time) streams to
# the terminal, and the other packages run beside it into a file that is
# printed after. Each package that needs a cluster starts its own, so at most
# two run at a time. Both logs end up in .test/go-test.log, and
# tools/testsummary.sh counts the results and fails when any package failed.
#
# The test binaries, and everything they start (the CLIs, the providers the
# CLIs start, Helm, the cluster), run with GOGC=200 rather than Go's 100:
# most of the suite's CPU goes to garbage-collected Go processes, most of them
# short-lived CLI runs, and the suite is CPU-bound on 2 cores. Measured on a
# subset of the acceptance tests: 18% less CPU in the test binary and its
# children, the same peak RSS (docs/development/performance.md). The compiler
# keeps its own setting (-exec applies to the test binaries only); a GOGC in
# the environment wins.
#
# Usage: tools/test.sh <go test flags...>
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .test
rest=$(go list ./... | grep -v '/internal/provider$')
exec_env="env GOGC=${GOGC:-200}"
# shellcheck disable=SC2086
TF_ACC=1 go test -exec "$exec_env" "$@" $rest >.test/rest.log 2>&1 &
restPID=$!
TF_ACC=1 go test -exec "$exec_env" "$@" ./internal/provider/ 2>&1 | tee .test/provider.log
wait "$restPID"
cat .test/rest.log
cat .test/rest.log .test/provider.log >.test/go-test.log
tools/testsummary.sh <.test/go-test.log | tail -n 1
exit "${PIPESTATUS[0]}"
