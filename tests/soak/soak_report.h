/* SPDX-License-Identifier: Apache-2.0 */
/*
 * soak_report.h - the soak's output: one row per hop (printed as it ends,
 * and to a CSV file with --csv), then a summary line with the ranges of
 * the running VMM's fd, thread and RSS counts over all hops and the verdict
 * whether they stayed flat.
 *
 * Flat: within each migration mode, the fd and thread counts of the VMM
 * running the guest after a hop vary by at most their slack (default 0),
 * and its RSS by at most rss_slack_kb. Per mode, because a precopy and a
 * postcopy target may legitimately end with different footprints; a leak
 * shows as a count that creeps up from hop to hop of the same kind.
 */
#ifndef VMM_SOAK_REPORT_H
#define VMM_SOAK_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "soak_node.h"

struct soak_row {
	int hop;
	char from[4], to[4];
	bool postcopy;
	double total_ms, downtime_ms; /* from the summary; -1: none */
	double hop_ms;		      /* the whole hop, target start to counts read */
	bool have_counts;
	struct soak_counts c; /* of the VMM running the guest after the hop */
	bool counts_stable;   /* two reads agreed (see soak_node_counts) */
	long passes;	      /* the guest's last verified pass seen on the new side */
	bool ok;
	char why[512]; /* the first check that failed */
};

struct soak_slack {
	long fds, threads, rss_kb;
};

struct soak_report {
	FILE *csv; /* or NULL */
	struct soak_slack slack;
	int hops, failures;
	bool have[2];			   /* [postcopy]: a row with counts */
	struct soak_counts min[2], max[2]; /* [postcopy] */
	double hop_ms_total;
};

/* The baseline: the booted VM's counts before the first hop. */
void soak_report_start(struct soak_report *r, const struct soak_counts *boot);

/* Prints the row (and a FAIL line with its reason), adds it to the ranges. */
void soak_report_row(struct soak_report *r, const struct soak_row *row);

/* Prints the summary; true when every hop passed and the counts are flat. */
bool soak_report_end(struct soak_report *r, int hops_asked);

#endif /* VMM_SOAK_REPORT_H */
