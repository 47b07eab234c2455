#!/usr/bin/env bash
# Build the validation programs of csrc/tests (the queue, the runtime's pool,
# close() from another thread racing steps, resizes and stats,
# seer.vector's native path over the UAV swarm, the process backend's flags)
# under ThreadSanitizer, then under AddressSanitizer +
# UndefinedBehaviorSanitizer, and run each build
# on workloads sized for a 2-core CI machine (well under a minute per
# sanitizer).  Any sanitizer report, or any failed invariant, fails the script.
#
#   bash csrc/tests/sanitize.sh            # from any directory
#   CC=gcc-13 SEED=42 bash csrc/tests/sanitize.sh
#
# Builds go to a temporary directory, never into the repository.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
CC=${CC:-gcc}
if ! command -v "$CC" >/dev/null 2>&1; then
    echo "sanitize.sh: C compiler '$CC' not found (set CC=...)" >&2
    exit 1
fi
SEED=${SEED:-$(( ($(date +%s) ^ $$) & 0x7fffffff ))}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/seer-sanitize.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

SRCS=(csrc/tests/stress_queue.c csrc/seer_queue.c)
RT_SRCS=(csrc/tests/stress_runtime.c csrc/seer_runtime.c csrc/seer_queue.c csrc/seer_crash.c)
CLOSE_SRCS=(csrc/tests/stress_close.c csrc/seer_runtime.c csrc/seer_queue.c csrc/seer_crash.c)
VEC_SRCS=(csrc/tests/stress_vector_uav.c csrc/seer_vector.c seer/envs/uav_swarm/csrc/uav_swarm.c seer/envs/uav_swarm/csrc/uav_swarm_step.c
          csrc/seer_runtime.c csrc/seer_queue.c csrc/seer_crash.c)
FLAGS_SRCS=(csrc/tests/stress_flags.c csrc/seer_flags.c)
COMMON=(-std=c11 -O1 -g -fno-omit-frame-pointer -Wall -Wextra -pthread -Icsrc -Icsrc/include -Iseer/envs/uav_swarm/csrc)
REPORT_RE='ThreadSanitizer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:'

export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 history_size=4"
export ASAN_OPTIONS="halt_on_error=1 exitcode=66 detect_leaks=1 detect_stack_use_after_return=1 strict_init_order=1"
export UBSAN_OPTIONS="halt_on_error=1 exitcode=66 print_stacktrace=1"

# run LABEL BINARY ARGS...: run once; fail on a non-zero exit or any report.
run() {
    local label=$1 bin=$2
    shift 2
    local log="$TMP/$label.log" rc=0 start=$SECONDS
    timeout 300 "$bin" "$@" >"$log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ] && grep -q "unexpected memory mapping" "$log"; then
        # TSan cannot map its shadow with this kernel's ASLR entropy: retry
        # with randomization off for this process only.
        rc=0
        timeout 300 setarch "$(uname -m)" -R "$bin" "$@" >"$log" 2>&1 || rc=$?
    fi
    if [ "$rc" -ne 0 ] || grep -Eq "$REPORT_RE" "$log"; then
        cat "$log" >&2
        echo "sanitize.sh: FAIL [$label] $bin $* (exit $rc, seed $SEED)" >&2
        exit 1
    fi
    echo "sanitize.sh: [$label] $(tail -n 1 "$log") ($((SECONDS - start)) s)"
}

# A sanitizer that is not really on would pass everything: check that each
# build catches a planted bug first.
cat >"$TMP/planted.c" <<'EOF'
#include <pthread.h>
#include <stdlib.h>
static int shared;
static void *bump(void *arg) { shared++; return arg; }
int main(int argc, char **argv) {
    (void)argv;
    if (argc > 1) { int *p = malloc(4 * sizeof *p); p[4] = 1; free(p); return 0; }
    pthread_t t;
    pthread_create(&t, NULL, bump, NULL);
    shared++;
    pthread_join(t, NULL);
    return 0;
}
EOF
planted() {
    local label=$1 bin=$2
    shift 2
    if "$bin" "$@" >"$TMP/planted.log" 2>&1 || ! grep -Eq "$REPORT_RE" "$TMP/planted.log"; then
        if ! grep -q "unexpected memory mapping" "$TMP/planted.log" ||
            setarch "$(uname -m)" -R "$bin" "$@" >"$TMP/planted.log" 2>&1 ||
            ! grep -Eq "$REPORT_RE" "$TMP/planted.log"; then
            cat "$TMP/planted.log" >&2
            echo "sanitize.sh: FAIL [$label] the sanitizer missed a planted bug" >&2
            exit 1
        fi
    fi
}

