/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* edfd-oci-hook's pure part: the OCI state a container engine gives a hook on standard input, the
 * bundle's config.json, and the hook's own configuration, each parsed from a buffer into what the
 * hook asks edfd, or into a message that names the problem. No I/O, no bus: the program
 * (edfd-oci-hook.c) reads the files and talks to edfd through libedfd.
 *
 * The annotations (edfd-oci-hook(8)):
 *   org.edfd.runtime    the container process's runtime, a duration with its unit ("2ms")
 *   org.edfd.period     its period ("10ms")
 *   org.edfd.deadline   its relative deadline (optional; the period when absent)
 *   org.edfd.group      the edfd group it is admitted under (optional; the configuration's
 *                       default-group when absent)
 *   org.edfd.startup    how long the container's program may run its start-up before it is
 *                       admitted anyway (optional, default 1s): it is admitted when it first
 *                       sleeps after the runtime's exec, or when this has passed; "0s" admits
 *                       the runtime's init at createRuntime, start-up charged
 * Any other org.edfd.* annotation is refused by name (a typo must not pass unnoticed). A container
 * without org.edfd.runtime, or a pod's sandbox (pause) container, which carries the pod's
 * annotations too, asks nothing. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define OCI_ANNOTATION_PREFIX "org.edfd."
#define OCI_STATE_MAX (1024 * 1024)   /* the most of standard input (or config.json) read */
#define OCI_STARTUP_DEFAULT_NS UINT64_C(1000000000)
#define OCI_STARTUP_MAX_NS (UINT64_C(3600) * 1000000000)

typedef struct OciRequest {
        char *id;            /* the container's id */
        pid_t pid;           /* its process (host pid namespace); 0 when the state has none */
        char *bundle;        /* the bundle directory (config.json is there) */
        char *status;        /* "creating", "created", "running", "stopped" */
        bool sandbox;        /* a pod's sandbox (pause) container: the hook leaves it alone */
        bool wanted;         /* org.edfd.runtime is present: a reservation is asked */
        uint64_t runtime, deadline, period;
        uint64_t startup;    /* org.edfd.startup, OCI_STARTUP_DEFAULT_NS when absent; 0: at once */
        char *group;         /* org.edfd.group, or NULL */
} OciRequest;

/* Parse the OCI state (runtime-spec state.md). With want_params, the org.edfd.* annotations are
 * parsed and checked (units, runtime <= deadline <= period); without (poststop), only the id, the
 * group and whether a reservation was asked. Returns 0, or -EINVAL with a malloc'd message in
 * *ret_error ("annotation org.edfd.runtime: \"2\" has no unit ..."), or -ENOMEM. */
int oci_state_parse(const char *json, size_t len, bool want_params, OciRequest *ret, char **ret_error);
void oci_request_done(OciRequest *r);

/* The bundle's config.json: refuses a process.scheduler that asks for SCHED_DEADLINE (the runtime
 * would set it without edfd's accounting, where it supports the field at all). Returns 0, or
 * -EINVAL with a malloc'd message, or -ENOMEM. */
int oci_spec_check(const char *json, size_t len, char **ret_error);

/* The hook's configuration (/etc/edfd/oci-hook.yaml): which groups containers may use, each with
 * the most one container may ask there, and the group used when a container names none:
 *
 *     default-group: containers
 *     groups:
 *       containers: 40%
 */
typedef struct HookGroup {
        char *name;
        uint64_t max_bw;     /* BW_UNIT is one CPU */
} HookGroup;

typedef struct HookConfig {
        char *default_group; /* NULL: a container must name its group */
        HookGroup *groups;
        size_t n_groups;
} HookConfig;

/* Parse the YAML text. Returns 0, or -EINVAL with a malloc'd message naming the line and the
 * problem, or -ENOMEM. An empty file is a configuration that opens no group to containers. */
int hook_config_parse(const char *text, size_t len, HookConfig *ret, char **ret_error);
void hook_config_done(HookConfig *c);
const HookGroup *hook_config_group(const HookConfig *c, const char *name);

/* The decision before edfd is asked: the group the request goes to (config default applied), and
 * whether containers may use it and ask that much. Returns 0 with the group in *ret_group (a
 * pointer into r or c), or -EACCES / -EINVAL with a malloc'd message. */
int hook_authorize(const HookConfig *c, const OciRequest *r, const char **ret_group, char **ret_error);

/* The edfd group that holds one container's reservation: GROUP/ID. Returns 0 with a malloc'd path,
 * -EINVAL with a malloc'd message when the id cannot name a group, or -ENOMEM. */
int hook_container_group(const char *group, const char *id, char **ret_path, char **ret_error);
