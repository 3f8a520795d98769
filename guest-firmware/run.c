// SPDX-License-Identifier: Apache-2.0
/*
 * run.c - the workload dispatch: the end of both boots (main.c's device
 * tree boot and pvh.c's), once fw_params is set. Below both entries and
 * above the workloads, so that no workload calls back into a boot file.
 */
#include "fw.h"

/* Also the end of pvh.c's boot, where the parameters come from PVH instead. */
void fw_run(uint32_t index)
{
	const char *w = fw_params.workload;

	if (!fw_strcmp(w, "hello"))
		workload_hello(index);
	if (!fw_strcmp(w, "idle"))
		workload_idle(index);
	if (!fw_strcmp(w, "dirty"))
		workload_dirty(index);
	if (!fw_strcmp(w, "echo"))
		workload_echo(index);
	if (!fw_strcmp(w, "fault"))
		workload_fault(index);
	if (!fw_strcmp(w, "blk"))
		workload_blk(index);
	if (!fw_strcmp(w, "net"))
		workload_net(index);
	fw_log("unknown workload \"%s\" (expected hello, idle, dirty, echo, fault, blk or net)", w);
	fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
}
