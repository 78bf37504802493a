#!/usr/bin/env bash
# Reads `go test -v` output on stdin, passes it through, and ends with one line
# counting top-level test results: "N passed, N failed, N skipped". Exits with
# go test's failure: non-zero when any package failed.
set -uo pipefail
pass=0 fail=0 skip=0 pkgfail=0
while IFS= read -r line; do
	printf '%s\n' "$line"
	case "$line" in
	"--- PASS: "*) pass=$((pass + 1)) ;;
	"--- FAIL: "*) fail=$((fail + 1)) ;;
	"--- SKIP: "*) skip=$((skip + 1)) ;;
	"FAIL"*) pkgfail=1 ;;
	esac
done
echo
echo "tests: $pass passed, $fail failed, $skip skipped"
if [ "$fail" -gt 0 ] || [ "$pkgfail" -gt 0 ]; then
	exit 1
fi
