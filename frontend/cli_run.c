/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `vmm run`: its command line and config (file, --set, --incoming,
 * --api-socket, --timing, --log-*), the console, and the order of the
 * run: run_loop.c boots or receives the VM and runs it until it ends.
 * Errors in the command line and the config are plain lines; from the
 * moment the [log] settings are known, everything goes to the log (log.h).
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "frontend_config.h"
#include "hostport.h"
#include "log.h"
#include "run_loop.h"
#include "frontend_seccomp.h"
#include "snapshot.h"
#include "test_steps.h"
#include "vm.h"

static const char run_usage[] =
    "usage: vmm run CONFIG [--set section.key=value]... [options]\n"
    "       vmm run --incoming HOST:PORT [CONFIG] [options]\n"
    "       vmm run --restore DIR [--set section.key=value]... [options]\n"
    "       vmm run --restore-wait SOCKET [--set section.key=value]... [options]\n"
    "\n"
    "Boots the VM described by CONFIG (an INI file, see docs/config.md), or\n"
    "with --incoming waits for one VM migrated from another vmm (the stream\n"
    "describes the VM; CONFIG then only supplies this host's [console], [api],\n"
    "[migration], [sandbox] and [log], and binds the VM's devices: its [disk]\n"
    "path and [net] tap, or [migration] allow_disk_dirs and allow_taps; a\n"
    "device left unbound refuses the VM). With --restore the VM is the one a\n"
    "snapshot in DIR holds (vmm snapshot), memory and state, running on from\n"
    "where it was taken; --set changes host-local keys (a restored clone of a\n"
    "VM that still runs needs its own [vm] name or [api] socket). The\n"
    "guest's console goes to stdout (or [console] output). The VM serves its\n"
    "control API on a Unix socket (docs/api.md). vmm exits with the guest's\n"
    "exit status (a guest that writes the vmm exit port), 0 when the guest\n"
    "powers off (ACPI S5), 5 when it resets the machine (reboot: 8042 0xFE,\n"
    "port 0xCF9 or the ACPI reset register), 0 after the VM migrated away,\n"
    "128+N when stopped by signal N, 1 on a VMM or guest failure (a triple\n"
    "fault included), 2 on a bad command line or config, and 159 when a\n"
    "thread made a system call its seccomp filter forbids.\n"
    "\n"
    "The guest's console reads stdin ([console] input). A terminal is put in\n"
    "raw mode: Ctrl-A h lists the keys, Ctrl-A x quits (exit status 143, as\n"
    "SIGTERM), Ctrl-A d detaches.\n"
    "\n"
    "  --set section.key=value   override one config key (repeatable)\n"
    "  --initrd PATH             load PATH as the initrd (PVH module 0) of a\n"
    "                            PVH kernel; same as --set firmware.initrd=PATH\n"
    "  --incoming HOST:PORT      receive a migrating VM on this address\n"
    "  --restore DIR             restore the snapshot in DIR instead of booting\n"
    "  --lazy                    with --restore: start the guest at once and bring\n"
    "                            its pages in as it touches them (userfaultfd),\n"
    "                            the rest in the background\n"
    "  --restore-wait SOCKET     serve the API on SOCKET with no VM, ready, until\n"
    "                            PUT /api/v1/vm/restore {\"from\": DIR} restores the\n"
    "                            snapshot in DIR into this process (--set applies\n"
    "                            to its config, --lazy is the default)\n"
    "  --api-socket PATH         control API socket (default: per VM name)\n"
    "  --timing                  log start-up timings (with --restore-wait: from\n"
    "                            the restore request)\n"
    "  --log-format text|json    stderr as timestamped text lines (default) or\n"
    "                            JSON lines; same as --set log.format=...\n"
    "  --log-level LEVEL         error, warn, info (default) or debug; same as\n"
    "                            --set log.level=...\n"
    "  --seccomp on|off          seccomp filters per thread (default on, or\n"
    "                            [sandbox] seccomp); off is for debugging only\n"
    "  -h, --help                this text\n";

int cli_load_config(struct vm_config *cfg, struct frontend_config *fe, const char *path,
		    char **sets, int nsets)
{
	char err[CONFIG_ERR_MAX];

	config_defaults(cfg);
	frontend_config_defaults(fe);
	if (path && frontend_config_load_file(cfg, fe, path, err, sizeof(err))) {
		fprintf(stderr, "vmm: %s\n", err);
		return EXIT_USAGE;
	}
	for (int i = 0; i < nsets; i++) {
		if (frontend_config_set(cfg, fe, sets[i], err, sizeof(err))) {
			fprintf(stderr, "vmm: %s\n", err);
			return EXIT_USAGE;
		}
	}
	/* The TLS trio before the firmware, as when config_validate() checked it. */
	if (frontend_config_validate(fe, err, sizeof(err)) ||
	    config_default_firmware(cfg, err, sizeof(err)) ||
	    config_validate(cfg, err, sizeof(err))) {
		fprintf(stderr, "vmm: %s\n", err);
		return EXIT_USAGE;
	}
	return 0;
}

