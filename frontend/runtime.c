/* SPDX-License-Identifier: Apache-2.0 */
/* The process runtime of `vmm run`: one VM, its migrations, one policy. */
#include "runtime.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vm.h"

bool runtime_incoming_status(struct runtime *rt, struct incoming_status *st)
{
	if (rt->vm || rt->mig)
		return false;
	if (rt->in_ended) {
		*st = rt->in_final;
		return true;
	}
	if (!rt->in)
		return false;
	migration_incoming_status(rt->in, st);
	return true;
}

void runtime_progress(struct runtime *rt, struct migration_progress *out)
{
	struct incoming_status st;

	memset(out, 0, sizeof(*out));
	out->state = MIGRATION_NONE;
	if (rt->mig) {
		migration_get_progress(rt->mig, out);
	} else if (rt->in && rt->vm) { /* not while the receive thread has it (rt->vm NULL) */
		migration_incoming_progress(rt->in, out);
	} else if (runtime_incoming_status(rt, &st) && st.phase == INCOMING_FAILED) {
		/* A failed target: never "none" with no reason, until it exits. */
		out->state = st.cancelled ? MIGRATION_CANCELLED : MIGRATION_FAILED;
		snprintf(out->error, sizeof(out->error), "%s", st.error);
	}
}

bool runtime_migration_active(const struct migration_progress *p)
{
	return p->state == MIGRATION_SETUP || p->state == MIGRATION_PRECOPY ||
	       p->state == MIGRATION_SWITCHOVER || migration_state_needs_source(p->state);
}

const char *runtime_refusal(struct runtime *rt, const char *what, bool strict, char *buf,
			    size_t len)
{
	struct migration_progress p;

	runtime_progress(rt, &p);
	if (runtime_waits_restore(rt)) {
		snprintf(buf, len,
			 "cannot %s: no VM here yet (this process waits for PUT "
			 "/api/v1/vm/restore)",
			 what);
		return buf;
	}
	if (!rt->vm && (p.state == MIGRATION_FAILED || p.state == MIGRATION_CANCELLED)) {
		snprintf(buf, len,
			 "cannot %s: this target's incoming migration %s (%s): it has no VM and "
			 "exits",
			 what, p.state == MIGRATION_FAILED ? "failed" : "was cancelled", p.error);
		return buf;
	}
	if (!rt->vm) {
		snprintf(buf, len,
			 "cannot %s: this target has no VM yet (it waits for or receives an "
			 "incoming migration; PUT /api/v1/vm/migrate/cancel ends it)",
			 what);
		return buf;
	}
	if (strict && vm_stopping(rt->vm)) {
		snprintf(buf, len, "cannot %s: the VM is stopping", what);
		return buf;
	}
	if (rt->mig && p.state == MIGRATION_SWITCHOVER_UNKNOWN) {
		snprintf(buf, len,
			 "cannot %s: the switchover's outcome is unknown (the VM may run on the "
			 "target): settle it with vmm migrate --recover",
			 what);
		return buf;
	}
	/* Only an outgoing migration's source holds pages that nobody else has. */
	if (rt->mig && migration_state_needs_source(p.state)) {
		snprintf(buf, len,
			 "cannot %s: the migration is in postcopy (%s): the VM runs on the target, "
			 "which still needs memory that only this process has; finish with "
			 "vmm migrate --resume if paused, or kill -9 to abandon it",
			 what, migration_state_name(p.state));
		return buf;
	}
	if (strict && runtime_snapshot_active(rt)) {
		snprintf(buf, len, "cannot %s: a snapshot is being taken", what);
		return buf;
	}
	if (strict && runtime_migration_active(&p)) {
		snprintf(buf, len, "cannot %s: a migration is running (%s)", what,
			 migration_state_name(p.state));
		return buf;
	}
	return NULL;
}

/*
 * A lazy restore still filling RAM: its missing pages read as not
 * resident, which a migration's first pass and a snapshot take for pages
 * never written. Neither may start before every page is in.
 */
static int lazy_busy(struct runtime *rt, const char *what, char *err, size_t errlen)
{
	struct snapshot_lazy_progress p;

	if (!rt->lazy)
		return 0;
	snapshot_lazy_get(rt->lazy, &p);
	if (p.done)
		return 0;
	snprintf(err, errlen,
		 "cannot %s yet: the lazy restore is still bringing pages in (%llu of %llu)", what,
		 (unsigned long long)p.pages_in, (unsigned long long)p.pages_total);
	return -EBUSY;
}

int runtime_migrate(struct runtime *rt, const struct migration_params *p, char *err, size_t errlen)
{
	int ret = lazy_busy(rt, "start a migration", err, errlen);

	if (ret)
		return ret;
	/* The migration takes the dirty log over: no diff layer after it. */
	snapshot_untrack(rt->snap);
	if (rt->mig) {
		if (!migration_finished(rt->mig)) {
			snprintf(err, errlen, "a migration is already running");
			return -EBUSY;
		}
		migration_free(rt->mig);
		rt->mig = NULL;
		rt->migration_reported = false;
	}
	struct config_layer desc = frontend_config_layer(&rt->fe);
	struct migration_host host = frontend_migration_host(&rt->fe, &desc);

	ret = migration_start(rt->vm, p, &host, &rt->hooks, &rt->mig, err, errlen);
	if (!ret)
		rt->migrations++;
	return ret;
}

int runtime_incoming_stop(struct runtime *rt, int status, const char *why, char *err, size_t errlen)
{
	char e[256];
	int ret;

	if (!rt->vm && rt->in_ended) {
		if (err)
			snprintf(err, errlen, "the incoming migration has already ended");
		return -EALREADY;
	}
	if (!rt->in || rt->vm) {
		if (err)
			snprintf(err, errlen, "no incoming migration is waiting or receiving");
		return -ENOENT;
	}
	ret = migration_incoming_cancel(rt->in, why, e, sizeof(e));
	if (ret && err)
		snprintf(err, errlen, "%s", e);
	if (!ret) {
		rt->stop_asked = true;
		rt->stop_status = status;
	}
	return ret;
}

bool runtime_snapshot_active(struct runtime *rt)
{
	struct snapshot_progress p;

	if (!rt->snap)
		return false;
	snapshot_get_progress(rt->snap, &p);
	return p.state == SNAPSHOT_ACTIVE;
}

int runtime_snapshot(struct runtime *rt, const struct snapshot_params *p, char *err, size_t errlen)
{
	struct snapshot *next;
	int ret = lazy_busy(rt, "take a snapshot", err, errlen);

	if (ret)
		return ret;
	if (runtime_snapshot_active(rt)) {
		snprintf(err, errlen, "a snapshot is already being taken");
		return -EBUSY;
	}
	/* The snapshot's config carries [console] output and [api] socket, as it always did. */
	struct config_layer desc = frontend_config_layer(&rt->fe);
	struct snapshot_params q = *p;

	q.desc_host = &desc;
	/* The last one stays (GET /snapshot shows it) unless this one starts. */
	ret = snapshot_start(rt->vm, &q, rt->snap, &next, err, errlen);
	if (ret)
		return ret;
	snapshot_free(rt->snap);
	rt->snap = next;
	rt->snapshots++;
	return 0;
}

void runtime_release_migrations(struct runtime *rt)
{
	/* Their threads use the VM: joined before the VM goes (after its vCPUs: vm_join). */
	snapshot_lazy_free(rt->lazy);
	rt->lazy = NULL;
	snapshot_free(rt->snap);
	rt->snap = NULL;
	migration_free(rt->mig);
	rt->mig = NULL;
	migration_incoming_free(rt->in);
	rt->in = NULL;
}
