/* What the crash report of seer_crash.c reads: per thread, the event being
 * handled and the env copy being stepped.  The runtime and the vector pool
 * note them with one plain store each around the call that may crash: the
 * report runs on the crashing thread (SIGSEGV and its kin are delivered to
 * the thread that faulted), so no ordering with other threads is needed. */
#ifndef SEER_CRASH_INTERNAL_H
#define SEER_CRASH_INTERNAL_H

#include <stdint.h>

#include "seer/seer_types.h"

extern _Thread_local const seer_event *seer_crash_event;
extern _Thread_local int32_t seer_crash_copy; /* -1: no native copy step running */

#endif
