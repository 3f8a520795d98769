/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_cpu.c - `vmm cpu-features`: the CPU features of a fleet of hosts.
 *
 *   --host [--json]           what this host's KVM can give a guest
 *   --common FILE... [--json] the features every host's --host --json
 *                             file names: a [vm] cpu_features that every
 *                             one of them can give, so a VM started with
 *                             it can move between any two
 *   --list                    every feature and baseline name vmm knows
 *
 * A migration to a host that lacks a feature the VM was started with is
 * refused before any page (vm.c names the missing ones); this is how an
 * operator picks a set that no host of the fleet will refuse.
 *
 * Exit status: 0 done, 1 a host or file could not be read, 2 a bad
 * command line.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "config.h"
#include "cpu_features.h"
#include "vm.h"

/* The --json document's version: a reader refuses another. */
#define CPU_JSON_FORMAT 1
/* A host file is a few KiB; anything near this is not one. */
#define CPU_JSON_MAX (256 * 1024)

static void usage(FILE *f)
{
	fputs("usage: vmm cpu-features --host [--json]\n"
	      "       vmm cpu-features --common HOST.json... [--json]\n"
	      "       vmm cpu-features --list\n"
	      "\n"
	      "The CPU features of a fleet: --host prints what this host's KVM can give a\n"
	      "guest; --common prints what every host of the --host --json files can give,\n"
	      "as a [vm] cpu_features that none of them refuses. Baselines (the x86-64\n"
	      "psABI levels x86-64, x86-64-v2, -v3, -v4) and 'host' are accepted there too.\n"
	      "\n"
	      "  --host      this host (needs /dev/kvm)\n"
	      "  --common    the intersection of the hosts' files\n"
	      "  --list      every feature and baseline name this vmm knows\n"
	      "  --json      print JSON (the form --common reads)\n",
	      f);
}

/* A set and where it came from. vendor: "intel", "amd", "host" (neither), or "mixed". */
struct host_set {
	struct cpu_features f;
	char vendor[16];
};

static void print_set(const struct host_set *h, bool json)
{
	char list[CONFIG_CPU_FEATURES_MAX];
	cJSON *j, *arr, *bl;
	char *text;

	if (cpu_features_format(&h->f, list, sizeof(list)))
		list[0] = '\0'; /* cannot happen: the whole table fits the key (a unit test) */
	if (!json) {
		printf("vendor     %s\n", h->vendor);
		printf("baselines  ");
		for (unsigned b = 0, n = 0; b < cpu_features_baseline_count(); b++) {
			struct cpu_features base;

			cpu_features_baseline(b, &base);
			if (cpu_features_subset(&base, &h->f))
				printf("%s%s", n++ ? ", " : "", cpu_features_baseline_name(b));
		}
		printf("\nfeatures   %s\n", list);
		return;
	}
	j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "format", CPU_JSON_FORMAT);
	cJSON_AddStringToObject(j, "vendor", h->vendor);
	bl = cJSON_AddArrayToObject(j, "baselines");
	for (unsigned b = 0; b < cpu_features_baseline_count(); b++) {
		struct cpu_features base;

		cpu_features_baseline(b, &base);
		if (cpu_features_subset(&base, &h->f))
			cJSON_AddItemToArray(bl, cJSON_CreateString(cpu_features_baseline_name(b)));
	}
	arr = cJSON_AddArrayToObject(j, "features");
	for (unsigned i = 0; i < cpu_features_count(); i++)
		if (cpu_features_has(&h->f, i))
			cJSON_AddItemToArray(arr, cJSON_CreateString(cpu_features_name(i)));
	text = cJSON_Print(j);
	if (text)
		puts(text);
	free(text);
	cJSON_Delete(j);
}

