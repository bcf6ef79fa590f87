/*
 * gen.c: `shardlab gen`, a model file for a transformer family from flags
 * or a Hugging Face config.
 */
#include "cli.h"

/*
 * After the options of shardlab gen --help: each family's defaults (the
 * family named, when one is: shardlab gen llama --help).
 */
static void
gen_help(FILE *fp, int argc, char **argv)
{
	const char *family = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
	int fam = family ? sl_family_from_name(family) : -1;

	for (int f = 0; f < SL_FAM_COUNT; f++) {
		sl_gen_config c;
		if (fam >= 0 && f != fam)
			continue;
		sl_gen_family_defaults((sl_family)f, &c);
		fprintf(fp, _("\n%s (defaults of %s): --layers %d --hidden %lld "
		    "--heads %lld --vocab %lld --seq %lld\n"),
		    sl_family_name((sl_family)f), c.name, c.layers,
		    (long long)c.hidden, (long long)c.heads, (long long)c.vocab,
		    (long long)c.seq);
		if (f == SL_FAM_MOE)
			fprintf(fp, _("  key/value heads %lld; feed-forward %lld; "
			    "--experts %lld --topk %lld; every layer a mixture, "
			    "dropless\n"), (long long)c.kv_heads, (long long)c.ffn,
			    (long long)c.experts, (long long)c.topk);
		else
			fprintf(fp, _("  key/value heads: the heads; feed-forward: %s\n"),
			    f == SL_FAM_LLAMA ? _("2/3 x 4 x hidden rounded up to a multiple of 256") :
			    _("4 x hidden"));
	}
	fprintf(fp, _("\nA --hf-config trains at min(max_position_embeddings, %d) unless --seq says.\n"),
	    SL_HF_MAX_SEQ);
}

static int
cmd_gen(int argc, char **argv)
{
	cli_opts o;
	sl_gen_config c;
	sl_graph *g;
	sl_error err;
	int fam, rc;

	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	if (o.n_args != 1 || (fam = sl_family_from_name(o.args[0])) < 0) {
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0,
		    _("usage: shardlab gen gpt|bert|llama|moe [--layers N] [--hidden H] [--heads A] [--kv-heads K] [--ffn F] [--vocab V] [--seq S] [--batch B] [--name NAME] [--hf-config FILE] [-o FILE] (shardlab gen FAMILY --help lists the defaults)"));
		cli_opts_free(&o);
		return cli_report(&err);
	}
	sl_gen_family_defaults(fam, &c);
	if (o.hf_config != NULL) {
		if (sl_gen_from_hf_config(o.hf_config, &c, &err) != SL_OK) {
			cli_opts_free(&o);
			return cli_report(&err);
		}
		if ((int)c.family != fam) {
			sl_error_set(&err, SL_EINPUT, o.hf_config, 0, 0,
			    _("this config describes a %s-family model, not %s: use "
			    "shardlab gen %s --hf-config %s"), sl_family_name(c.family),
			    sl_family_name(fam), sl_family_name(c.family), o.hf_config);
			cli_opts_free(&o);
			return cli_report(&err);
		}
	}
	if (o.layers) c.layers = o.layers;
	if (o.hidden) c.hidden = o.hidden;
	if (o.heads) {
		/* kv_heads follows heads unless given (or read from a config) */
		if (c.kv_heads == c.heads || c.kv_heads <= 0)
			c.kv_heads = o.heads;
		c.heads = o.heads;
	}
	if (o.kv_heads) c.kv_heads = o.kv_heads;
	if (o.ffn) c.ffn = o.ffn;
	if (o.vocab) c.vocab = o.vocab;
	if (o.seq) {
		c.seq = o.seq;
		c.max_positions = 0;
	}
	if (o.batch) c.batch = o.batch;
	/* the generator's other fields, in the order given (options.c) */
	for (int i = 0; i < o.n_gen; i++)
		if (sl_gen_field_set(&c, o.gen[i].field, o.gen[i].value, &err) != SL_OK) {
			cli_opts_free(&o);
			return cli_report(&err);
		}
	if (o.name)
		snprintf(c.name, sizeof c.name, "%s", o.name);
	else if (o.hf_config == NULL)
		snprintf(c.name, sizeof c.name, "%s-%dx%lld", o.args[0], c.layers,
		    (long long)c.hidden);
	g = sl_gen(&c, &err);
	if (g == NULL) {
		/* sizes from a config: the error is about that file */
		if (o.hf_config != NULL && err.file[0] == '\0')
			snprintf(err.file, sizeof err.file, "%s", o.hf_config);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	/* Without --batch the file describes the generator, so its batch
	 * follows --micro-batch and the devices like the bundled models'. */
	if (o.batch)
		rc = sl_model_save_json(g, o.output ? o.output : "-", &err);
	else
		rc = sl_gen_save(&c, o.output ? o.output : "-", &err);
	if (rc != SL_OK) {
		rc = cli_report(&err);
	} else if (!o.quiet) {
		if (c.max_positions > 0)
			fprintf(stderr, _("shardlab: training sequence %lld: the config "
			    "allows %lld positions, capped at %d (--seq to change)\n"),
			    (long long)c.seq, (long long)c.max_positions, SL_HF_MAX_SEQ);
		if (o.output != NULL)
			fprintf(stderr, _("shardlab: wrote %s: %s, %d operators, %.3f B "
			    "parameters, sequence %lld\n"), sl_esc(o.output),
			    sl_esc(c.name), g->n_ops,
			    (double)sl_graph_param_count(g) / 1e9, (long long)c.seq);
	}
	sl_graph_free(g);
	cli_opts_free(&o);
	return rc;
}

const struct cli_cmd cli_cmd_gen = {
	.name = "gen",
	.bit = CLI_C_GEN,
	.usage = N_("gen gpt|bert|llama|moe [FLAGS] [--hf-config FILE] [-o FILE]"),
	.help = N_("write a model file for a transformer family"),
	.run = cmd_gen,
	.more_help = gen_help,
};
