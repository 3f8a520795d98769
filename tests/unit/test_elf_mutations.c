/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_elf_mutations.c - the ELF loader on images cut at every length and
 * changed at every byte: it refuses or loads, never crashes, and leaves no
 * guest memory dirty on a refusal; a tiny or missing error buffer is fine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "elf_image.h"

/* Truncation at every length is refused; no single-byte change crashes. */
static void fuzz_image(const struct img *orig)
{
	unsigned char *cut;

	for (size_t len = 0; len < orig->size; len++) {
		/* An exact-size heap copy, so ASan catches any read past the end. */
		cut = malloc(len ? len : 1);
		assert_non_null(cut);
		memcpy(cut, orig->b, len);
		int ret = elf_load(cut, len, &mem, &out, err, sizeof(err));
		if (ret == 0)
			fail_msg("image truncated to %zu of %zu bytes was accepted", len,
				 orig->size);
		assert_true(ret == -EINVAL || ret == -ENOEXEC);
		assert_non_null(strchr(err, '\0'));
		assert_true(err[0] != '\0');
		assert_dirty_clear();
		free(cut);
	}
	for (size_t off = 0; off < orig->size; off++) {
		for (int mode = 0; mode < 3; mode++) {
			unsigned char *b = malloc(orig->size);

			assert_non_null(b);
			memcpy(b, orig->b, orig->size);
			b[off] = mode == 0 ? b[off] ^ 0xff : mode == 1 ? 0xff : 0x00;
			int ret = elf_load(b, orig->size, &mem, &out, err, sizeof(err));
			if (ret != 0) {
				assert_true(ret == -EINVAL || ret == -ENOEXEC);
				assert_true(err[0] != '\0');
				assert_dirty_clear();
			} else {
				take_dirty(NULL);
			}
			free(b);
		}
	}
}

static void test_fuzz_vmm(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	fuzz_image(&im);
}

static void test_fuzz_pvh32(void **state)
{
	struct img im;

	(void)state;
	build_pvh32(&im, PVH_ENTRY);
	fuzz_image(&im);
}

static void test_small_errlen(void **state)
{
	struct img im;
	char tiny[8];

	(void)state;
	build_vmm(&im);
	im.b[0] = 0;
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, tiny, sizeof(tiny)), -ENOEXEC);
	assert_int_equal(strlen(tiny), 7);
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, NULL, 0), -ENOEXEC);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_fuzz_vmm),
	    T(test_fuzz_pvh32),
	    T(test_small_errlen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
