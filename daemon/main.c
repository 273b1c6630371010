/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "capacity.h"
#include "conf.h"
#include "log.h"
#include "manager.h"

extern const char edfd_default_config[];

static void help(void) {
        printf("Usage: edfd [OPTIONS]\n"
               "\n"
               "Grants SCHED_DEADLINE bandwidth under hierarchical admission control, over D-Bus\n"
               "(%s on the system bus).\n"
               "\n"
               "  -h --help                 Show this help and exit\n"
               "     --version              Show the version and exit\n"
               "  -c --config FILE          Read the configuration from FILE (default %s;\n"
               "                            if that does not exist, the embedded default)\n"
               "  -t --check-config [FILE]  Check FILE (default: the --config file), print the\n"
               "                            group tree and exit 0, or print every error and exit 1\n"
               "     --embedded-config      Use the embedded default configuration\n"
               "     --print-default-config Print the embedded default configuration and exit\n"
               "     --cgroup-root DIR      Bind groups to cgroups under DIR (overrides cgroup-root:)\n"
               "     --state-dir DIR        Keep the state in DIR (default /run/edfd)\n"
               "     --log-level LEVEL      err, warning, notice, info (default) or debug\n"
               "     --no-throttle-count    Do not load the BPF program that counts throttles\n"
               "\n"
               "Signals: SIGTERM and SIGINT stop edfd (admitted threads keep their parameters),\n"
               "SIGHUP reloads the configuration. See edfd(8).\n",
               "org.edfd.Admission1", EDFD_CONFIG_PATH);
}

int main(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100, ARG_CGROUP_ROOT, ARG_STATE_DIR, ARG_LOG_LEVEL, ARG_PRINT_DEFAULT, ARG_EMBEDDED,
               ARG_NO_THROTTLE_COUNT };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "config", required_argument, NULL, 'c' },
                { "check-config", no_argument, NULL, 't' },
                { "print-default-config", no_argument, NULL, ARG_PRINT_DEFAULT },
                { "embedded-config", no_argument, NULL, ARG_EMBEDDED },
                { "cgroup-root", required_argument, NULL, ARG_CGROUP_ROOT },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "no-throttle-count", no_argument, NULL, ARG_NO_THROTTLE_COUNT },
                {},
        };
        ManagerOptions opts = {};
        bool check = false;
        Manager *m = NULL;
        int c, r;

        while ((c = getopt_long(argc, argv, "hc:t", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case ARG_VERSION:
                        printf("edfd %s\n", EDFD_VERSION);
                        return EXIT_SUCCESS;
                case 'c':
                        opts.config_path = optarg;
                        break;
                case 't':
                        check = true;
                        break;
                case ARG_EMBEDDED:
                        opts.embedded_config = true;
                        break;
                case ARG_NO_THROTTLE_COUNT:
                        opts.no_throttle_count = true;
                        break;
                case ARG_PRINT_DEFAULT:
                        fputs(edfd_default_config, stdout);
                        return EXIT_SUCCESS;
                case ARG_CGROUP_ROOT:
                        if (optarg[0] != '/') {
                                fprintf(stderr, "edfd: --cgroup-root needs an absolute path, not \"%s\"\n", optarg);
                                return 2;
                        }
                        opts.cgroup_root = optarg;
                        break;
                case ARG_STATE_DIR:
                        if (optarg[0] != '/') {
                                fprintf(stderr, "edfd: --state-dir needs an absolute path, not \"%s\"\n", optarg);
                                return 2;
                        }
                        opts.state_dir = optarg;
                        break;
                case ARG_LOG_LEVEL:
                        r = log_level_from_string(optarg);
                        if (r < 0) {
                                fprintf(stderr, "edfd: unknown log level \"%s\" (err, warning, notice, info, debug)\n",
                                        optarg);
                                return 2;
                        }
                        log_max_level = r;
                        break;
                default:
                        return 2;
                }

        if (opts.embedded_config && opts.config_path) {
                fprintf(stderr, "edfd: --config and --embedded-config exclude each other\n");
                return 2;
        }
        if (check) {
                const char *path = opts.config_path ? opts.config_path : EDFD_CONFIG_PATH;
                KernelCapacity kc;
                FILE *f;

                if (optind + 1 < argc) {
                        fprintf(stderr, "edfd: --check-config takes one file\n");
                        return 2;
                }
                if (optind < argc && opts.embedded_config) {
                        fprintf(stderr, "edfd: --check-config FILE and --embedded-config exclude each other\n");
                        return 2;
                }
                if (optind < argc)
                        path = argv[optind];
                if (opts.embedded_config) {
                        /* Check the embedded default against this machine. */
                        path = "(embedded edfd.yaml)";
                        f = fmemopen((void *) edfd_default_config, strlen(edfd_default_config), "r");
                } else
                        f = fopen(path, "re");
                if (!f) {
                        fprintf(stderr, "edfd: cannot open %s: %s\n", path, strerror(errno));
                        return EXIT_FAILURE;
                }
                if (capacity_read(&kc) < 0) {
                        /* Not on Linux with /proc: check against a generous capacity. */
                        kc = (KernelCapacity) { .usable = UINT64_MAX, .limits = DL_LIMITS_DEFAULT };
                }
                r = conf_check_print(f, path, kc.usable, &kc.limits, stdout, stderr);
                fclose(f);
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        if (optind < argc) {
                fprintf(stderr, "edfd: unexpected argument \"%s\" (see --help)\n", argv[optind]);
                return 2;
        }

        r = manager_new(&m, &opts);
        if (r < 0) {
                sd_notifyf(false, "ERRNO=%d", -r);
                return EXIT_FAILURE;
        }
        r = manager_start(m);
        if (r < 0) {
                log_error("Failed to start: %s", strerror(-r));
                sd_notifyf(false, "ERRNO=%d", -r);
                manager_free(m);
                return EXIT_FAILURE;
        }
        r = manager_run(m);
        if (r < 0)
                log_error("Event loop failed: %s", strerror(-r));
        log_info("Stopping; admitted threads keep their parameters");
        manager_free(m);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
