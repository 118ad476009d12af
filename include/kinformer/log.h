/* log.h -- leveled logging with a replaceable sink. The default sink writes
 * one line to stderr for levels at or below the configured verbosity; the
 * Lua binding installs its own sink. Thread-safe. */
#ifndef KIN_LOG_H
#define KIN_LOG_H

typedef enum { KIN_LOG_ERROR = 0, KIN_LOG_WARN = 1, KIN_LOG_INFO = 2, KIN_LOG_DEBUG = 3 } kin_log_level;

typedef void (*kin_log_sink)(void *ud, kin_log_level level, const char *component,
                             const char *msg);

/* Installs sink (NULL restores the stderr sink). */
void kin_log_set_sink(kin_log_sink sink, void *ud);
/* Messages above level are dropped before formatting. Default: WARN, or
 * the value of $KINFORMER_LOG_LEVEL (0-3). */
void kin_log_set_level(kin_log_level level);
int kin_log_enabled(kin_log_level level);

/* Formats and emits one message; component names the subsystem
 * ("delta_fifo", "listener", ...). Never fails. */
void kin_log(kin_log_level level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