/*
 * --restore: the snapshot is opened and checked whole (a corrupt,
 * truncated or foreign one is refused here, before any VM exists), its
 * config read, then the --set overrides applied. Prints the error and
 * returns the exit status (1: the snapshot, 2: a --set).
 */
static int restore_config(const char *dir, struct snapshot_image **img, struct vm_config *cfg,
			  struct frontend_config *fe, char **sets, int nsets)
{
	char err[CONFIG_ERR_MAX + 512], origin[PATH_MAX + 16];
	int ret = snapshot_image_open(dir, img, err, sizeof(err));

	if (ret) {
		fprintf(stderr, "vmm run: --restore: %s\n", err);
		return 1;
	}
	config_defaults(cfg);
	frontend_config_defaults(fe);
	snprintf(origin, sizeof(origin), "%s/state", dir);
	/* Its [console] output and [api] socket are the snapshotted VM's, as --set leaves them. */
	if (frontend_config_load_text(cfg, fe, snapshot_image_config(*img),
				      strlen(snapshot_image_config(*img)), origin, err,
				      sizeof(err))) {
		fprintf(stderr, "vmm run: --restore: %s\n", err);
		goto fail;
	}
	for (int i = 0; i < nsets; i++)
		if (frontend_config_set(cfg, fe, sets[i], err, sizeof(err))) {
			fprintf(stderr, "vmm: %s\n", err);
			snapshot_image_close(*img);
			*img = NULL;
			return EXIT_USAGE;
		}
	if (!frontend_config_validate(fe, err, sizeof(err)) &&
	    !config_validate(cfg, err, sizeof(err)))
		return 0;
	fprintf(stderr, "vmm: %s\n", err);
fail:
	snapshot_image_close(*img);
	*img = NULL;
	return 1;
}

