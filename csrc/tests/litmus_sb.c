/* Store-buffering litmus test: does the machine (or emulator) running the
 * stress programs keep a seq_cst write before a later seq_cst load?
 *
 *   litmus_sb [rounds]
 *
 * Two threads, round i: T1 writes x[i] then loads y[i], T2 writes y[i] then
 * loads x[i].  Under C11 seq_cst both loads cannot read 0.  The queue's
 * handshakes have this shape (csrc/seer_queue.c's header: a push or an
 * unclaim writes the lane's word, then loads the horizon; advance raises
 * the horizon, then loads the word), and each writes with an RMW.
 *
 * Two variants of the write: a seq_cst store, and a seq_cst exchange (an
 * RMW, as the queue's).  qemu-user 7.2 on an x86 host translates aarch64 STLR and
 * LDAR to plain moves with no store->load fence, so the store variant shows
 * both-zero outcomes there although real ARMv8 hardware forbids them; the
 * exchange is emulated with a host atomic and must show none.  Prints both
 * counts; exits 1 if the exchange variant (the one the code relies on) ever
 * reads both zero. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int32_t rounds;
static _Atomic int *x, *y;
static int *r1, *r2;
static _Atomic int arrived;
static int use_exchange;

/* Both threads start round i together, so the two writes race. */
static void meet(int32_t i) {
    atomic_fetch_add_explicit(&arrived, 1, memory_order_acq_rel);
    while (atomic_load_explicit(&arrived, memory_order_acquire) < 2 * (i + 1)) {
    }
}

static void write_then_load(_Atomic int *w, _Atomic int *r, int *out, int32_t i) {
    if (use_exchange)
        (void)atomic_exchange_explicit(&w[i], 1, memory_order_seq_cst);
    else
        atomic_store_explicit(&w[i], 1, memory_order_seq_cst);
    out[i] = atomic_load_explicit(&r[i], memory_order_seq_cst);
}

/* One side of the test: T1 is (x, y, r1), T2 (y, x, r2). */
typedef struct side_arg {
    _Atomic int **write, **read;
    int **out;
} side_arg;

static void *side(void *arg) {
    const side_arg *a = arg;
    for (int32_t i = 0; i < rounds; i++) {
        meet(i);
        write_then_load(*a->write, *a->read, *a->out, i);
    }
    return NULL;
}

static int32_t both_zero(int exchange) {
    use_exchange = exchange;
    atomic_store(&arrived, 0);
    for (int32_t i = 0; i < rounds; i++) {
        atomic_store(&x[i], 0);
        atomic_store(&y[i], 0);
        r1[i] = r2[i] = -1; /* canary: every round must overwrite both */
    }
    pthread_t a, b;
    side_arg t1 = {&x, &y, &r1}, t2 = {&y, &x, &r2};
    if (pthread_create(&a, NULL, side, &t1) || pthread_create(&b, NULL, side, &t2)) {
        fprintf(stderr, "litmus_sb: pthread_create failed\n");
        exit(2);
    }
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    int32_t n = 0;
    for (int32_t i = 0; i < rounds; i++) {
        if (r1[i] < 0 || r2[i] < 0) {
            fprintf(stderr, "litmus_sb: round %d never ran\n", i);
            exit(2);
        }
        n += r1[i] == 0 && r2[i] == 0;
    }
    return n;
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atoi(argv[1]) : 200000;
    if (rounds < 1) {
        fprintf(stderr, "litmus_sb: rounds must be >= 1, got %s\n", argv[1]);
        return 2;
    }
    x = calloc((size_t)rounds, sizeof *x);
    y = calloc((size_t)rounds, sizeof *y);
    r1 = calloc((size_t)rounds, sizeof *r1);
    r2 = calloc((size_t)rounds, sizeof *r2);
    if (!x || !y || !r1 || !r2) return 2;
    int32_t store = both_zero(0), exchange = both_zero(1);
    printf("litmus_sb: both loads read 0 in %d of %d rounds with a seq_cst store (%s), %d with an exchange\n",
           store, rounds, store ? "this machine reorders it: not C11" : "none", exchange);
    free(x);
    free(y);
    free(r1);
    free(r2);
    return exchange != 0;
}
