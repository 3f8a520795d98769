/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Preallocating guest RAM ([vm] prealloc): every page of the mapping is
 * made resident before the guest runs or, on a migration target, before it
 * accepts a source. Two reasons, the same as QEMU's -mem-prealloc: a host
 * that is short of memory says so at once instead of the OOM killer ending
 * the VM (or a migration, half-way) later; and a migration target whose
 * RAM is resident receives pages at the speed of a copy into touched
 * memory, without a page fault, an allocation and a zeroing for each one.
 *
 * The pages are made resident with MADV_POPULATE_WRITE (Linux 5.14), split
 * across a few threads because the page-fault path runs in parallel under
 * the mmap read lock. Before the RAM is even mapped, its callers check the
 * size against the host's MemAvailable and the cgroup v2 memory limit
 * (guest_mem_room), so that a request that cannot fit is refused with a
 * message rather than met by the OOM killer.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guest_mem.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14, include/uapi/asm-generic/mman-common.h */
#endif

#define POPULATE_MAX_THREADS 8u
#define POPULATE_CHUNK	     (64ull << 20) /* one madvise: a bounded time between checks */

struct populate_job {
	struct guest_mem *mem;
	uint64_t next; /* offset of the next chunk, taken atomically */
	int error;     /* first -errno, atomically */
};

static void *populate_main(void *arg)
{
	struct populate_job *j = arg;

	for (;;) {
		uint64_t off = __atomic_fetch_add(&j->next, POPULATE_CHUNK, __ATOMIC_RELAXED);
		uint64_t n;

		if (off >= j->mem->size || __atomic_load_n(&j->error, __ATOMIC_RELAXED))
			break;
		n = j->mem->size - off < POPULATE_CHUNK ? j->mem->size - off : POPULATE_CHUNK;
		if (madvise(j->mem->base + off, n, MADV_POPULATE_WRITE) < 0) {
			int zero = 0;

			__atomic_compare_exchange_n(&j->error, &zero, -errno, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
			break;
		}
	}
	return NULL;
}

/* A "Key:  N kB" line of /proc/meminfo in bytes, or 0 when it cannot be read. */
static uint64_t meminfo_bytes(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[160];
	uint64_t v = 0;
	size_t klen = strlen(key);

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;

		if (!strncmp(line, key, klen) && line[klen] == ':' &&
		    sscanf(line + klen + 1, "%llu", &kb) == 1) {
			v = (uint64_t)kb * 1024;
			break;
		}
	}
	fclose(f);
	return v;
}

/* One number from a cgroup v2 file of this process's cgroup; 0 if absent or "max". */
static uint64_t cgroup_value(const char *file)
{
	char path[512], cg[256] = "";
	unsigned long long v = 0;
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (!f)
		return 0;
	/* cgroup v2: the single line "0::/path". */
	if (!fgets(cg, sizeof(cg), f) || strncmp(cg, "0::", 3)) {
		fclose(f);
		return 0;
	}
	fclose(f);
	cg[strcspn(cg, "\n")] = '\0';
	snprintf(path, sizeof(path), "/sys/fs/cgroup%s/%s", cg + 3, file);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

uint64_t guest_mem_host_available(void)
{
	return meminfo_bytes("MemAvailable");
}

int guest_mem_room(uint64_t size, char *err, size_t errlen)
{
	uint64_t avail = guest_mem_host_available();
	uint64_t max = cgroup_value("memory.max"), cur = cgroup_value("memory.current");

	if (avail && size > avail) {
		snprintf(err, errlen,
			 "%" PRIu64 " MiB of guest RAM to preallocate, but the host has %" PRIu64
			 " MiB available (MemAvailable)",
			 size >> 20, avail >> 20);
		return -ENOMEM;
	}
	if (max && (cur >= max || size > max - cur)) {
		snprintf(err, errlen,
			 "%" PRIu64 " MiB of guest RAM to preallocate, but this cgroup may use "
			 "only %" PRIu64 " MiB more (memory.max)",
			 size >> 20, cur >= max ? 0 : (max - cur) >> 20);
		return -ENOMEM;
	}
	return 0;
}

int guest_mem_populate(struct guest_mem *mem, char *err, size_t errlen)
{
	struct populate_job job = {.mem = mem};
	pthread_t threads[POPULATE_MAX_THREADS];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = cpus < 1 ? 1 : (unsigned)cpus, started = 0;

	if (n > POPULATE_MAX_THREADS)
		n = POPULATE_MAX_THREADS;
	if ((uint64_t)n > mem->size / POPULATE_CHUNK + 1)
		n = (unsigned)(mem->size / POPULATE_CHUNK + 1);
	/* This thread is one of the n; a thread that cannot start is not needed. */
	for (unsigned i = 1; i < n; i++)
		if (pthread_create(&threads[started], NULL, populate_main, &job) == 0)
			started++;
	populate_main(&job);
	for (unsigned i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	if (job.error) {
		snprintf(err, errlen, "preallocating %" PRIu64 " MiB of guest RAM: %s%s",
			 mem->size >> 20, strerror(-job.error),
			 job.error == -EINVAL ? " (MADV_POPULATE_WRITE needs Linux 5.14)" : "");
		return job.error;
	}
	return 0;
}
