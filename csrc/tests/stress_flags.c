/* Validation program for seer_flags.c, without Python: the handshake of
 * seer.vector's process backend between one parent and K workers.
 *
 *   stress_flags [threads|fork] [workers] [rounds] [seed]
 *
 * Each round the parent writes a command payload with plain stores
 * (canaries at both ends), publishes GEN = round and rings every worker's
 * bell; each worker wakes, checks the whole payload, writes its reply with
 * plain stores, publishes DONE[w] = round and rings the parent's bell; the
 * parent waits for some (need = 1 first, on odd rounds) then all of them
 * and checks every reply.  Random delays and spin budgets of 0 push both
 * sides through the futex sleep as well as the spinning path.  Checked:
 *   - ordering: a payload read after its flag's acquire is the one written
 *     before the release (under TSan a missing edge is also a data race);
 *   - no lost wake-up: every wait has a 10 s limit, and reaching it fails;
 *   - the abort flag ends a wait at once, a timeout ends it in time, and
 *     seer_flag_add loses no increment.
 * "threads" runs the workers as pthreads (what TSan can follow); "fork" as
 * processes over a MAP_SHARED mapping (FUTEX_WAIT/WAKE across processes).
 * Prints "stress_flags: OK ..." and exits 0, or names the broken invariant.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "seer_flags.h"

#define MAX_WORKERS 16
#define WORDS 16
#define CANARY INT64_C(0x5eed5eed5eed5eed)
#define LIMIT_S 10.0

/* control slots (int64): as in seer/vector/_process.py, one line per side */
#define GEN 0
#define PBELL 1
#define ABORT 2
#define STOP 3
#define FAILS 4
#define LINE(w) (8 + 8 * (w))
#define DONE 0
#define WBELL 1
#define SLOTS(k) (8 + 8 * (k))

typedef struct shared {
    int64_t *ctl;
    int64_t *cmd;   /* WORDS                */
    int64_t *reply; /* WORDS per worker     */
    int32_t workers;
    int64_t rounds;
    uint64_t seed;
} shared;

static int fail(shared *s, const char *what, long long a, long long b) {
    if (seer_flag_add(&s->ctl[FAILS], 1) < 5) fprintf(stderr, "stress_flags: FAIL: %s (%lld vs %lld)\n", what, a, b);
    return 1;
}

