/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* edfctl: shared declarations of the verbs and their helpers.
 *
 * The shape follows systemd's oomctl: main() parses the command line into an Args, looks the verb
 * up in a table (which also says which options the verb accepts) and calls one function per verb.
 * A verb returns the process exit status directly (EdfctlExit): that number is the contract with
 * scripts, so every path decides it explicitly. Helpers below the verbs return negative errno as
 * everywhere else in edfd. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>


#include "basic/macro.h"
#include "basic/parse.h"
#include "core/calibration.h"
#include "core/duration.h"
#include "core/params.h"
#include "edfd/edfd.h"

typedef enum EdfctlExit {
        EDFCTL_EXIT_OK = 0,
        EDFCTL_EXIT_FAILED = 1,       /* refused or failed; the message names the reason */
        EDFCTL_EXIT_USAGE = 2,        /* bad usage or invalid input */
        EDFCTL_EXIT_UNREACHABLE = 3,  /* no system bus, or edfd not on it */
        EDFCTL_EXIT_EXEC_FAILED = 126, /* admit -- COMMAND: found but could not be executed */
        EDFCTL_EXIT_EXEC_NOT_FOUND = 127, /* admit -- COMMAND: not found */
} EdfctlExit;

/* Every option as a bit, so that a verb can list the ones it accepts. */
typedef enum ArgOption {
        ARG_JSON = 1u << 0,
        ARG_GROUP = 1u << 1,
        ARG_RUNTIME = 1u << 2,
        ARG_DEADLINE = 1u << 3,
        ARG_PERIOD = 1u << 4,
        ARG_TID = 1u << 5,
        ARG_PID = 1u << 6,
        ARG_RECLAIM = 1u << 7,
        ARG_OVERRUN_SIGNAL = 1u << 8,
        ARG_MOVE = 1u << 9,
        ARG_BANDWIDTH = 1u << 10,
        ARG_WORK = 1u << 11,
        ARG_MARGIN = 1u << 12,
        ARG_CPUS = 1u << 13,
        ARG_CAPACITY = 1u << 14,
        ARG_SERVER = 1u << 15,
        ARG_FIT = 1u << 16,
        ARG_SPLIT = 1u << 17,
        ARG_STARTUP = 1u << 18,
        ARG_OVERHEAD = 1u << 19,
        ARG_DURATION = 1u << 20,
        ARG_LIVE = 1u << 21,
        ARG_ORDER = 1u << 22,
        _ARG_OPTION_COUNT = 23,
} ArgOption;

/* The command line after getopt: raw option values, parsed by the verb that uses them (so that an
 * option a verb does not take is reported as such, not as a bad value). */
typedef struct Args {
        unsigned given;               /* ArgOption bits seen */
        const char *verb;             /* "admit", or "group" with subverb "create" */
        const char *subverb;
        char **positional;            /* after the verb (and subverb) */
        size_t n_positional;
        char **command;               /* after "--", NULL-terminated; NULL when there was no "--" */
        const char *group, *runtime, *deadline, *period, *tid, *pid, *bandwidth, *work, *margin;
        const char *cpus, *capacity, *server, *fit, *order; /* plan */
        const char *split;            /* admit --split TID2 */
        const char *startup;          /* admit --startup BOUND -- COMMAND */
        const char *overhead;         /* admit --work --overhead auto|none|DURATION */
        const char *duration;         /* calibrate --duration */
} Args;

/* The verbs: each returns an EdfctlExit. */
int verb_status(const Args *a);
int verb_list(const Args *a);
int verb_admit(const Args *a);
int verb_release(const Args *a);
int verb_group(const Args *a);
int verb_reload(const Args *a);
int verb_monitor(const Args *a);
int verb_plan(const Args *a);
int verb_calibrate(const Args *a);
int verb_run(const Args *a);

/* Admit thread tid of process pid once (Admit over the bus, the connection closed after): the id
 * in *ret_id (may be NULL). When tid is edfctl's own thread, libedfd waits for the answer without
 * sleeping (edfd may move the thread to another CPU). Returns an EdfctlExit, having printed why on
 * failure. */
int admit_one(uint32_t pid, uint32_t tid, const char *group, const DlParams *p, uint64_t flags, uint64_t *ret_id);
/* A libedfd request for thread tid of process pid with p's times, group and flags. Returns 0 with it
 * in *ret, or a negative errno after printing why. */
int request_make(uint32_t pid, uint32_t tid, const char *group, const DlParams *p, uint64_t flags,
                 edfd_request **ret);
/* The per-job overhead --overhead adds: its DURATION, none, or (auto, the default) the calibration
 * of this machine. A calibration that is missing or stale adds nothing and says so; one that cannot
 * be read is an error, so that a damaged file never goes unnoticed. Returns an EdfctlExit. */
int admit_overhead(const Args *a, uint64_t *ret);

/* --- edfctl-spawn.c: a command run as edfctl's child --- */

/* Fork; in the child run before_exec(userdata) (may be NULL; a negative errno stops the exec and is
 * reported as "cannot <before_what> for COMMAND"), then exec command. Once the child has executed
 * it (or failed to, reaped then), forward SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 to it and ignore
 * SIGINT and SIGQUIT. Returns EDFCTL_EXIT_OK with the child's pid, or the exit status to end with
 * (126, 127, 1) after printing why. */
int command_spawn(char **command, int (*before_exec)(void *userdata), void *userdata, const char *before_what,
                  pid_t *ret_pid);
/* The child was reaped: forward nothing more. */
void command_ended(void);
/* End as the child ended (a wait status): its exit status, or the same signal. */
int command_end_as(int status);

