/* Plain-function wrappers around Valgrind's client-request macros, for
   perflab's src/valgrind.rs. The headers beside this file are vendored from
   Valgrind 3.19.0 (see README.md); each macro is a short no-op instruction
   sequence that Valgrind's JIT recognises, so outside Valgrind every function
   here does nothing and perflab_valgrind_running() returns 0. */
#include <stddef.h>

#include "valgrind.h"
#include "callgrind.h"

unsigned int perflab_valgrind_running(void) {
    return (unsigned int)RUNNING_ON_VALGRIND;
}

void perflab_callgrind_start_instrumentation(void) {
    CALLGRIND_START_INSTRUMENTATION;
}

void perflab_callgrind_stop_instrumentation(void) {
    CALLGRIND_STOP_INSTRUMENTATION;
}

void perflab_callgrind_zero_stats(void) {
    CALLGRIND_ZERO_STATS;
}

void perflab_callgrind_toggle_collect(void) {
    CALLGRIND_TOGGLE_COLLECT;
}

/* reason: a NUL-terminated string, or NULL for a dump without a reason. */
void perflab_callgrind_dump_stats(const char *reason) {
    if (reason == NULL) {
        CALLGRIND_DUMP_STATS;
    } else {
        CALLGRIND_DUMP_STATS_AT(reason);
    }
}
