#!/usr/bin/env bash
# Cross-build the queue and runtime stress programs for aarch64 (static,
# -O2 -Wall -Wextra -Werror) and run them under qemu-user, twice: built for
# ARMv8.1 (LSE atomics: CAS, LDADD, SWP) on QEMU's "max" CPU, and for ARMv8.0
# without outline atomics (LDAXR/STLXR loops, whose CAS can fail spuriously)
# on a Cortex-A57.  Each program checks its invariants (no loss, no
# duplicate, per-entity order, one holder per entity; see their headers) and
# exits non-zero on a violation; a hang is caught by a timeout.  Workloads
# run more threads than a 2-core machine has and take about a minute in all.
#
# What this does NOT show: weak-memory races.  qemu-user runs each guest
# thread on a host thread, and on an x86 host its TCG code keeps the host's
# (TSO) ordering for plain loads and stores, so ARM's load/load and
# store/store reorderings never happen here.  It is also weaker than ARM in
# one place: it emits STLR and LDAR (seq_cst store and load) as plain moves,
# so a seq_cst store may pass a later seq_cst load, which C11 and ARMv8 both
# forbid; litmus_sb shows it, and the queue's store->load handshakes write
# with RMWs for that reason (see csrc/seer_queue.c's header).  A pass means the code builds
# cleanly for aarch64 and its invariants hold with aarch64's atomic
# instruction sequences and the compiler's aarch64 code generation; the
# memory-order argument itself is in the comments of csrc/seer_ring.h and
# csrc/seer_queue.c, and only real ARM hardware (or a model checker) tests it.
#
#   bash csrc/tests/cross_aarch64.sh           # from any directory
#   SEED=42 bash csrc/tests/cross_aarch64.sh
#
# Installs nothing: needs gcc-aarch64-linux-gnu (with libc6-dev-arm64-cross)
# and qemu-user (or qemu-user-static).  Builds go to a temporary directory.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
CC=${CROSS_CC:-aarch64-linux-gnu-gcc}
QEMU=${QEMU:-}
if [ -z "$QEMU" ]; then
    for q in qemu-aarch64 qemu-aarch64-static; do
        if command -v "$q" >/dev/null 2>&1; then
            QEMU=$q
            break
        fi
    done
