/*
 * tally.c: the tallies every fold of a step's memory adds into, memory by
 * category (sl_mem) and communication by collective (sl_comm), and the
 * categories' names.  Sums saturate (internal.h), so a tally never wraps.
 */
#include "internal.h"

#include <string.h>

static const char *const cat_names[SL_CAT_COUNT] = {
	N_("parameters"), N_("gradients"), N_("optimizer"), N_("activations"),
	N_("buffers")
};

const char *
sl_mem_cat_name(int cat)
{
	if (cat < 0 || cat >= SL_CAT_COUNT)
		return "?";
	return cat_names[cat];
}

int
sl_mem_cat_from_name(const char *s)
{
	for (int c = 0; c < SL_CAT_COUNT; c++)
		if (strcmp(s, cat_names[c]) == 0)
			return c;
	return -1;
}

/* The field of category cat (NULL for none). */
static int64_t *
mem_field(sl_mem *m, int cat)
{
	switch (cat) {
	case SL_CAT_PARAMS: return &m->params;
	case SL_CAT_GRADS: return &m->grads;
	case SL_CAT_OPTIM: return &m->optim;
	case SL_CAT_ACTS: return &m->acts;
	case SL_CAT_BUFFERS: return &m->buffers;
	}
	return NULL;
}

int64_t
sl_mem_get(const sl_mem *m, int cat)
{
	const int64_t *f = mem_field((sl_mem *)m, cat);

	return f != NULL ? *f : 0;
}

void
sl_mem_add(sl_mem *m, int cat, int64_t bytes)
{
	int64_t *f = mem_field(m, cat);

	if (f != NULL)
		*f = sl_add_sat(*f, bytes);
}

int64_t
sl_mem_total(const sl_mem *m)
{
	int64_t t = 0;

	for (int c = 0; c < SL_CAT_COUNT; c++)
		t = sl_add_sat(t, sl_mem_get(m, c));
	return t;
}

void
sl_comm_add(sl_comm *to, const sl_comm *c)
{
	for (int i = 0; i < SL_COLL_COUNT; i++) {
		to->ns[i] = sl_add_sat(to->ns[i], c->ns[i]);
		to->bytes[i] = sl_add_sat(to->bytes[i], c->bytes[i]);
	}
}

int64_t
sl_comm_total(const sl_comm *c)
{
	int64_t n = 0;

	for (int i = 0; i < SL_COLL_COUNT; i++)
		n = sl_add_sat(n, c->ns[i]);
	return n;
}
