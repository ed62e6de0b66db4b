#!/usr/bin/env bash
# Runs every Go native fuzz target of the module for FUZZTIME each (default
# 10s): `make fuzz` runs them longer (FUZZTIME=2m), `make test` briefly. The
# seed corpus of each target (the attacks of issue 8) also runs as an
# ordinary test in `go test`. A failing input is written by Go under the
# package's testdata/fuzz/ directory: commit it as a regression seed.
set -euo pipefail
cd "$(dirname "$0")/../.."
fuzztime="${FUZZTIME:-10s}"
go=${GO:-go}
found=0
# Targets are found by their declarations, so no test binary is built
# twice just to list them.
while read -r file target; do
	pkg="./$(dirname "$file")"
	found=$((found + 1))
	echo "fuzz: $pkg $target for $fuzztime"
	$go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
done < <(grep -rHoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' . | sed -E 's#^\./##; s#:func (Fuzz[A-Za-z0-9_]*)\($# \1#' | sort)
if [ "$found" -eq 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
echo "fuzz: $found passed, 0 failed"
