/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_faults.h - the engine's faults that VMM_TEST_FAULT can name.
 *
 * The hook mechanism is util's (test_hooks.h: reading the variable,
 * comparing a name); the faults are the engine's, so they live here,
 * beside its steps (test_steps.h), and util names none of them. The
 * machine's one fault, "forbidden-syscall-vcpu", is the vCPU thread's
 * (vmm/machine/cpu/vcpu.c). Each is checked once, where it strikes:
 *   if (test_fault_on(&m->hooks, TEST_FAULT_CUT_AFTER_COMMIT)) ...
 */
#ifndef VMM_MIGRATION_TEST_FAULTS_H
#define VMM_MIGRATION_TEST_FAULTS_H

#include <stdbool.h>

#include "test_hooks.h"

/* The quoted name is what VMM_TEST_FAULT takes (test_fault_name()). */
enum test_fault {
	TEST_FAULT_NONE,
	TEST_FAULT_KILL_DURING_PRECOPY, /* "kill-during-precopy": target: SIGKILL after 8 PAGES
					   records on data 0 */
	TEST_FAULT_KILL_BEFORE_ACK,	/* "kill-before-ack": target: SIGKILL instead of PREPARED */
	TEST_FAULT_CUT_POSTCOPY,	/* "cut-postcopy": source: abort every connection after
					   2048 pushed pages */
	TEST_FAULT_CUT_BEFORE_COMMIT,	/* "cut-before-commit": source: main breaks between
					   PREPARED and COMMIT */
	TEST_FAULT_CUT_AFTER_COMMIT,	/* "cut-after-commit": source: main breaks right after
					   COMMIT went out */
	/* "forbidden-syscall-migration": the source's migration thread calls execve() */
	TEST_FAULT_FORBIDDEN_SYSCALL_MIGRATION,
	/* "desc-tsc-1khz": source: the VM description asks for a 1 kHz guest TSC */
	TEST_FAULT_DESC_TSC_1KHZ,
	/* "uffd-syscall-eperm": target: the userfaultfd syscall "fails" with EPERM */
	TEST_FAULT_UFFD_SYSCALL_EPERM,
	/* "uffd-unavailable": target: the syscall and /dev/userfaultfd both "fail" */
	TEST_FAULT_UFFD_UNAVAILABLE,
	TEST_FAULT_COUNT,
};

/* "kill-during-precopy", ...; NULL for TEST_FAULT_NONE or out of range. */
static inline const char *test_fault_name(enum test_fault f)
{
	static const char *const names[TEST_FAULT_COUNT] = {
	    [TEST_FAULT_KILL_DURING_PRECOPY] = "kill-during-precopy",
	    [TEST_FAULT_KILL_BEFORE_ACK] = "kill-before-ack",
	    [TEST_FAULT_CUT_POSTCOPY] = "cut-postcopy",
	    [TEST_FAULT_CUT_BEFORE_COMMIT] = "cut-before-commit",
	    [TEST_FAULT_CUT_AFTER_COMMIT] = "cut-after-commit",
	    [TEST_FAULT_FORBIDDEN_SYSCALL_MIGRATION] = "forbidden-syscall-migration",
	    [TEST_FAULT_DESC_TSC_1KHZ] = "desc-tsc-1khz",
	    [TEST_FAULT_UFFD_SYSCALL_EPERM] = "uffd-syscall-eperm",
	    [TEST_FAULT_UFFD_UNAVAILABLE] = "uffd-unavailable",
	};

	return f > TEST_FAULT_NONE && f < TEST_FAULT_COUNT ? names[f] : NULL;
}

/* True when VMM_TEST_FAULT named f (never for TEST_FAULT_NONE). */
static inline bool test_fault_on(const struct test_hooks *h, enum test_fault f)
{
	const char *name = test_fault_name(f);

	return name && test_hook_fault_is(h, name);
}

#endif /* VMM_MIGRATION_TEST_FAULTS_H */