static uint64_t next(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void pause_us(uint64_t *rng) {
    uint64_t r = next(rng) % 8;
    if (r < 5) return; /* mostly none: the other side is often still spinning */
    struct timespec ts = {0, (long)(r == 7 ? 300000 : 20000)};
    nanosleep(&ts, NULL);
}

static int64_t cmd_word(int64_t round, int i, uint64_t seed) {
    if (i == 0) return CANARY ^ round;
    if (i == WORDS - 1) return CANARY ^ ~round;
    return round * 2654435761LL + i * 40503 + (int64_t)(seed & 0xffff);
}

static int64_t reply_word(int64_t round, int w, int i) {
    if (i == 0 || i == WORDS - 1) return CANARY ^ (round * 64 + w);
    return round * 1000003 + w * 31 + i;
}

static void worker(shared *s, int w) {
    uint64_t rng = s->seed * 7919 + (uint64_t)w + 1;
    int64_t last = 0;
    int64_t idx[2] = {GEN, STOP};
    for (;;) {
        int64_t val[2] = {last, 0};
        uint8_t hit[2];
        double spin = next(&rng) % 2 ? 0.0 : 2e-5;
        int32_t got = seer_flags_wait(s->ctl, idx, val, 2, 1, SEER_FLAGS_NE, LINE(w) + WBELL, -1, spin, LIMIT_S, hit);
        if (got < 1) {
            fail(s, "lost wake-up: a worker waited 10 s for a published GEN", last, seer_flag_load(&s->ctl[GEN]));
            return;
        }
        if (hit[1]) return;
        int64_t g = seer_flag_load(&s->ctl[GEN]);
        if (g != last + 1) fail(s, "worker saw GEN skip a round", g, last + 1);
        last = g;
        for (int i = 0; i < WORDS; i++)
            if (s->cmd[i] != cmd_word(g, i, s->seed))
                fail(s, "command payload seen before its GEN store", s->cmd[i], cmd_word(g, i, s->seed));
        pause_us(&rng);
        int64_t *out = s->reply + w * WORDS;
        for (int i = 0; i < WORDS; i++) out[i] = reply_word(g, w, i);
        int64_t at = LINE(w) + DONE, bell = PBELL;
        seer_flags_publish(s->ctl, &at, &g, 1, &bell, 1);
    }
}

static void *worker_thread(void *arg) {
    shared *s = ((void **)arg)[0];
    worker(s, (int)(intptr_t)((void **)arg)[1]);
    return NULL;
}

static void check_replies(shared *s, int64_t r, const uint8_t *hit) {
    for (int w = 0; w < s->workers; w++) {
        if (hit && !hit[w]) continue;
        const int64_t *in = s->reply + w * WORDS;
        for (int i = 0; i < WORDS; i++)
            if (in[i] != reply_word(r, w, i))
                fail(s, "reply payload seen before its DONE store", in[i], reply_word(r, w, i));
    }
}

static void parent(shared *s) {
    uint64_t rng = s->seed | 1;
    int K = s->workers;
    int64_t idx[MAX_WORKERS], val[MAX_WORKERS], bells[MAX_WORKERS];
    uint8_t hit[MAX_WORKERS];
    for (int w = 0; w < K; w++) {
        idx[w] = LINE(w) + DONE;
        bells[w] = LINE(w) + WBELL;
    }
    for (int64_t r = 1; r <= s->rounds && seer_flag_load(&s->ctl[FAILS]) == 0; r++) {
        for (int i = 0; i < WORDS; i++) s->cmd[i] = cmd_word(r, i, s->seed);
        int64_t at = GEN;
        seer_flags_publish(s->ctl, &at, &r, 1, bells, K);
        for (int w = 0; w < K; w++) val[w] = r;
        double spin = next(&rng) % 2 ? 0.0 : 2e-5;
        if (r % 2) {
            int32_t got = seer_flags_wait(s->ctl, idx, val, K, 1, SEER_FLAGS_EQ, PBELL, ABORT, spin, LIMIT_S, hit);
            if (got < 1) fail(s, "lost wake-up: the parent waited 10 s for the first DONE", got, 1);
            check_replies(s, r, hit);
        }
        int32_t got = seer_flags_wait(s->ctl, idx, val, K, K, SEER_FLAGS_EQ, PBELL, ABORT, spin, LIMIT_S, hit);
        if (got != K) {
            fail(s, "lost wake-up: the parent waited 10 s for every DONE", got, K);
            break;
        }
        check_replies(s, r, NULL);
    }
    int64_t at = STOP, one = 1;
    seer_flags_publish(s->ctl, &at, &one, 1, bells, K);
}

/* ---- single-purpose checks (threads) -------------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *aborted_waiter(void *arg) {
    shared *s = arg;
    int64_t idx = GEN, val = -12345;
    double t0 = now_s();
    int32_t got = seer_flags_wait(s->ctl, &idx, &val, 1, 1, SEER_FLAGS_EQ, PBELL, ABORT, 0.0, LIMIT_S, NULL);
    if (got != SEER_FLAGS_ABORTED) fail(s, "a set abort flag did not end the wait", got, SEER_FLAGS_ABORTED);
    if (now_s() - t0 > 2.0) fail(s, "the abort took seconds to end the wait", (long long)(now_s() - t0), 2);
    return NULL;
}

static void *adder(void *arg) {
    shared *s = arg;
    for (int i = 0; i < 100000; i++) seer_flag_add(&s->ctl[FAILS + 1], 1);
    return NULL;
}

static void extra_checks(shared *s) {
    int64_t idx = GEN, val = -12345;
    double t0 = now_s();
    int32_t got = seer_flags_wait(s->ctl, &idx, &val, 1, 1, SEER_FLAGS_EQ, PBELL, -1, 0.0, 0.05, NULL);
    double took = now_s() - t0;
    if (got != 0) fail(s, "a wait for a flag nobody sets returned hits", got, 0);
    if (took < 0.045 || took > 2.0) fail(s, "a 50 ms wait took (ms)", (long long)(took * 1e3), 50);

    pthread_t t;
    pthread_create(&t, NULL, aborted_waiter, s);
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    int64_t at = ABORT, one = 1, bell = PBELL;
    seer_flags_publish(s->ctl, &at, &one, 1, &bell, 1);
    pthread_join(t, NULL);
    seer_flag_store(&s->ctl[ABORT], 0);

    pthread_t a[4];
    for (int i = 0; i < 4; i++) pthread_create(&a[i], NULL, adder, s);
    for (int i = 0; i < 4; i++) pthread_join(a[i], NULL);
    if (seer_flag_load(&s->ctl[FAILS + 1]) != 400000)
        fail(s, "seer_flag_add lost increments", seer_flag_load(&s->ctl[FAILS + 1]), 400000);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "threads";
    int workers = argc > 2 ? atoi(argv[2]) : 3;
    long long rounds = argc > 3 ? atoll(argv[3]) : 20000;
    unsigned long long seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
    int forked = strcmp(mode, "fork") == 0;
    if ((!forked && strcmp(mode, "threads") != 0) || workers < 1 || workers > MAX_WORKERS || rounds < 1) {
        fprintf(stderr, "usage: stress_flags [threads|fork] [workers 1..%d] [rounds >= 1] [seed]\n", MAX_WORKERS);
        return 2;
    }
    size_t bytes = sizeof(int64_t) * (SLOTS(workers) + WORDS * (1 + workers));
    int64_t *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        perror("stress_flags: mmap");
        return 2;
    }
    memset(mem, 0, bytes);
    shared s = {mem, mem + SLOTS(workers), mem + SLOTS(workers) + WORDS, workers, rounds, seed ? seed : 1};
    double t0 = now_s();
    pid_t pids[MAX_WORKERS];
    pthread_t threads[MAX_WORKERS];
    void *args[MAX_WORKERS][2];
    for (int w = 0; w < workers; w++) {
        if (forked) {
            pids[w] = fork();
            if (pids[w] < 0) {
                perror("stress_flags: fork");
                return 2;
            }
            if (pids[w] == 0) {
                worker(&s, w);
                _exit(0);
            }
        } else {
            args[w][0] = &s;
            args[w][1] = (void *)(intptr_t)w;
            pthread_create(&threads[w], NULL, worker_thread, args[w]);
        }
    }
    parent(&s);
    for (int w = 0; w < workers; w++) {
        if (forked) {
            int status = 0;
            waitpid(pids[w], &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail(&s, "a worker process failed", status, 0);
        } else {
            pthread_join(threads[w], NULL);
        }
    }
    if (!forked) extra_checks(&s);
    long long fails = seer_flag_load(&s.ctl[FAILS]);
    if (fails) {
        fprintf(stderr, "stress_flags: %lld failures\n", fails);
        return 1;
    }
    printf("stress_flags: OK %s, %d workers, %lld rounds in %.2f s\n", mode, workers, rounds, now_s() - t0);
    munmap(mem, bytes);
    return 0;
}
