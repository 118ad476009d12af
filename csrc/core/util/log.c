/* log.c -- the logging sink. The sink pointer pair is guarded by a mutex so
 * that replacing it while other threads log is safe. */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER; /* guards sink, sink_ud */
static kin_log_sink sink;
static void *sink_ud;
static atomic_int level = -1;

static const char *names[] = {"error", "warn", "info", "debug"};

void kin_log_set_sink(kin_log_sink s, void *ud) {
  pthread_mutex_lock(&sink_lock);
  sink = s;
  sink_ud = ud;
  pthread_mutex_unlock(&sink_lock);
}

void kin_log_set_level(kin_log_level l) { atomic_store(&level, (int)l); }

int kin_log_enabled(kin_log_level l) {
  int cur = atomic_load(&level);
  if (cur < 0) {
    const char *e = getenv("KINFORMER_LOG_LEVEL");
    cur = (e && *e >= '0' && *e <= '3') ? *e - '0' : KIN_LOG_WARN;
    atomic_store(&level, cur);
  }
  return (int)l <= cur;
}

void kin_log(kin_log_level l, const char *component, const char *fmt, ...) {
  if (!kin_log_enabled(l)) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&sink_lock);
  if (sink)
    sink(sink_ud, l, component, buf);
  else
    fprintf(stderr, "kinformer %s [%s] %s\n", names[l], component, buf);
  pthread_mutex_unlock(&sink_lock);
}
