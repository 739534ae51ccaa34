#!/usr/bin/env bash
# Where a turn's time goes in the live processes, agentgate beside the
# floor proxy: runs the load test's non-streamed pass-through (in-memory
# sessions, one turn at a time for most of the run) with both servers
# built with their symbols, samples each server's CPU with perf (kernel
# included) while it runs, and prints, per server, the samples in all,
# in user space, and inside the HTTP handler split into user code outside
# the Go runtime, the Go runtime, page faults, system calls and the rest
# of the kernel. Then the functions of the gateway's own packages that
# the handler's samples end in most (a sample counts for the deepest
# frame of the module), and the load test's ratios to the floor.
#
# The cold in-process benchmarks (BenchmarkChatTurnCold, cachegrind-turn.sh)
# count what the turn's code costs; this shows what it costs in the
# process the load test measures, where caches are cold after each wait
# for the upstream and where system calls, wake-ups and page faults cost
# what the machine makes them cost.
#
#   testing/perf-c1.sh [GATEWAY_BIN] [C1_DURATION]
#
# GATEWAY_BIN: a build to measure (default: ./cmd/gateway built here);
# C1_DURATION: the load test's -c1-duration (default 12s). Needs perf
# (Debian's linux-perf) and a quiet machine. KEEP=1 keeps the perf data
# and the binaries, in the directory it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v perf >/dev/null || { echo "perf-c1: needs perf (apt-get install linux-perf)" >&2; exit 1; }
dir=$(mktemp -d)
if [ -n "${KEEP:-}" ]; then echo "$dir"; else trap 'rm -rf "$dir"' EXIT; fi
gw="${1:-}" c1="${2:-12s}"
if [ -z "$gw" ]; then
	gw="$dir/agentgate"
	CGO_ENABLED=0 go build -trimpath -o "$gw" ./cmd/gateway
fi
CGO_ENABLED=0 go build -trimpath -o "$dir/floorproxy" ./loadtest/floorproxy
go build -o "$dir/loadtest" ./loadtest
"$dir/loadtest" -gateway-bin "$gw" -floor-bin "$dir/floorproxy" -scenarios nonstream -sessions memory \
	-duration 2s -warmup 1s -open-streams 0 -c1-duration "$c1" >"$dir/report.md" 2>"$dir/loadtest.log" &
lt=$!
# Attach to each server as it starts (the load test runs one of each).
declare -A seen=()
while kill -0 "$lt" 2>/dev/null; do
	for name in gateway floor; do
		[ -n "${seen[$name]:-}" ] && continue
		if [ "$name" = gateway ]; then bin="$gw"; else bin="$dir/floorproxy"; fi
		pid=$(pgrep -f -x "$bin( .*)?" | head -1) || continue
		seen[$name]=$pid
		perf record -q -F 1999 -e cpu-clock -g -p "$pid" -o "$dir/$name.data" >/dev/null 2>&1 &
	done
	sleep 0.1
done
wait "$lt" || { cat "$dir/loadtest.log" >&2; exit 1; }
wait
for name in gateway floor; do
	[ -f "$dir/$name.data" ] || { echo "perf-c1: no samples of the $name" >&2; exit 1; }
	perf script -i "$dir/$name.data" -F ip,sym 2>/dev/null >"$dir/$name.txt"
done
# One sample per blank-line separated block, its frames leaf first.
split='
	function flush() {
		if (n == 0) return
		all++
		kern = leaf ~ /^ffffffff/
		if (!kern) user++
		if (inhandler) {
			h++
			if (fault) hf++
			else if (sys) hs++
			else if (kern) hk++
			else if (leafsym ~ /^(runtime\.|internal\/runtime)/) hr++
			else {
				hu++
				if (own != "") ownc[own]++
			}
		}
		n = 0; inhandler = 0; fault = 0; sys = 0; own = ""
	}
	/^$/ { flush(); next }
	{
		addr = $1; sym = $2
		if (n == 0) { leaf = addr; leafsym = sym }
		n++
		if (sym ~ /serverHandler\.ServeHTTP/) inhandler = 1
		if (sym ~ /exc_page_fault/) fault = 1
		if (sym ~ /entry_SYSCALL_64/) sys = 1
		if (own == "" && sym ~ /^github\.com\/agentgate\/agentgate\//) { own = sym; sub(/\+0x[0-9a-f]+$/, "", own) }
	}
'
for name in gateway floor; do
	awk -v name="$name" "$split"'
		END {
			flush()
			printf "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", name, all, user, h, hu, hr, hf, hs, hk
			if (name == "gateway") for (f in ownc) printf "own\t%d\t%s\n", ownc[f], f > "/dev/stderr"
		}' "$dir/$name.txt"
done 2>"$dir/own.tsv" | awk -F'\t' '
	{ for (i = 2; i <= 10; i++) v[$1, i] = $i }
	END {
		split("all samples|user space|inside the HTTP handler|  user code outside the Go runtime|  the Go runtime|  page faults|  system calls|  the rest of the kernel", label, "|")
		printf "%-40s %10s %10s\n", "samples (perf, 1999 Hz)", "agentgate", "floor"
		for (i = 2; i <= 9; i++) printf "%-40s %10d %10d\n", label[i - 1], v["gateway", i], v["floor", i]
	}'
printf '\nthe gateway'"'"'s own frames the handler'"'"'s user-code samples end in (top 25):\n'
sort -t$'\t' -k2,2nr "$dir/own.tsv" | head -25 | awk -F'\t' '{ printf "%6d  %s\n", $2, $3 }'
printf '\n'
grep -E '^\| non-streaming pass-through \| memory \| (added|CPU)' "$dir/report.md" | cut -d'|' -f4-7