fi
missing=()
command -v "$CC" >/dev/null 2>&1 || missing+=("gcc-aarch64-linux-gnu (for $CC)")
[ -n "$QEMU" ] && command -v "$QEMU" >/dev/null 2>&1 || missing+=("qemu-user or qemu-user-static (for qemu-aarch64)")
if [ ${#missing[@]} -gt 0 ]; then
    for m in "${missing[@]}"; do echo "cross_aarch64.sh: missing package: $m" >&2; done
    echo "cross_aarch64.sh: install with: apt-get install -y gcc-aarch64-linux-gnu qemu-user" >&2
    exit 1
fi
SEED=${SEED:-$(( ($(date +%s) ^ $$) & 0x7fffffff ))}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/seer-aarch64.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

printf 'int main(void) { return 0; }\n' >"$TMP/empty.c"
if ! "$CC" -static "$TMP/empty.c" -o "$TMP/empty" 2>"$TMP/empty.log"; then
    cat "$TMP/empty.log" >&2
    echo "cross_aarch64.sh: $CC cannot link a static program: missing package libc6-dev-arm64-cross" >&2
    exit 1
fi

Q_SRCS=(csrc/tests/stress_queue.c csrc/seer_queue.c)
RT_SRCS=(csrc/tests/stress_runtime.c csrc/seer_runtime.c csrc/seer_queue.c csrc/seer_crash.c)
FLAGS_SRCS=(csrc/tests/stress_flags.c csrc/seer_flags.c)
LITMUS_SRCS=(csrc/tests/litmus_sb.c)
COMMON=(-std=c11 -O2 -Wall -Wextra -Werror -pthread -static -Icsrc -Icsrc/include)

# run LABEL CPU BINARY ARGS...: fail on a non-zero exit or a timeout.
run() {
    local label=$1 cpu=$2 bin=$3
    shift 3
    local log="$TMP/$label.log" rc=0 start=$SECONDS
    QEMU_CPU=$cpu timeout 120 "$QEMU" "$bin" "$@" >"$log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
        cat "$log" >&2
        [ "$rc" -eq 124 ] && echo "cross_aarch64.sh: [$label] timed out after 120 s (a hang: lost ready entity, leaked node, deadlock?)" >&2
        echo "cross_aarch64.sh: FAIL [$label] $bin $* (exit $rc, cpu $cpu, seed $SEED)" >&2
        exit 1
    fi
    echo "cross_aarch64.sh: [$label] $(tail -n 1 "$log" | cut -c1-150) ($((SECONDS - start)) s)"
}

echo "cross_aarch64.sh: $($CC --version | head -n 1); $($QEMU --version | head -n 1); seed $SEED"
t0=$SECONDS
# variant: name, CPU model for qemu, extra compiler flags
for variant in "lse max -march=armv8.1-a" "llsc cortex-a57 -march=armv8-a -mno-outline-atomics"; do
    read -r name cpu flags <<<"$variant"
    read -ra extra <<<"$flags"
    "$CC" "${COMMON[@]}" "${extra[@]}" "${Q_SRCS[@]}" -lm -o "$TMP/stress_queue_$name"
    "$CC" "${COMMON[@]}" "${extra[@]}" "${RT_SRCS[@]}" -lm -o "$TMP/stress_runtime_$name"
    "$CC" "${COMMON[@]}" "${extra[@]}" "${FLAGS_SRCS[@]}" -lm -o "$TMP/stress_flags_$name"
    "$CC" "${COMMON[@]}" "${extra[@]}" "${LITMUS_SRCS[@]}" -o "$TMP/litmus_sb_$name"
    # qemu's own memory order first: a seq_cst store may pass a later seq_cst
    # load here (reported, not C11); the exchange the queue uses must not.
    run "$name-litmus" "$cpu" "$TMP/litmus_sb_$name" 100000
    #   args: producers consumers entities events_per_producer capacity(0=auto) rounds seed
    run "$name-mixed" "$cpu" "$TMP/stress_queue_$name" 3 3 61 400000 0 2 "$SEED"
    run "$name-contended" "$cpu" "$TMP/stress_queue_$name" 4 4 8 150000 0 2 "$SEED"
    # 4 entities: the ready ring (size 4) is exactly full when all are ready.
    run "$name-full-ring" "$cpu" "$TMP/stress_queue_$name" 4 4 4 150000 0 2 "$SEED"
    run "$name-fanout" "$cpu" "$TMP/stress_queue_$name" 1 3 64 400000 0 2 "$SEED"
    run "$name-oversubscribed" "$cpu" "$TMP/stress_queue_$name" 6 6 1021 80000 0 2 "$SEED"
    #   args: entities steps max_workers fanout (workers 1..max, same result)
    run "$name-runtime" "$cpu" "$TMP/stress_runtime_$name" 257 200 4 3
    run "$name-runtime-narrow" "$cpu" "$TMP/stress_runtime_$name" 5 400 6 2
    run "$name-runtime-wide" "$cpu" "$TMP/stress_runtime_$name" 1021 40 8 4
    #   a pool thread held back (sleeping, yielding) in pools of 2..8
    run "$name-runtime-held-back" "$cpu" "$TMP/stress_runtime_$name" 257 40 8 3 8
    #   args: mode workers rounds seed (the process backend's flags: futex waits, payload order)
    run "$name-flags" "$cpu" "$TMP/stress_flags_$name" threads 3 2000 "$SEED"
done
echo "cross_aarch64.sh: OK (aarch64 LSE and LL/SC builds under $QEMU, $((SECONDS - t0)) s)"
