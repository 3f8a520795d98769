/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vmm_abi.h - the contract between the vmm monitor and its guest firmware.
 *
 * Self-contained C99: included by the host (vmm/) and by the freestanding
 * guest (guest-firmware/). Change VMM_ABI_VERSION whenever anything here
 * changes meaning; the host refuses a firmware whose note carries another
 * version.
 *
 * Boot protocol (native vmm firmware):
 *   - The firmware is an ELF64 x86_64 executable with a PT_NOTE segment
 *     holding a note named "vmm" of type VMM_NOTE_TYPE_ABI whose 4-byte
 *     descriptor is VMM_ABI_VERSION.
 *   - Every vCPU starts at e_entry in 64-bit long mode, CPL 0, interrupts
 *     disabled, with all of guest RAM identity mapped (2 MiB pages, RWX).
 *   - %rdi = guest-physical address of the flattened device tree,
 *     %rsi = vCPU index (0 .. n-1), %rsp = top of a private 16-byte
 *     aligned stack of VMM_VCPU_STACK_SIZE bytes for this vCPU.
 *   - Console: a 16550 UART at VMM_COM1_PORT (write THR, poll LSR.THRE).
 *   - Exit: a 32-bit OUT of a status to VMM_EXIT_PORT stops the whole VM;
 *     `vmm run` exits with (status & 0xff).
 *
 * Device tree (all integers big-endian, u64 written as two cells; the root
 * has #address-cells = #size-cells = 2; at most 1024 cpus and memory nodes):
 *   /memory@<gpa>     device_type = "memory", reg = <gpa size>, one node
 *                     per memslot
 *   /cpus             vmm,tsc-khz = <u32>; /cpus/cpu@N reg = <N>
 *   /serial@3f8       compatible = "ns16550a"
 *   /virtio_mmio@<gpa> compatible = "virtio,mmio", reg = <gpa 0x1000>,
 *                     interrupts = <irq>: one per virtio device ([disk],
 *                     [net]), from 0xd0000000 and IRQ 5 up; the DeviceID
 *                     register says which (docs/devices.md). The same
 *                     devices are on bootargs as virtio_mmio.device=...
 *   /chosen           stdout-path, bootargs (cmdline), and:
 *     vmm,abi-version = <u32>
 *     vmm,workload    = "hello" | "idle" | "dirty" | "echo" | "fault" | "blk" |
 *                       "net" (blk and net need their device; net takes its
 *                       address from bootargs' ip=A.B.C.D)
 *     vmm,working-set = <u64>  bytes (multiple of 4096)
 *     vmm,dirty-rate  = <u64>  pages per second for the whole VM, 0 = max
 *     vmm,passes      = <u64>  0 = run forever
 *     vmm,heartbeat-ms= <u64>  minimum time between heartbeat lines
 *     vmm,free-start  = <u64>  first gpa not used by firmware, page tables,
 *                              device tree or stacks: the working set starts
 *                              here (page aligned); the VMM writes
 *                              nothing at or above it except the fill below
 *     vmm,fill        = "zero" | "random"  what the working set holds at boot:
 *                              all zero, or every 8-byte word at gpa g equal
 *                              to vmm_fill_word(g) (the VMM writes it before
 *                              any vCPU runs)
 *     vmm,order       = "seq" | "random"   the order pages are visited in a
 *                              pass (random: a new permutation every pass)
 *     vmm,latency     = <u32>  non-zero: print one write-latency line a pass
 *   Required: abi-version and workload always; working-set and free-start
 *   for dirty; /cpus vmm,tsc-khz non-zero. The rest default to 0 ("zero",
 *   "seq").
 */
#ifndef VMM_ABI_H
#define VMM_ABI_H

#define VMM_ABI_VERSION 3u /* 2: vmm,fill, vmm,order, vmm,latency; 3: virtio_mmio@ nodes, blk, net */

/* ELF note carrying the ABI version. */
#define VMM_NOTE_NAME "vmm"
#define VMM_NOTE_TYPE_ABI 0x564d4d01u

/* I/O ports. */
#define VMM_COM1_PORT 0x3f8u
#define VMM_EXIT_PORT 0x501u

#define VMM_PAGE_SIZE 4096u
#define VMM_VCPU_STACK_SIZE (64u * 1024u)

/* Where the firmware is linked: 1 MiB, above the VMM's boot structures. */
#define VMM_FIRMWARE_BASE 0x100000u

/*
 * Guest exit statuses used by the firmware (the host passes any other value
 * through unchanged).
 */
#define VMM_GUEST_EXIT_OK 0u
#define VMM_GUEST_EXIT_CORRUPTION 3u /* dirty workload found a stale page */
#define VMM_GUEST_EXIT_BAD_PARAMS 4u /* device tree missing/invalid */
#define VMM_GUEST_EXIT_VCPU_MISSING 5u /* a secondary vCPU never came online */
#define VMM_GUEST_EXIT_EXCEPTION 6u /* a CPU exception (the firmware printed which) */
#define VMM_GUEST_EXIT_DEVICE 7u /* a virtio device failed a request, timed out or misbehaved */

/*
 * Layout of the header the `dirty` workload writes at the start of every
 * working-set page; the last 8 bytes of the page repeat `check`, so a page
 * copied in part is caught too.
 */
#define VMM_DIRTY_MAGIC 0x5644495254590000ull /* "VDIRTY\0\0" */

/* Keys the fill generator so its words do not look like any other splitmix64 use. */
#define VMM_FILL_KEY 0x766d6d2d66696c6cull /* "vmm-fill" */

#ifndef __ASSEMBLER__ /* note.S includes this header for the constants */
/*
 * The word `vmm,fill = "random"` puts at guest-physical address `gpa` (a
 * multiple of 8): splitmix64's finaliser of the keyed address. Defined here
 * once so the VMM (which writes it) and the firmware (which checks it in
 * pass 1) compute the same bits. Integer only: the firmware has no SSE.
 */
static inline unsigned long long vmm_fill_word(unsigned long long gpa)
{
	unsigned long long z = (gpa ^ VMM_FILL_KEY) + 0x9E3779B97F4A7C15ull;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}
#endif

#endif /* VMM_ABI_H */