static int open_console(struct vmm_log *log, const struct frontend_config *fe)
{
	int fd;

	if (!strcmp(fe->console_output, "stdout"))
		return dup(STDOUT_FILENO);
	fd = open(fe->console_output, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		log_msg(log, LOG_LEVEL_ERROR, "[console] output: cannot open '%s': %s",
			fe->console_output, strerror(errno));
	return fd;
}

int cli_run(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"set", required_argument, NULL, 's'},
	    {"initrd", required_argument, NULL, 'r'},
	    {"incoming", required_argument, NULL, 'i'},
	    {"restore", required_argument, NULL, 'R'},
	    {"lazy", no_argument, NULL, 'z'},
	    {"restore-wait", required_argument, NULL, 'W'},
	    {"api-socket", required_argument, NULL, 'a'},
	    {"timing", no_argument, NULL, 't'},
	    {"seccomp", required_argument, NULL, 'S'},
	    {"log-format", required_argument, NULL, 'F'},
	    {"log-level", required_argument, NULL, 'L'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	char **sets = calloc((size_t)argc + 1, sizeof(char *));
	char initrd_set[PATH_MAX + 32] = "";
	const char *incoming_addr = NULL, *api_socket = NULL, *cfg_path = NULL, *seccomp = NULL,
		   *restore_dir = NULL, *restore_wait = NULL;
	struct snapshot_image *img = NULL;
	int nsets = 0, opt, status, console_fd, log_format = -1, log_level = -1;
	bool timing = false;
	struct vm_config cfg;
	struct run_ctx ctx = {0};
	/* This host's sections of the config: the process's, for every VM it runs. */
	struct frontend_config *fe = &ctx.rt.fe;
	char err[512] = "";
	uint64_t t0 = now_ns();

	if (!sets)
		return 1;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sets[nsets++] = optarg;
			break;
		case 'r':
			/* after every --set, wherever it stands: the option wins */
			if ((size_t)snprintf(initrd_set, sizeof(initrd_set), "firmware.initrd=%s",
					     optarg) >= sizeof(initrd_set)) {
				fprintf(stderr, "vmm run: --initrd: path too long\n");
				free(sets);
				return EXIT_USAGE;
			}
			break;
		case 'i':
			incoming_addr = optarg;
			break;
		case 'R':
			restore_dir = optarg;
			break;
		case 'z':
			ctx.lazy = true;
			break;
		case 'W':
			restore_wait = optarg;
			break;
		case 'a':
			api_socket = optarg;
			break;
		case 't':
			timing = true;
			break;
		case 'S':
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(stderr,
					"vmm run: --seccomp: expected on or off, not '%s'\n",
					optarg);
				free(sets);
				return EXIT_USAGE;
			}
			seccomp = optarg;
			break;
		case 'F':
			log_format = log_format_from_name(optarg);
			if (log_format < 0) {
				fprintf(stderr,
					"vmm run: --log-format: expected text or json, not '%s'\n",
					optarg);
				free(sets);
				return EXIT_USAGE;
			}
			break;
		case 'L':
			log_level = log_level_from_name(optarg);
			if (log_level < 0) {
				fprintf(
				    stderr,
				    "vmm run: --log-level: expected error, warn, info or debug, "
				    "not '%s'\n",
				    optarg);
				free(sets);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			fputs(run_usage, stdout);
			free(sets);
			return 0;
		default:
			fputs(run_usage, stderr);
			free(sets);
			return EXIT_USAGE;
		}
	}
	if (initrd_set[0])
		sets[nsets++] = initrd_set;
	if (optind == argc - 1)
		cfg_path = argv[optind];
	if (ctx.lazy && !restore_dir && !restore_wait) {
		fprintf(stderr,
			"vmm run: --lazy goes with --restore DIR or --restore-wait SOCKET\n");
		free(sets);
		return EXIT_USAGE;
	}
	if (restore_wait && (cfg_path || incoming_addr || restore_dir || api_socket)) {
		fprintf(stderr,
			"vmm run: --restore-wait takes no CONFIG, --incoming, --restore or "
			"--api-socket: it serves its API on SOCKET, and the snapshot holds the "
			"VM's config\n");
		free(sets);
		return EXIT_USAGE;
	}
	if (restore_dir && (cfg_path || incoming_addr)) {
		fprintf(stderr,
			"vmm run: --restore takes no CONFIG%s: the snapshot holds the VM's "
			"config (--set changes keys)\n",
			incoming_addr ? " and no --incoming" : "");
		free(sets);
		return EXIT_USAGE;
	}
	if (optind < argc - 1 || (!cfg_path && !incoming_addr && !restore_dir && !restore_wait)) {
		fprintf(stderr, "vmm run: expected one CONFIG file%s\n%s",
			incoming_addr ? " at most" : "", run_usage);
		free(sets);
		return EXIT_USAGE;
	}
	if (incoming_addr) {
		if (hostport_check(incoming_addr)) {
			fprintf(stderr,
				"vmm run: --incoming: bad address '%s' (expected HOST:PORT or "
				"unix:PATH)\n",
				incoming_addr);
			free(sets);
			return EXIT_USAGE;
		}
		/*
		 * The stream brings the VM; this host's [console], [api],
		 * [migration], [sandbox], [log] and device bindings come from here.
		 */
		config_defaults(&cfg);
		frontend_config_defaults(fe);
		status = 0;
		if (cfg_path && frontend_config_load_file(&cfg, fe, cfg_path, err, sizeof(err)))
			status = EXIT_USAGE;
		for (int i = 0; !status && i < nsets; i++)
			if (frontend_config_set(&cfg, fe, sets[i], err, sizeof(err)))
				status = EXIT_USAGE;
		if (status)
			fprintf(stderr, "vmm: %s\n", err);
	} else if (restore_dir) {
		status = restore_config(restore_dir, &img, &cfg, fe, sets, nsets);
		/* Populated RAM takes no userfaultfd faults: the pages would never come in. */
		if (!status && ctx.lazy && cfg.prealloc) {
			fprintf(stderr,
				"vmm run: --lazy: [vm] prealloc is on, which fills RAM before "
				"the pages can come in (--set vm.prealloc=false)\n");
			snapshot_image_close(img);
			img = NULL;
			status = EXIT_USAGE;
		}
	} else if (restore_wait) {
		/* The snapshot brings the config; --set applies to it, and now to [log] and
		 * [sandbox]. */
		config_defaults(&cfg);
		frontend_config_defaults(fe);
		status = 0;
		for (int i = 0; !status && i < nsets; i++)
			if (frontend_config_set(&cfg, fe, sets[i], err, sizeof(err)))
				status = EXIT_USAGE;
		if (status)
			fprintf(stderr, "vmm: %s\n", err);
		ctx.wait_sets = sets;
		ctx.wait_nsets = nsets;
		ctx.wait_lazy = ctx.lazy;
		sets = NULL; /* the request's restore applies them: freed at the end */
	} else {
		status = cli_load_config(&cfg, fe, cfg_path, sets, nsets);
	}
	free(sets);
	if (status) {
		free(ctx.wait_sets);
		return status;
	}
	if (api_socket) {
		if (strlen(api_socket) >= sizeof(fe->api_socket)) {
			fprintf(stderr, "vmm run: --api-socket: path too long\n");
			return EXIT_USAGE;
		}
		strcpy(fe->api_socket, api_socket);
	}
	if (seccomp)
		cfg.seccomp = !strcmp(seccomp, "on");
	if (log_format >= 0)
		fe->log_format = (enum log_format)log_format;
	if (log_level >= 0)
		fe->log_level = (enum log_level)log_level;
	/* From here on, the log: a target learns its VM's name from the stream. */
	log_init(&ctx.rt.log, fe->log_format, fe->log_level, STDERR_FILENO);
	if (!incoming_addr && !restore_wait)
		log_set_vm(&ctx.rt.log, cfg.name);
	/* Before any thread starts: the filters and the SIGSYS handler. */
	if (cfg.seccomp && vmm_seccomp_init(err, sizeof(err))) {
		log_msg(&ctx.rt.log, LOG_LEVEL_ERROR, "%s (--seccomp off runs without filters)",
			err);
		log_destroy(&ctx.rt.log);
		return 1;
	}
	console_fd = open_console(&ctx.rt.log, fe);
	if (console_fd < 0) {
		log_destroy(&ctx.rt.log);
		return EXIT_USAGE;
	}

	signal(SIGPIPE, SIG_IGN);
	/*
	 * SIGINT stops us even when the shell started us with it ignored. A
	 * booting VM, like a waiting target, holds SIGINT and SIGTERM (blocked,
	 * in every thread started from here) until the event loop handles them
	 * (run_loop), so one that comes during the boot stops the VM cleanly,
	 * and one that comes while a target waits or receives ends it cleanly
	 * (its API socket removed, the source told and keeping its VM).
	 */
	signal(SIGINT, SIG_DFL);
	{
		sigset_t stop;

		sigemptyset(&stop);
		sigaddset(&stop, SIGINT);
		sigaddset(&stop, SIGTERM);
		pthread_sigmask(SIG_BLOCK, &stop, NULL);
	}
	/* Once, for the whole process; the steps it may stop at are the engine's. */
	test_hooks_read(&ctx.rt.hooks, test_step_names(), TEST_STEP_COUNT);
	ctx.rt.base = event_base_new();
	if (!ctx.rt.base) {
		log_msg(&ctx.rt.log, LOG_LEVEL_ERROR, "cannot create the event loop");
		close(console_fd);
		log_destroy(&ctx.rt.log);
		return 1;
	}
	ctx.start_ns = t0;
	if (incoming_addr) {
		status = run_incoming(&ctx, incoming_addr, &cfg, console_fd, err, sizeof(err));
	} else if (restore_wait) {
		ctx.seccomp = cfg.seccomp;
		ctx.console_fd = console_fd;
		status = run_restore_wait(&ctx, restore_wait, err, sizeof(err));
	} else {
		status = run_boot(&ctx, &cfg, img, console_fd, err, sizeof(err));
	}
	snapshot_image_close(img); /* the VM holds what it needs */
	if (status) {
		log_msg(&ctx.rt.log, LOG_LEVEL_ERROR, "%s: %s%s",
			incoming_addr  ? "incoming migration"
			: restore_wait ? "restore-wait"
				       : cfg.name,
			err[0] ? "" : "error ", err[0] ? err : strerror(-status));
		status = 1;
		if (ctx.rt.vm)
			vm_request_stop(ctx.rt.vm, VM_END_ERROR, 1, "%s", err);
	} else {
		uint64_t setup_ns = now_ns() - t0;

		if (!incoming_addr && !restore_wait)
			log_vm(&ctx.rt.log, LOG_LEVEL_DEBUG,
			       "booted: %u vCPU%s, %llu MiB, API socket %s", cfg.vcpus,
			       cfg.vcpus == 1 ? "" : "s", (unsigned long long)(cfg.memory >> 20),
			       ctx.api_path);
		status = run_loop(&ctx);
		if (timing && ctx.rt.vm) {
			uint64_t first_run = vm_first_run_ns(ctx.rt.vm);
			struct rusage ru;

			getrusage(RUSAGE_SELF, &ru);
			log_msg(&ctx.rt.log, LOG_LEVEL_INFO,
				"timing: setup_ms=%.3f first_run_ms=%.3f first_byte_ms=%.3f "
				"total_ms=%.3f max_rss_kib=%ld",
				setup_ns / 1e6, first_run ? (first_run - ctx.start_ns) / 1e6 : -1.0,
				ctx.first_byte_ns ? (ctx.first_byte_ns - ctx.start_ns) / 1e6 : -1.0,
				(now_ns() - ctx.start_ns) / 1e6, ru.ru_maxrss);
		}
	}
	run_release(&ctx);
	free(ctx.wait_sets);
	close(console_fd);
	event_base_free(ctx.rt.base);
	log_destroy(&ctx.rt.log);
	return status;
}
