#!/usr/bin/env bash
# What one chat turn fetches from memory, counted exactly: runs
# gateway's BenchmarkChatTurnCold (the caches emptied before every turn;
# "floor": the floor proxy's BenchmarkProxyTurnCold, the same non-streamed
# turn through loadtest/floorproxy) under valgrind's cachegrind twice, with N and 3N turns, and prints the
# difference per turn (what building the server and the first turns cost
# cancels out): instructions executed (Ir), and the instruction and data
# cache lines the turn had to fetch from memory (ILmr; DLmr + DLmw), on a
# simulated 32 KiB L1i, 48 KiB L1d and 4 MiB last-level cache. Unlike a
# timing, the counts do not depend on the machine's speed, but the Go
# runtime's own scheduling (sysmon, findRunnable: what runs depends on how
# much wall time passed) moves the totals by 2-3% from run to run on a busy
# machine. The instructions and instruction lines outside package runtime,
# printed apart, stay within 0.1% (data lines less so: the runtime's data
# shares their cache): compare those between two commits, and run both
# side by side.
#
#   testing/cachegrind-turn.sh [nonstream|stream|floor|nonstream-waited|floor-waited] [N] [TOP]
#
# The -waited cases empty the caches a second time while the upstream
# answers, as the load test's one-at-a-time turns find them after their
# wait (BenchmarkChatTurnColdWaited, BenchmarkProxyTurnColdWaited): what a
# turn uses both before and after the call counts twice, as it costs live.
#
# TOP (default 30) is how many functions to list, by ILmr per turn.
# Needs valgrind (Debian's package).
set -euo pipefail
case="${1:-nonstream}" n="${2:-50}" top="${3:-30}"
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
# KEEP=1 keeps the binary and cachegrind's files (for cg_annotate), in $dir.
if [ -n "${KEEP:-}" ]; then echo "$dir"; else trap 'rm -rf "$dir"' EXIT; fi
pkg=./gateway bench="^BenchmarkChatTurnCold\$/^$case/" name="BenchmarkChatTurnCold/$case/session"
case "$case" in
floor) pkg=./loadtest/floorproxy bench='^BenchmarkProxyTurnCold$' name=BenchmarkProxyTurnCold ;;
floor-waited) pkg=./loadtest/floorproxy bench='^BenchmarkProxyTurnColdWaited$' name=BenchmarkProxyTurnColdWaited ;;
nonstream-waited) bench='^BenchmarkChatTurnColdWaited$' name=BenchmarkChatTurnColdWaited ;;
esac
go test -c -o "$dir/turn.test" "$pkg"
for k in 1 3; do
	# asyncpreemptoff: valgrind does not follow the signals the Go
	# scheduler preempts goroutines with. GOMAXPROCS=1: no thread spins
	# looking for work, and GOGC=off: no collection, whose share of the
	# turns depends on timing; both would vary the counts from run to
	# run (a turn's collection cost follows the bytes it allocates, which
	# -benchmem reports exactly). memprofilerate=0: no allocation is
	# sampled for the heap profile, at random, with a stack walk.
	# cpu.rdtscp=off: valgrind reports RDTSCP to the program whether the
	# machine has it or not, and cannot run it where it does not.
	GOGC=off GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1,memprofilerate=0,cpu.rdtscp=off valgrind --tool=cachegrind --cache-sim=yes \
		--I1=32768,8,64 --D1=49152,12,64 --LL=4194304,16,64 \
		--cachegrind-out-file="$dir/cg-$k.out" "$dir/turn.test" -test.run '^$' \
		-test.bench "$bench" -test.benchtime "$((k * n))x" >"$dir/log-$k" 2>&1 ||
		{ cat "$dir/log-$k" >&2; exit 1; }
	# One line per function: Ir ILmr DLmr DLmw name (the benchmark
	# loop and its eviction of the caches, left out).
	cg_annotate --show=Ir,ILmr,DLmr,DLmw --threshold=0 --auto=no "$dir/cg-$k.out" |
		awk '/^ *[0-9,]+ / && !/PROGRAM TOTALS/ && !/EvictCaches|TurnCold/ {
			gsub(/\([^)]*\)/, ""); for (i = 1; i <= 4; i++) { if ($i == ".") $i = 0; gsub(",", "", $i) }
			name = $5; sub(/^[^:]*:/, "", name); print $1, $2, $3, $4, name }' >"$dir/fn-$k"
done
awk -v n="$n" -v top="$top" -v which="$name" '
	FNR == 1 { k++ }
	{ key = $5; for (i = 1; i <= 4; i++) v[key, i] += (k == 1 ? -$i : $i); names[key] = 1 }
	END {
		for (f in names) { for (i = 1; i <= 4; i++) t[i] += v[f, i] }
		d = 2 * n
		printf "%s, per turn (%d turns): %.0f instructions, %.0f instruction lines and %.0f data lines from memory\n", which, d, t[1] / d, t[2] / d, (t[3] + t[4]) / d
		for (f in names) if (f !~ /^runtime\./) { for (i = 1; i <= 4; i++) o[i] += v[f, i] }
		printf "outside package runtime: %.0f instructions, %.0f instruction lines and %.0f data lines\n", o[1] / d, o[2] / d, (o[3] + o[4]) / d
		printf "\n%8s %8s %8s  %s\n", "ILmr", "DLm", "Ir", "package, then function (per turn)"
		for (f in names) {
			pkg = f; sub(/\.\..*$/, "", pkg); sub(/\.[^.\/]*$/, "", pkg)
			for (i = 1; i <= 4; i++) pv[pkg, i] += v[f, i]; pkgs[pkg] = 1
		}
		for (p in pkgs) printf "%8.1f %8.1f %8.0f  %s\n", pv[p, 2] / d, (pv[p, 3] + pv[p, 4]) / d, pv[p, 1] / d, p | "sort -k1,1nr | head -15"
		close("sort -k1,1nr | head -15")
		printf "\n"
		for (f in names) printf "%8.1f %8.1f %8.0f  %s\n", v[f, 2] / d, (v[f, 3] + v[f, 4]) / d, v[f, 1] / d, f | "sort -k1,1nr | head -" top
	}' "$dir/fn-1" "$dir/fn-3"
