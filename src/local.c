/*
 * local.c: local sizes.  What one device holds of a tensor or of an
 * operator's loops under a sharding spec: how many parts a set of mesh
 * axes makes, which part a device's coordinate is, the piece it gets, the
 * axes over which an input's gradient is a partial sum; and a spec's
 * written form.
 */
#include "internal.h"

#include <stdio.h>

int
sl_axes_parts(const sl_mesh *m, uint8_t axes)
{
	int p = 1;

	for (int a = 0; a < m->n_axes; a++)
		if (axes & (1u << a))
			p *= m->axes[a].size;
	return p;
}

/* Index of a device within the group that splits over axes (axis 0 outer). */
int
sl_axes_index(const sl_mesh *m, uint8_t axes, const int *coord)
{
	int idx = 0;

	if (coord == NULL)
		return 0;
	for (int a = 0; a < m->n_axes; a++)
		if (axes & (1u << a))
			idx = idx * m->axes[a].size + coord[a];
	return idx;
}

/* Piece i of n split into parts, lower indices taking the remainder. */
int64_t
sl_piece(int64_t n, int parts, int i)
{
	return n / parts + (i < n % parts ? 1 : 0);
}

void
sl_local_loop(const sl_space *sp, int opi, int si, const int *coord,
    int64_t *loc)
{
	const sl_binding *b = sp->ops[opi].bind;
	const sl_strategy *st = &sp->ops[opi].strat[si];

	for (int l = 0; l < b->n_loop; l++)
		loc[l] = st->loop_axes[l] ? sl_piece(b->size[l],
		    sl_axes_parts(&sp->mesh, st->loop_axes[l]),
		    sl_axes_index(&sp->mesh, st->loop_axes[l], coord)) : b->size[l];
}

int64_t
sl_local_dim(const sl_mesh *m, const sl_spec *sp, int d, int64_t size,
    const int *coord)
{
	uint8_t axes = sp->split[d];

	if (axes == 0)
		return size;
	return sl_piece(size, sl_axes_parts(m, axes), sl_axes_index(m, axes, coord));
}

int64_t
sl_local_elems(const sl_mesh *m, const sl_spec *sp, const sl_tensor *t,
    const int *coord)
{
	int64_t n = 1;

	for (int d = 0; d < t->rank; d++)
		n = sl_mul_sat(n, sl_local_dim(m, sp, d, t->dims[d], coord));
	return n;
}

const char *
sl_spec_format(const sl_spec *s, int rank, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
#define PUT(...) do { if (o < len) o += snprintf(buf + o, len - o, __VA_ARGS__); } while (0)
	for (int d = 0; d < rank; d++) {
		PUT("%s", d ? "," : "");
		if (s->split[d] == 0)
			PUT("R");
		else {
			PUT("S");
			for (int a = 0; a < SL_MAX_AXES; a++)
				if (s->split[d] & (1u << a))
					PUT("%d", a);
		}
	}
	if (rank == 0)
		PUT("R");
	if (s->partial) {
		PUT("|P");
		for (int a = 0; a < SL_MAX_AXES; a++)
			if (s->partial & (1u << a))
				PUT("%d", a);
	}
	if (s->zero) {
		PUT("|Z");
		for (int a = 0; a < SL_MAX_AXES; a++)
			if (s->zero & (1u << a))
				PUT("%d", a);
	}
#undef PUT
	return buf;
}

/*
 * Axes over which the gradient of input slot is a partial sum: those that
 * split a loop dimension the input lacks but the output has (dX = dY . W
 * sums over them).  A loop dimension in neither (a row-parallel matmul's
 * contraction, seen from its bias) leaves the gradient complete.
 */
uint8_t
sl_grad_axes(const sl_binding *b, const sl_strategy *st, int slot, int out_slot)
{
	bool has[SL_MAX_LOOP] = { false }, out[SL_MAX_LOOP] = { false };
	uint8_t axes = 0;

	for (int d = 0; d < SL_MAX_RANK; d++) {
		if (b->map[slot][d] >= 0)
			has[b->map[slot][d]] = true;
		if (b->map[out_slot][d] >= 0)
			out[b->map[out_slot][d]] = true;
	}
	for (int l = 0; l < b->n_loop; l++)
		if (!has[l] && out[l])
			axes |= st->loop_axes[l];
	return axes;
}

/* Placement of a tensor of spec sp along mesh axis a: -2 a partial sum, -1
 * replicated, else the dimension split over it. */
int
sl_placement(const sl_spec *sp, int rank, int a)
{
	if (sp->partial & (1u << a))
		return -2;
	for (int d = 0; d < rank; d++)
		if (sp->split[d] & (1u << a))
			return d;
	return -1;
}