/* --- edfctl-startup.c --- */
/* admit --startup BOUND -- COMMAND: fork, exec, admit the child when it first sleeps (or after
 * bound_ns), forward signals, wait; returns the command's exit status (or ends by its signal). */
int admit_command_after_startup(char **command, uint64_t bound_ns, const char *group, const DlParams *p, uint64_t flags);

/* --- edfctl-calibrate.c: the per-job overhead on this machine (core/calibration.h) --- */

/* The calibration file: $EDFD_CALIBRATION when set, else EDFD_CALIBRATION_PATH. */
const char *calibration_path(void);
/* Read and check the calibration at path against this machine. Returns 1 with *ret filled when it
 * holds here; 0 when there is none (no file); -ESTALE when it was made on another machine, and
 * -EINVAL or another negative errno when it cannot be used: those three with why written in
 * why (path and line included). */
int calibration_load(const char *path, Calibration *ret, char *why, size_t size);

/* --- edfctl-bus.c: the connection and the daemon's errors, on libedfd --- */

/* edfd_open() (the system bus; DBUS_SYSTEM_BUS_ADDRESS honoured). Returns EDFCTL_EXIT_OK with the
 * handle in *ret, or prints why and returns EDFCTL_EXIT_UNREACHABLE. No round trip happens here. */
int edfctl_connect(edfd **ret);

/* Print why a libedfd call on e failed (r its negative errno; the D-Bus error name and message
 * from edfd_error_name() and edfd_error_message()) and return the exit status it means: the
 * daemon's errors as "edfctl: admission refused: <daemon message>", edfd or the bus unreachable as
 * EDFCTL_EXIT_UNREACHABLE with a hint. what names the call for messages that have no better
 * context ("Admit"). */
int edfctl_failed(edfd *e, int r, const char *what);

/* --- edfctl-parse.c: option values; pure, no I/O --- */

/* A process or thread id: 1 .. INT32_MAX, written as basic/parse.h's parse_u64() reads it. Returns
 * 0 or -EINVAL / -ERANGE with a static reason. */
int parse_pid(const char *s, uint32_t *ret, const char **ret_reason);
/* duration_parse() of an option's value s; else usage_invalid(what, s, its reason). */
int parse_duration_arg(const char *what, const char *s, uint64_t *ret);

/* Print "edfctl: invalid <what> "<value>": <reason>" and return EDFCTL_EXIT_USAGE. */
int usage_invalid(const char *what, const char *value, const char *reason);
/* Print "edfctl: <message>" with a pointer to the verb's help and return EDFCTL_EXIT_USAGE. */
_printf_(2, 3) int usage_error(const Args *a, const char *fmt, ...);

/* --- edfctl-proc.c: what edfctl reads from /proc --- */

/* The comm of thread tid of process pid, from /proc/PID/task/TID/comm, without the newline.
 * Returns 0, or negative errno (the thread is gone, or not visible). buf holds 16 bytes + NUL. */
int proc_thread_comm(uint32_t pid, uint32_t tid, char buf[static 17]);
/* The process (thread group) that thread tid belongs to. Returns 0 or negative errno (-ESRCH when
 * there is no such thread). */
int proc_thread_tgid(uint32_t tid, uint32_t *ret_pid);

/* --- edfctl-output.c: tables and number formatting --- */

/* Text from users or other processes (names, comms, paths, the daemon's messages) as a terminal
 * may show it: basic/escape.h's escape_terminal(). The result stays valid until TTY_SLOTS more
 * calls (so one printf() may take up to TTY_SLOTS of them); "" for NULL. */
#define TTY_SLOTS 8
const char *tty(const char *s);

typedef struct Table Table;

/* A table of n_columns columns whose first row is the header. Returns NULL without memory. */
Table *table_new(size_t n_columns);
/* Frees t; accepts NULL, returns NULL. */
Table *table_free(Table *t);
static inline void table_freep(Table **t) {
        table_free(*t);
}
/* Append one cell (copied) to the current row; rows fill left to right. printf-style. Returns 0
 * or -ENOMEM. */
_printf_(2, 3) int table_add(Table *t, const char *fmt, ...);
/* Right-align column (numbers). */
void table_align_right(Table *t, size_t column);
/* Blanks between columns (default 2). */
void table_set_separator(Table *t, size_t blanks);
/* Leave column out of the output (a column nobody has a value for). */
void table_hide(Table *t, size_t column);
/* Number of rows, header included. */
size_t table_rows(const Table *t);
/* Print row (0 is the header), padded to the widths of the whole table, without trailing blanks. */
void table_print_row(Table *t, size_t row, FILE *f);
/* Print every row. */
void table_print(Table *t, FILE *f);

/* bw_format() of have - used, printed with a minus sign when used exceeds have (over-committed);
 * "unlimited" when have is. For display only: JSON carries the exact values. Returns buf. */
char *bw_display_free(uint64_t have, uint64_t used, char buf[static DURATION_MAX]);

/* JSON (json-c) for the --json outputs. */
typedef struct json_object json_object;
/* A JSON string of text from users or other processes: escape_json() (invalid UTF-8 bytes become
 * U+FFFD). NULL (JSON null) for NULL, or without memory. */
json_object *json_text(const char *s);
/* A bandwidth as a fraction of one CPU; NULL (JSON null) for "unlimited" (UINT64_MAX). */
json_object *json_bw(uint64_t bw);
/* Add key -> value to o (value NULL: JSON null; o takes value even on failure). 0 or -ENOMEM. */
int json_add(json_object *o, const char *key, json_object *value);
#define JSON_ADD(o, key, value, r) ((r) = (r) ?: json_add((o), (key), (value)))
/* Print o pretty to stdout. 0 or -ENOMEM. */
int json_print(json_object *o);