static char *slurp(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	buf = malloc(CPU_JSON_MAX + 1);
	n = buf ? fread(buf, 1, CPU_JSON_MAX + 1, f) : 0;
	fclose(f);
	if (!buf) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	if (n > CPU_JSON_MAX) {
		snprintf(err, errlen, "%s: larger than %d bytes: not a host's CPU features", path,
			 CPU_JSON_MAX);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	if (strlen(buf) != n) {
		snprintf(err, errlen, "%s: holds a NUL byte: not a host's CPU features", path);
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * One --host --json file into *h. Names this vmm does not know (a newer
 * vmm wrote the file) are left out and counted in *unknown: a set this vmm
 * cannot name is not one it can give a guest either.
 */
static int read_host(const char *path, struct host_set *h, unsigned *unknown, char *err,
		     size_t errlen)
{
	char *text = slurp(path, err, errlen);
	const cJSON *fmt, *vendor, *feat, *it;
	cJSON *j;
	int ret = -EINVAL;

	if (!text)
		return -EIO;
	memset(h, 0, sizeof(*h));
	j = cJSON_Parse(text);
	free(text);
	fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
	vendor = cJSON_GetObjectItemCaseSensitive(j, "vendor");
	feat = cJSON_GetObjectItemCaseSensitive(j, "features");
	if (!j || !cJSON_IsObject(j))
		snprintf(err, errlen,
			 "%s: not JSON (write it with 'vmm cpu-features --host --json')", path);
	else if (!cJSON_IsNumber(fmt) || fmt->valuedouble != CPU_JSON_FORMAT)
		snprintf(err, errlen, "%s: \"format\" is not %d", path, CPU_JSON_FORMAT);
	else if (!cJSON_IsString(vendor) || strlen(vendor->valuestring) >= sizeof(h->vendor))
		snprintf(err, errlen, "%s: \"vendor\" is not a vendor name", path);
	else if (!cJSON_IsArray(feat))
		snprintf(err, errlen, "%s: \"features\" is not an array of names", path);
	else
		ret = 0;
	if (!ret)
		snprintf(h->vendor, sizeof(h->vendor), "%s", vendor->valuestring);
	if (ret)
		feat = NULL;
	cJSON_ArrayForEach(it, feat)
	{
		if (!cJSON_IsString(it)) {
			snprintf(err, errlen, "%s: \"features\" holds a value that is not a name",
				 path);
			ret = -EINVAL;
			break;
		}
		if (cpu_features_add_name(&h->f, it->valuestring))
			(*unknown)++;
	}
	cJSON_Delete(j);
	return ret;
}

static int common(int n, char **paths, bool json)
{
	struct host_set all, h;
	unsigned unknown = 0;
	char err[512];

	for (int i = 0; i < n; i++) {
		if (read_host(paths[i], &h, &unknown, err, sizeof(err))) {
			fprintf(stderr, "vmm cpu-features: %s\n", err);
			return 1;
		}
		if (i == 0) {
			all = h;
			continue;
		}
		cpu_features_intersect(&all.f, &h.f);
		if (strcmp(all.vendor, h.vendor))
			snprintf(all.vendor, sizeof(all.vendor), "mixed");
	}
	if (unknown)
		fprintf(
		    stderr,
		    "vmm cpu-features: left out %u name(s) this vmm does not know (written by a "
		    "newer vmm?): no guest of this vmm can be given them\n",
		    unknown);
	if (!strcmp(all.vendor, "mixed"))
		fprintf(stderr,
			"vmm cpu-features: the hosts' CPU vendors differ: pin [vm] cpu_vendor "
			"too, or keep each VM on hosts of its own vendor\n");
	print_set(&all, json);
	return 0;
}

static int host(bool json)
{
	struct host_set h;
	enum cpu_vendor v;
	char err[256];

	if (vm_host_cpu(&h.f, &v, err, sizeof(err))) {
		fprintf(stderr, "vmm cpu-features: %s\n", err);
		return 1;
	}
	snprintf(h.vendor, sizeof(h.vendor), "%s", cpu_vendor_name(v));
	print_set(&h, json);
	return 0;
}

static int list(void)
{
	printf("baselines:");
	for (unsigned b = 0; b < cpu_features_baseline_count(); b++)
		printf(" %s", cpu_features_baseline_name(b));
	printf(" host\nfeatures:");
	for (unsigned i = 0; i < cpu_features_count(); i++)
		printf(" %s", cpu_features_name(i));
	printf("\n");
	return 0;
}

int cli_cpu_features(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"host", no_argument, NULL, 'H'}, {"common", no_argument, NULL, 'c'},
	    {"list", no_argument, NULL, 'l'}, {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	int c, what = 0;
	bool json = false;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'H':
		case 'c':
		case 'l':
			if (what && what != c) {
				fprintf(stderr, "vmm cpu-features: --host, --common and --list are "
						"each alone\n");
				return EXIT_USAGE;
			}
			what = c;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (what == 'c' && optind < argc)
		return common(argc - optind, argv + optind, json);
	if (optind < argc) {
		fprintf(stderr, "vmm cpu-features: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (what == 'H')
		return host(json);
	if (what == 'l')
		return list();
	if (what == 'c')
		fprintf(stderr, "vmm cpu-features: --common needs one or more files "
				"(from 'vmm cpu-features --host --json')\n");
	else
		usage(stderr);
	return EXIT_USAGE;
}
