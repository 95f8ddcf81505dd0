#!/bin/sh
# option_eval.sh — the reconfiguration signal carried in a TCP option vs a local detector vs no
# detector, in the emulator (docs/option.md, "Evaluation"). Needs root and a built `leocc`.
#
# Downlink: the LeoCC SENDER is the iperf3 server in the server namespace (iperf3 -R: the
# satellite user connects and downloads, as a browser does), the RECEIVER and the detector
# (`leocc probe --pop $LEOCC_POP`) are in the client namespace. Both namespaces share one kernel
# and one pinned signal map, so the three runs differ in where the signal enters the sender:
#   remote  the sender's processes are in cgroup $CG/leocc-opt-snd with role sender, the
#           receiver's in $CG/leocc-opt-rcv with role receiver: the connection negotiates the
#           option and the sender's flow takes its signal from the option ONLY (a consuming
#           flow ignores the local map), i.e. detector -> map -> receiver's ACK option ->
#           across the emulated uplink -> sender's parse -> sender's LeoCC;
#   local   no option carrier attached: the sender's flow reads the map the detector writes
#           (as a sender behind the dish would);
#   none    no detector at all.
# Metrics per run: goodput (iperf3 receiver) and the sender's smoothed RTT (tcpi_rtt) every
# 100 ms from iperf3 --get-server-output intervals: mean, p95.
#
# usage: [RUNS="remote local none"] option_eval.sh [LEOCC] [SECONDS] [SEED] [OUTDIR]
set -eu
RUNS=${RUNS:-remote local none}
LEOCC=${1:-leocc}
SECS=${2:-60}
SEED=${3:-1}
OUT=${4:-/tmp/leocc-option-eval}
LEOCC=$(command -v "$LEOCC" || echo "$LEOCC")
PORT=5291

CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CG" ] || { echo "no cgroup2 mount" >&2; exit 1; }
SND=$CG/leocc-opt-snd
RCV=$CG/leocc-opt-rcv
mkdir -p "$OUT" "$SND" "$RCV"
cleanup() {
	"$LEOCC" kernel unload --cgroup "$SND" >/dev/null 2>&1 || true
	"$LEOCC" kernel unload --cgroup "$RCV" >/dev/null 2>&1 || true
	rmdir "$SND" "$RCV" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

TRACE=$OUT/starlink-down-$SECS-$SEED.trace
[ -f "$TRACE" ] || "$LEOCC" trace gen --profile starlink-down --duration "$SECS" --seed "$SEED" -o "$TRACE"
"$LEOCC" kernel load >/dev/null

run() { # run NAME DETECTOR(yes|no)
	name=$1
	det=$2
	json=$OUT/$name-$SEED.json
	probe=":"
	[ "$det" = yes ] && probe="\"$LEOCC\" probe --pop \$LEOCC_POP --duration $((SECS + 5)) --log $OUT/$name-$SEED.events >/dev/null 2>&1 &"
	echo "== $name (trace $TRACE, ${SECS}s)" >&2
	"$LEOCC" emu --trace "$TRACE" --seed "$SEED" \
		--server-cmd "echo \$\$ > $SND/cgroup.procs; exec iperf3 -s -1 -J -p $PORT >/dev/null" \
		-- sh -c "echo \$\$ > $RCV/cgroup.procs; $probe
			sleep 1
			iperf3 -c \$LEOCC_SERVER -p $PORT -R -C leocc -t $SECS -i 0.1 -J --get-server-output > $json
			kill %1 2>/dev/null; wait" >&2
	jq -r --arg name "$name" '
		. as $j
		| [$j.server_output_json.intervals[].streams[0].rtt | select(. > 0) / 1000] | sort as $r
		| ($r | length) as $n
		| "\($name) goodput_mbps=\($j.end.sum_received.bits_per_second / 1e6 | . * 100 | round / 100) rtt_mean_ms=\(($r | add) / $n | . * 100 | round / 100) rtt_p95_ms=\($r[($n * 0.95 | floor)] | . * 100 | round / 100) retrans=\($j.server_output_json.end.sum_sent.retransmits)"
	' "$json"
}

for r in $RUNS; do
	case $r in
	remote) # option carrier on, roles per cgroup
		"$LEOCC" kernel load --role sender --cgroup "$SND" >/dev/null
		"$LEOCC" kernel load --role receiver --cgroup "$RCV" >/dev/null
		"$LEOCC" kernel stats --json | tail -1 > "$OUT/counters-before-$SEED.json"
		run remote yes
		"$LEOCC" kernel stats --json | tail -1 > "$OUT/counters-after-$SEED.json"
		"$LEOCC" kernel unload --cgroup "$SND" >/dev/null
		"$LEOCC" kernel unload --cgroup "$RCV" >/dev/null
		;;
	local) run local yes ;;
	none) run none no ;;
	*) echo "unknown run $r (remote, local, none)" >&2; exit 2 ;;
	esac
done
