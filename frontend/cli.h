/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h - the `vmm` subcommands, called from main() on the main thread.
 * Each returns the process exit status: 0 success, 1 runtime failure, 2 bad
 * usage or configuration; `vmm run` returns the guest's own status, or
 * 128+signal when stopped by one, 0 when the guest powers off and
 * EXIT_GUEST_RESET when it resets the machine; `vmm migrate` returns 3 when
 * a postcopy migration paused (docs/api.md).
 */
#ifndef VMM_CLI_H
#define VMM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define EXIT_USAGE		2
#define EXIT_POSTCOPY_PAUSED	3
#define EXIT_SWITCHOVER_UNKNOWN 4 /* both sides paused: vmm migrate --recover settles it */
#define EXIT_GUEST_RESET	5 /* vmm run: the guest reset the machine (reboot) */

int cli_run(int argc, char **argv);
int cli_migrate(int argc, char **argv);
int cli_snapshot(int argc, char **argv);
/* `vmm cpu-features`: this host's CPU features, or a fleet's common set (cli_cpu.c). */
int cli_cpu_features(int argc, char **argv);
/* `vmm --version`: the release and every format's version (cli_version.c). */
int cli_version(void);
/* `vmm migrate --help` to f; `--list-params` to stdout: -1 done, 1 out of memory (migrate_help.c).
 */
void migrate_usage(FILE *f);
int migrate_list_params(void);
/* `vmm status|info|pause|resume|stop` (cli_vm.c): argv[0] is the verb. */
int cli_vm_verb(int argc, char **argv);
bool cli_is_vm_verb(const char *name);
/*
 * The API socket a client command talks to: *socket (--api-socket) if set,
 * else NAME's default ("vmm" when NULL) in buf, preferring
 * <name>.sock.incoming when incoming_first and it exists (a target's).
 * 0 when the socket exists; else prints why as "vmm PROG: ..." and returns
 * the exit status (2 for a name with no valid path, 1 for no socket).
 */
int cli_api_socket(const char *prog, const char *name, bool incoming_first, char *buf, size_t len,
		   const char **socket);

/*
 * Reads a config file plus --set overrides, the VM's keys into cfg and this
 * host's into fe; prints the error, returns exit status.
 */
struct vm_config;
struct frontend_config;
int cli_load_config(struct vm_config *cfg, struct frontend_config *fe, const char *path,
		    char **sets, int nsets);

#endif /* VMM_CLI_H */