echo "sanitize.sh: $($CC --version | head -n 1), seed $SEED"

# ---- ThreadSanitizer ---------------------------------------------------------
"$CC" "${COMMON[@]}" -fsanitize=thread "$TMP/planted.c" -o "$TMP/planted_tsan"
planted tsan "$TMP/planted_tsan"
"$CC" "${COMMON[@]}" -fsanitize=thread "${SRCS[@]}" -lm -o "$TMP/stress_tsan"
#   args: producers consumers entities events_per_producer capacity(0=auto) rounds seed
run tsan-mixed "$TMP/stress_tsan" 3 3 61 300000 0 2 "$SEED"
run tsan-contended "$TMP/stress_tsan" 4 4 8 100000 0 2 "$SEED"
run tsan-wide "$TMP/stress_tsan" 2 2 509 300000 0 2 "$SEED"
"$CC" "${COMMON[@]}" -fsanitize=thread "${RT_SRCS[@]}" -lm -o "$TMP/stress_rt_tsan"
#   args: entities steps max_workers fanout delay_workers(pools of 2..N with one held back)
run tsan-runtime "$TMP/stress_rt_tsan" 257 30 4 3
run tsan-runtime-narrow "$TMP/stress_rt_tsan" 5 60 3 2
run tsan-runtime-held-back "$TMP/stress_rt_tsan" 129 20 8 2 8
"$CC" "${COMMON[@]}" -fsanitize=thread "${CLOSE_SRCS[@]}" -lm -o "$TMP/stress_close_tsan"
#   args: rounds entities max_workers seed
run tsan-close "$TMP/stress_close_tsan" 40 64 3 "$SEED"
# BAND_SPIN_NS=0: a pool's tiled bands sleep at every wait (uav_swarm_step.c), so the futex path's edges
# are the ones checked here; the ASan build below keeps the spin
"$CC" "${COMMON[@]}" -fsanitize=thread -DBAND_SPIN_NS=0 "${VEC_SRCS[@]}" -lm -o "$TMP/stress_vec_tsan"
#   args: copies uavs steps max_workers seed
run tsan-vector "$TMP/stress_vec_tsan" 6 12 80 3 "$SEED"
"$CC" "${COMMON[@]}" -fsanitize=thread "${FLAGS_SRCS[@]}" -lm -o "$TMP/stress_flags_tsan"
#   args: threads|fork workers rounds seed (TSan follows threads only)
run tsan-flags "$TMP/stress_flags_tsan" threads 3 3000 "$SEED"

# ---- AddressSanitizer + UndefinedBehaviorSanitizer ------------------------------
ASAN_FLAGS=(-fsanitize=address,undefined -fno-sanitize-recover=all)
"$CC" "${COMMON[@]}" "${ASAN_FLAGS[@]}" "$TMP/planted.c" -o "$TMP/planted_asan"
planted asan "$TMP/planted_asan" overflow
"$CC" "${COMMON[@]}" "${ASAN_FLAGS[@]}" "${SRCS[@]}" -lm -o "$TMP/stress_asan"
run asan-mixed "$TMP/stress_asan" 3 3 251 1000000 0 2 "$SEED"
run asan-contended "$TMP/stress_asan" 4 4 8 300000 0 2 "$SEED"
run asan-fanout "$TMP/stress_asan" 1 3 64 800000 0 2 "$SEED"
"$CC" "${COMMON[@]}" "${ASAN_FLAGS[@]}" "${RT_SRCS[@]}" -lm -o "$TMP/stress_rt_asan"
run asan-runtime "$TMP/stress_rt_asan" 509 30 4 4
run asan-runtime-held-back "$TMP/stress_rt_asan" 257 30 8 3 8
"$CC" "${COMMON[@]}" "${ASAN_FLAGS[@]}" "${CLOSE_SRCS[@]}" -lm -o "$TMP/stress_close_asan"
run asan-close "$TMP/stress_close_asan" 40 64 3 "$SEED"
"$CC" "${COMMON[@]}" "${ASAN_FLAGS[@]}" "${VEC_SRCS[@]}" -lm -o "$TMP/stress_vec_asan"
run asan-vector "$TMP/stress_vec_asan" 6 20 120 3 "$SEED"
"$CC" "${COMMON[@]}" "${ASAN_FLAGS[@]}" "${FLAGS_SRCS[@]}" -lm -o "$TMP/stress_flags_asan"
run asan-flags "$TMP/stress_flags_asan" threads 3 3000 "$SEED"
run asan-flags-fork "$TMP/stress_flags_asan" fork 3 3000 "$SEED"

echo "sanitize.sh: OK (thread, address+undefined)"
