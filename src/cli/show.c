/*
 * show.c: `shardlab show`, the operators, tensors and parameter count of a
 * model (or the size of an IOPDDL problem).
 */
#include "cli.h"

#include <unistd.h>

static void
shape_str(const sl_tensor *t, char *buf, size_t len)
{
	size_t o = snprintf(buf, len, "[");
	for (int i = 0; i < t->rank && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%lld", i ? "," : "", (long long)t->dims[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

static int
cmd_show(int argc, char **argv)
{
	cli_opts o;
	sl_graph *g;
	sl_error err;
	sl_model_opts mo;
	char b1[32];

	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	if (o.n_args != 1) {
		cli_opts_free(&o);
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0, _("usage: shardlab show MODEL"));
		return cli_report(&err);
	}
	if (access(o.args[0], R_OK) == 0 && sl_iopddl_is_problem(o.args[0])) {
		sl_problem *p = sl_iopddl_load(o.args[0], &err);
		int64_t ks = 0;
		if (p == NULL) {
			cli_opts_free(&o);
			return cli_report(&err);
		}
		for (int v = 0; v < p->n; v++)
			ks += p->k[v];
		printf(_("IOPDDL problem %s: %d nodes, %d edges, %.2f strategies per node on average, usage limit %lld\n"),
		    sl_esc(p->name ? p->name : "?"), p->n, p->m, p->n ? (double)ks / p->n : 0.0,
		    (long long)p->usage_limit);
		sl_problem_free(p);
		cli_opts_free(&o);
		return SL_OK;
	}
	memset(&mo, 0, sizeof mo);
	mo.micro_batch = o.micro_batch;
	mo.devices = o.shape[0] * (o.n_axes > 1 ? o.shape[1] : 1);
	mo.seq = o.seq;
	g = sl_model_open(o.args[0], &mo, &err);
	if (g == NULL) {
		cli_opts_free(&o);
		return cli_report(&err);
	}
	{
		char mn[256];
		printf(_("model %s, from %s\n"), cli_model_str(g, mn, sizeof mn),
		    sl_esc(g->source));
	}
	{
		int per = 0;
		for (int c = SL_CAT_PARAMS; c <= SL_CAT_OPTIM; c++)
			per += sl_recipe_state_bytes(&o.recipe, c);
		printf(_("parameters: %lld (%.3f B), %s of training state at %d bytes each (%s)\n"),
		    (long long)sl_graph_param_count(g), (double)sl_graph_param_count(g) / 1e9,
		    cli_bytes(sl_mul_sat(per, sl_graph_param_count(g)), b1), per,
		    sl_precision_name(o.recipe.precision));
	}
	{
		/* a mixture's experts: what a token reads, with and without the
		 * input embedding (publishers count it either way) */
		int64_t emb, act = sl_graph_active_params(g, &emb);
		if (act != sl_graph_param_count(g))
			printf(_("active per token: %lld (%.3f B; %.3f B without the "
			    "input embedding table)\n"), (long long)act,
			    (double)act / 1e9, (double)(act - emb) / 1e9);
	}
	printf(_("operators: %d, tensors: %d, layers: %d\n\n"), g->n_ops, g->n_tensors,
	    g->n_layers);
	cli_fprintf(stdout, "%-24s %-14s %-10s %s\n", _("operator"), _("kind"), _("layer"),
	    _("inputs -> outputs"));
	for (int v = 0; v < g->n_ops; v++) {
		const sl_op *op = &g->ops[v];
		printf("%-24s %-14s %-10s ", sl_esc(op->name), sl_op_kind_name(op->kind),
		    op->layer >= 0 ? sl_esc(g->layers[op->layer].name) : "-");
		for (int i = 0; i < op->n_in; i++)
			printf("%s%s", i ? ", " : "", sl_esc(g->tensors[op->in[i]].name));
		printf(" -> ");
		for (int i = 0; i < op->n_out; i++)
			printf("%s%s", i ? ", " : "", sl_esc(g->tensors[op->out[i]].name));
		printf("\n");
	}
	cli_fprintf(stdout, "\n%-28s %-22s %-6s %s\n", _("tensor"), _("shape"), _("dtype"), _("role"));
	for (int t = 0; t < g->n_tensors; t++) {
		char sh[96];
		shape_str(&g->tensors[t], sh, sizeof sh);
		printf("%-28s %-22s %-6s %s\n", sl_esc(g->tensors[t].name), sh,
		    sl_dtype_name(g->tensors[t].dtype), sl_role_name(g->tensors[t].role));
	}
	sl_graph_free(g);
	cli_opts_free(&o);
	return SL_OK;
}

const struct cli_cmd cli_cmd_show = {
	.name = "show",
	.bit = CLI_C_SHOW,
	.usage = N_("show MODEL"),
	.help = N_("operators, tensors and parameter count of a model"),
	.run = cmd_show,
};
