/* SPDX-License-Identifier: Apache-2.0 */
/*
 * platform_io.c - the 8042 stub, the 0xCF9 reset control and the ACPI
 * sleep registers (platform_io.h): just enough for a guest to reset or
 * power off the machine the ways Linux tries (ACPI reset register, then
 * the keyboard controller; ACPI S5 for power-off).
 */
#include "platform_io.h"

#include "vm.h"

static void guest_reset(struct vm *vm, unsigned vcpu, const char *how)
{
	/* No in-process reboot: the VM ends and whoever started it decides. */
	vm_request_stop(vm, VM_END_GUEST_RESET, 0,
			"guest reset the machine (reboot) through %s, vCPU %u", how, vcpu);
}

static void sleep_control(struct vm *vm, unsigned vcpu, uint8_t v)
{
	unsigned typ = (v & PLATFORM_SLP_TYP_MASK) >> PLATFORM_SLP_TYP_SHIFT;

	/* Only S5 is in the DSDT; an OS asking for another state gets nothing. */
	if ((v & PLATFORM_SLP_EN) && typ == PLATFORM_SLP_TYP_S5)
		vm_request_stop(vm, VM_END_GUEST_POWEROFF, 0,
				"guest powered off (ACPI S5 through port 0x%x, vCPU %u)",
				PLATFORM_SLEEP_CONTROL_PORT, vcpu);
}

bool platform_io(struct vm *vm, unsigned vcpu, uint16_t port, bool is_write, uint8_t *data)
{
	switch (port) {
	case PLATFORM_I8042_DATA_PORT:
		if (!is_write)
			*data = 0;
		return true;
	case PLATFORM_I8042_STATUS_PORT:
		if (!is_write)
			*data = PLATFORM_I8042_STATUS;
		else if (*data == PLATFORM_I8042_CMD_RESET)
			guest_reset(vm, vcpu, "the 8042 reset command (0xfe to port 0x64)");
		return true;
	case PLATFORM_RESET_PORT:
		/*
		 * The chipset resets on RST_CPU's 0->1 edge; it clears itself, so
		 * every write with it set is an edge. Linux writes SYS_RST first,
		 * then SYS_RST|RST_CPU; the ACPI reset register writes 0x06 at once.
		 */
		if (!is_write)
			*data = 0;
		else if (*data & PLATFORM_RESET_CPU)
			guest_reset(vm, vcpu,
				    (*data & PLATFORM_RESET_SYS) ? "port 0xcf9 (hard reset)"
								 : "port 0xcf9 (soft reset)");
		return true;
	case PLATFORM_SLEEP_CONTROL_PORT:
		if (!is_write)
			*data = 0;
		else
			sleep_control(vm, vcpu, *data);
		return true;
	case PLATFORM_SLEEP_STATUS_PORT:
		/* WAK_STS never sets: nothing here wakes up once asleep. */
		if (!is_write)
			*data = 0;
		return true;
	default:
		return false;
	}
}
