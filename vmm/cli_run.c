/* SPDX-License-Identifier: Apache-2.0 */
/* `vmm run`: boot a VM from a config file and wait for it to end. */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "vm.h"

static const char run_usage[] =
	"usage: vmm run CONFIG [--set section.key=value]... [--timing]\n"
	"\n"
	"Boots the VM described by CONFIG (an INI file, see docs/config.md). The\n"
	"guest's console goes to stdout (or [console] output). vmm exits with the\n"
	"guest's exit status, 128+N when stopped by signal N, 1 on a VMM or guest\n"
	"failure, and 2 on a bad command line or configuration.\n"
	"\n"
	"  --set section.key=value   override one config key (repeatable)\n"
	"  --timing                  print start-up timings on stderr\n"
	"  -h, --help                this text\n";

int cli_load_config(struct vm_config *cfg, const char *path, char **sets, int nsets)
{
	char err[CONFIG_ERR_MAX];

	config_defaults(cfg);
	if (path && config_load_file(cfg, path, err, sizeof(err))) {
		fprintf(stderr, "vmm: %s\n", err);
		return EXIT_USAGE;
	}
	for (int i = 0; i < nsets; i++) {
		if (config_set(cfg, sets[i], err, sizeof(err))) {
			fprintf(stderr, "vmm: %s\n", err);
			return EXIT_USAGE;
		}
	}
	if (config_validate(cfg, err, sizeof(err))) {
		fprintf(stderr, "vmm: %s\n", err);
		return EXIT_USAGE;
	}
	return 0;
}

static int open_console(const struct vm_config *cfg)
{
	int fd;

	if (!strcmp(cfg->console_output, "stdout"))
		return dup(STDOUT_FILENO);
	fd = open(cfg->console_output, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		fprintf(stderr, "vmm: [console] output: cannot open '%s': %s\n",
			cfg->console_output, strerror(errno));
	return fd;
}

struct run_ctx {
	struct vm *vm;
	struct event_base *base;
	int signo;
	uint64_t first_byte_ns;
};

static void on_vm_end(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *ctx = arg;

	(void)fd;
	(void)what;
	event_base_loopbreak(ctx->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct run_ctx *ctx = arg;

	(void)what;
	ctx->signo = (int)sig;
	vm_request_stop(ctx->vm, VM_END_SIGNAL, 128 + (int)sig, "stopped by %s",
			sig == SIGINT ? "SIGINT" : "SIGTERM");
}

static void on_first_byte(void *opaque)
{
	struct run_ctx *ctx = opaque;

	ctx->first_byte_ns = vm_now_ns();
}

/* Runs the VM's event loop until the VM ends; returns the exit status. */
static int run_loop(struct run_ctx *ctx)
{
	struct vm *vm = ctx->vm;
	struct event *ev_end, *ev_int, *ev_term;
	int status;

	ev_end = event_new(ctx->base, vm->end_fd, EV_READ, on_vm_end, ctx);
	ev_int = evsignal_new(ctx->base, SIGINT, on_signal, ctx);
	ev_term = evsignal_new(ctx->base, SIGTERM, on_signal, ctx);
	if (!ev_end || !ev_int || !ev_term || event_add(ev_end, NULL) || event_add(ev_int, NULL) ||
	    event_add(ev_term, NULL)) {
		vm_request_stop(vm, VM_END_ERROR, 1, "cannot set up the event loop");
	} else {
		event_base_dispatch(ctx->base);
	}
	vm_join(vm);
	status = vm->end_status;
	if (vm->end_reason == VM_END_ERROR)
		fprintf(stderr, "vmm: %s: %s\n", vm->cfg.name, vm->end_message);
	else if (vm->end_reason == VM_END_SIGNAL)
		fprintf(stderr, "vmm: %s: %s\n", vm->cfg.name, vm->end_message);
	else if (vm->end_reason == VM_END_GUEST_EXIT && status != 0)
		fprintf(stderr, "vmm: %s: %s\n", vm->cfg.name, vm->end_message);
	event_free(ev_end);
	event_free(ev_int);
	event_free(ev_term);
	return status;
}

int cli_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"set", required_argument, NULL, 's'},
		{"timing", no_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char **sets = calloc((size_t)argc, sizeof(char *));
	int nsets = 0, opt, status, console_fd;
	bool timing = false;
	struct vm_config cfg;
	struct run_ctx ctx = {0};
	struct vm *vm = NULL;
	char err[512];
	uint64_t t0 = vm_now_ns();

	if (!sets)
		return 1;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sets[nsets++] = optarg;
			break;
		case 't':
			timing = true;
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
	if (optind != argc - 1) {
		fprintf(stderr, "vmm run: expected exactly one CONFIG file\n%s", run_usage);
		free(sets);
		return EXIT_USAGE;
	}
	status = cli_load_config(&cfg, argv[optind], sets, nsets);
	free(sets);
	if (status)
		return status;
	console_fd = open_console(&cfg);
	if (console_fd < 0)
		return EXIT_USAGE;

	/* SIGINT/SIGTERM reach the main thread's event loop, never a vCPU. */
	signal(SIGPIPE, SIG_IGN);
	vm = calloc(1, sizeof(*vm));
	ctx.vm = vm;
	ctx.base = event_base_new();
	if (!vm || !ctx.base) {
		fprintf(stderr, "vmm: out of memory\n");
		return 1;
	}
	status = vm_create(vm, &cfg, console_fd, err, sizeof(err));
	vm->start_ns = t0; /* timings count from the command's start */
	if (!status)
		status = vm_boot_setup(vm, err, sizeof(err));
	vm->serial.on_first_byte = on_first_byte;
	vm->serial.opaque = &ctx;
	if (!status)
		status = vm_start(vm, err, sizeof(err));
	if (status) {
		fprintf(stderr, "vmm: %s: %s\n", cfg.name, err);
		status = 1;
	} else {
		uint64_t setup_ns = vm_now_ns() - vm->start_ns;

		status = run_loop(&ctx);
		if (timing) {
			struct rusage ru;

			getrusage(RUSAGE_SELF, &ru);
			fprintf(stderr,
				"vmm: timing: setup_ms=%.3f first_run_ms=%.3f first_byte_ms=%.3f "
				"total_ms=%.3f max_rss_kib=%ld\n",
				setup_ns / 1e6,
				vm->first_run_ns ? (vm->first_run_ns - vm->start_ns) / 1e6 : -1.0,
				ctx.first_byte_ns ? (ctx.first_byte_ns - vm->start_ns) / 1e6 : -1.0,
				(vm_now_ns() - vm->start_ns) / 1e6, ru.ru_maxrss);
		}
	}
	vm_destroy(vm);
	free(vm);
	close(console_fd);
	event_base_free(ctx.base);
	return status;
}

int cli_bench(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vmm bench: use the programs under bench/ (bench_boot)\n");
	return EXIT_USAGE;
}
