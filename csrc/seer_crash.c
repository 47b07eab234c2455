/* The crash report of seer_crash.h.  Everything the signal handler does is
 * async-signal-safe: it reads this thread's notes, formats them into a stack
 * buffer by hand (no printf) and write()s them to fd 2; then it puts back the
 * handler that was there before it and returns, so the faulting instruction
 * runs again and the process dies exactly as it would have (or, for a raised
 * SIGABRT, the signal is raised again). */
#define _GNU_SOURCE
#include "seer_crash.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "seer_crash_internal.h"

_Thread_local const seer_event *seer_crash_event = NULL;
_Thread_local int32_t seer_crash_copy = -1;

static const int SIGNALS[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NUM_SIGNALS ((int)(sizeof SIGNALS / sizeof SIGNALS[0]))
static struct sigaction previous[NUM_SIGNALS];

typedef struct text {
    char buf[256];
    size_t n;
} text;

static void put(text *t, const char *s) {
    while (*s && t->n < sizeof t->buf - 1) t->buf[t->n++] = *s++;
}

static void put_int(text *t, int64_t v) {
    char digits[24];
    int k = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do digits[k++] = (char)('0' + u % 10); while ((u /= 10) && k < (int)sizeof digits);
    if (v < 0) put(t, "-");
    while (k && t->n < sizeof t->buf - 1) t->buf[t->n++] = digits[--k];
}

/* a time to 9 significant decimals is enough to find the event; no libm */
static void put_time(text *t, double x) {
    if (x != x) { put(t, "nan"); return; }
    if (x < 0) { put(t, "-"); x = -x; }
    if (x >= 9.2e18) { put(t, "inf"); return; }
    int64_t whole = (int64_t)x;
    put_int(t, whole);
    int64_t frac = (int64_t)((x - (double)whole) * 1e9 + 0.5);
    if (frac >= 1000000000) frac = 999999999;
    char f[10];
    for (int i = 8; i >= 0; i--, frac /= 10) f[i] = (char)('0' + frac % 10);
    int last = 8;
    while (last > 0 && f[last] == '0') last--;
    f[last + 1] = 0;
    put(t, ".");
    put(t, f);
}

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "SIGABRT";
    }
}

static void report(int sig) {
    int saved = errno;
    const seer_event *ev = seer_crash_event;
    int32_t copy = seer_crash_copy;
    if (ev || copy >= 0) {
        text t = {.n = 0};
        put(&t, "seer: ");
        put(&t, signal_name(sig));
        if (ev) {
            put(&t, " in the handler of event kind ");
            put_int(&t, ev->kind);
            put(&t, " at entity ");
            put_int(&t, ev->entity);
            put(&t, ", time ");
            put_time(&t, ev->time);
        } else {
            put(&t, " in a native copy step");
        }
        if (copy >= 0) {
            put(&t, ", env copy ");
            put_int(&t, copy);
        }
        put(&t, "\n");
        ssize_t ignored = write(2, t.buf, t.n);
        (void)ignored;
    }
    for (int i = 0; i < NUM_SIGNALS; i++)
        if (SIGNALS[i] == sig) sigaction(sig, &previous[i], NULL);
    errno = saved;
    if (sig == SIGABRT) raise(sig); /* not a fault that happens again on return */
}

int seer_crash_report_install(void) {
    static int installed; /* a second install would save report() as its own previous handler */
    if (installed) return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = report;
    sigemptyset(&sa.sa_mask);
    /* SA_NODEFER: the re-raise of SIGABRT from inside the handler is delivered */
    sa.sa_flags = SA_NODEFER;
    for (int i = 0; i < NUM_SIGNALS; i++)
        if (sigaction(SIGNALS[i], &sa, &previous[i]) != 0) return -1;
    installed = 1;
    return 0;
}
