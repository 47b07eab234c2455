/* A crash report for a process that dies of a signal inside SEER's C code:
 * which event a handler was handling (kind, entity, time) and which env copy
 * a native copy step was stepping, written to stderr before the process
 * dies as it would have.  seer.vector's process workers install it, so the
 * parent's WorkerError (which quotes the worker's stderr) names them.
 *
 * Plain declarations: this header is read by cffi's cdef. */
#ifndef SEER_CRASH_H
#define SEER_CRASH_H

#include <stdint.h>

/* Install the report for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT, in
 * front of the handlers installed before it (Python's faulthandler, when it
 * is enabled after this call, reports first and then re-raises into this
 * one).  Returns 0, or -1 when sigaction refused (errno says why). */
int seer_crash_report_install(void);

#endif
